"""When each rank's recorded steps began, on the clock the ranks share: the set's start offsets.

Kineto timestamps are one clock on one machine, so the first ``ProfilerStep#N`` start of each
rank, less the earliest of them, says how much later than the first rank each rank began.  The
offsets go into every rank's metadata as :data:`START_OFFSET_ATTR` (ns), which ``chakra simulate
-O comm=replay`` takes as the ranks' start times.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping

from chakra_core import GlobalMetadata, make_attr, open_binary

__all__ = ["START_OFFSET_ATTR", "first_step_us", "start_offsets_ns", "with_start_offset"]

#: the global-metadata attribute holding a rank's start offset (ns)
START_OFFSET_ATTR = "start_offset_ns"

_STEP = b'"ProfilerStep#'
_TS = re.compile(rb'"ts"\s*:\s*(-?[0-9][0-9.eE+-]*)')
_OVERLAP = 1 << 12


def first_step_us(path: str) -> float | None:
    """The earliest ``ProfilerStep#N`` start (us, the trace's clock) of a Kineto trace, found by a
    byte search of the decompressed file (no parse): the ``ts`` of the event around each
    ``"ProfilerStep#`` name; None when it has no step or cannot be read."""
    best: float | None = None
    tail = b""
    try:
        with open_binary(path) as f:
            while chunk := f.read(1 << 22):
                text = tail + chunk
                for ts in _step_starts(text):
                    best = ts if best is None else min(best, ts)
                tail = text[-_OVERLAP:]
    except (OSError, EOFError, zlib.error):
        return None
    return best


def _step_starts(text: bytes) -> list[float]:
    """The ``ts`` of each event of ``text`` named ``ProfilerStep#N`` (whole events only)."""
    out = []
    hit = text.find(_STEP)
    while hit >= 0:
        lo = text.rfind(b"{", 0, hit)
        ends = [e for e in (text.find(b"{", hit), text.find(b"}", hit)) if e >= 0]
        if lo >= 0 and ends:
            m = _TS.search(text, lo, min(ends))
            if m is not None:
                try:
                    out.append(float(m.group(1)))
                except ValueError:
                    pass
        hit = text.find(_STEP, hit + 1)
    return out


def start_offsets_ns(starts: Mapping[int, float | None]) -> dict[int, int]:
    """Each rank's first step start less the earliest one (ns), when every rank has one and
    there are at least two ranks; else {} (no offsets can be said)."""
    if len(starts) < 2 or any(s is None for s in starts.values()):
        return {}
    first = min(s for s in starts.values() if s is not None)
    return {r: int(round(1000 * (s - first))) for r, s in starts.items() if s is not None}


def with_start_offset(meta: GlobalMetadata, offsets: Mapping[int, int], rank: int) -> GlobalMetadata:
    """``meta`` with rank ``rank``'s start offset (ns) of ``offsets`` as :data:`START_OFFSET_ATTR`,
    when it has one."""
    if rank in offsets:
        meta.attr.append(make_attr(START_OFFSET_ATTR, offsets[rank]))
    return meta
