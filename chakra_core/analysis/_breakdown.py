"""Per-rank time breakdown of spans: compute, exposed communication, exposed memory, idle.

Each part is a length of a union of intervals on the rank, so that the four parts sum exactly
to the rank's finish time: ``compute_ns`` is the time any compute (CPU or accelerator) runs,
``exposed_comm_ns`` the time communication runs and no compute does, ``exposed_mem_ns`` the time
only memory operations run, ``idle_ns`` the rest up to ``finish_ns``.  A recorded idle gap (an
``[idle]`` operation of the PyTorch input) runs nothing: its time is idle (``gap_ns`` says how
much of ``idle_ns`` such gaps cover), not compute.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from chakra_core.analysis._spans import COMPUTE_KINDS, GAP_KIND, IS_COMM, SPAN_KINDS, Spans

__all__ = ["breakdown", "union_ns"]

_MEM = (SPAN_KINDS.index("memory"),)
_NONE = np.iinfo(np.int64).min
#: per kind code (uint8): whether it is compute, memory (communication: IS_COMM)
_IS_COMPUTE, _IS_MEM = (np.isin(np.arange(256), k) for k in (COMPUTE_KINDS, _MEM))
#: per kind code (uint8, :meth:`Spans.activity_kinds`), whether it is in each set whose union a row
#: measures: compute, communication, both, all three, memory, CPU, accelerator, all three or a
#: recorded idle gap
_SETS = np.stack((_IS_COMPUTE, IS_COMM, _IS_COMPUTE | IS_COMM, _IS_COMPUTE | IS_COMM | _IS_MEM, _IS_MEM,
                  np.arange(256) == SPAN_KINDS.index("cpu"), np.arange(256) == SPAN_KINDS.index("compute"),
                  _IS_COMPUTE | IS_COMM | _IS_MEM | (np.arange(256) == GAP_KIND)))


def union_ns(starts: np.ndarray, ends: np.ndarray) -> int:
    """The length (ns) of the union of the intervals ``[starts[i], ends[i])``."""
    if not len(starts):
        return 0
    order = np.argsort(starts, kind="stable")
    return _union_sorted(starts[order], ends[order])


def _union_sorted(s: np.ndarray, e: np.ndarray) -> int:
    """:func:`union_ns` of intervals sorted by start."""
    if not len(s):
        return 0
    reach = np.maximum.accumulate(e)
    gaps = np.maximum(s[1:] - reach[:-1], 0)
    return int(reach[-1] - s[0] - gaps.sum())


#: the keys of a row whose rank ran nothing, all 0
_ROW_KEYS = ("finish_ns", "compute_ns", "exposed_comm_ns", "exposed_mem_ns", "idle_ns", "gap_ns", "comm_ns",
             "mem_ns", "cpu_ns", "accelerator_ns", "overlap_ns", "skew_ns", "ops")


def breakdown(spans: Spans, ranks: Iterable[int] = ()) -> list[dict[str, Any]]:
    """One row per rank of the run (ranks a symmetric span set stands for are expanded), in ns;
    each of ``ranks`` that has no span gets a row of zeros too (a rank without nodes).

    Keys: ``rank``, ``finish_ns``, ``compute_ns``, ``exposed_comm_ns``, ``exposed_mem_ns``,
    ``idle_ns`` (these four sum to ``finish_ns``; a recorded idle gap, an ``[idle]`` operation,
    is idle time), ``gap_ns`` (of ``idle_ns``, the time such gaps cover), ``comm_ns`` (any
    communication in flight),
    ``mem_ns``, ``cpu_ns`` and ``accelerator_ns`` (compute on each), ``overlap_ns`` (compute
    and communication at once), ``skew_ns`` (time in collectives and receives before the last
    member arrived: waiting for slower peers), ``ops`` (spans counted) and ``simulated_as``
    (the rank whose spans give these times).
    """
    ops = spans.ops()
    whole = len(ops) == len(spans)
    rank = spans.rank if whole else spans.rank[ops]
    if (rank[1:] < rank[:-1]).any():
        order = np.argsort(rank, kind="stable")
        ops, rank, whole = ops[order], rank[order], False
    cuts = np.concatenate(([0], (rank[1:] != rank[:-1]).nonzero()[0] + 1, [len(ops)])).tolist()
    wait = _arrival_wait(spans)
    kinds = spans.activity_kinds()
    rows = []
    for lo, hi in zip(cuts[:-1], cuts[1:]) if len(ops) else ():
        r = int(rank[lo])
        row = _rank_row(spans, slice(lo, hi) if whole else ops[lo:hi], wait, kinds)
        for member in spans.stands_for(r):
            rows.append({"rank": member, **row, "simulated_as": r})
    seen = {row["rank"] for row in rows}
    rows += [{"rank": r, **dict.fromkeys(_ROW_KEYS, 0), "simulated_as": r}
             for r in dict.fromkeys(ranks) if r not in seen]
    rows.sort(key=lambda row: row["rank"])
    return rows


def _rank_row(spans: Spans, part: np.ndarray | slice, wait: np.ndarray, kinds: np.ndarray) -> dict[str, Any]:
    """The row of the spans ``part`` (indices or a slice) of one rank (``kinds``: every span's
    :meth:`Spans.activity_kinds`)."""
    start = spans.start_ns[part]
    ops = len(start)
    if (start[1:] < start[:-1]).any():
        index = np.arange(part.start, part.stop) if isinstance(part, slice) else part
        part = index[np.argsort(start, kind="stable")]
        start = spans.start_ns[part]
    end = start + spans.dur_ns[part]
    u_comp, u_comm, u_cc, u_all, u_mem, u_cpu, u_acc, u_gaps = _unions_sorted(start, end, _SETS[:, kinds[part]])
    finish = int(end.max())
    return {
        "finish_ns": finish,
        "compute_ns": u_comp,
        "exposed_comm_ns": u_cc - u_comp,
        "exposed_mem_ns": u_all - u_cc,
        "idle_ns": finish - u_all,
        "gap_ns": u_gaps - u_all,
        "comm_ns": u_comm,
        "mem_ns": u_mem,
        "cpu_ns": u_cpu,
        "accelerator_ns": u_acc,
        "overlap_ns": u_comp + u_comm - u_cc,
        "skew_ns": int(wait[part].sum()),
        "ops": ops,
    }


def _unions_sorted(s: np.ndarray, e: np.ndarray, masks: np.ndarray) -> list[int]:
    """Per row of ``masks`` (one bool per interval): :func:`union_ns` of the intervals it selects
    of ``[s[i], e[i])``, sorted by start; each interval adds what it reaches past the ends of
    the selected ones before it."""
    reach = np.maximum.accumulate(np.where(masks, e, _NONE), axis=1)
    before = np.concatenate((np.full((len(masks), 1), _NONE), reach[:, :-1]), axis=1)
    added = np.maximum(e - np.maximum(s, before), 0)
    return (added * masks).sum(axis=1).tolist()


def _arrival_wait(spans: Spans) -> np.ndarray:
    """Per span: the time from its start to the start of the last member of its match (0 unmatched)."""
    wait = np.zeros(len(spans), np.int64)
    sel = ((spans.match >= 0) & IS_COMM[spans.kind]).nonzero()[0]
    if not len(sel):
        return wait
    keys = spans.match[sel]
    if int(keys.max()) >= 2 * len(keys) + 64:  # sparse match numbers: numbered densely first
        keys = np.unique(keys, return_inverse=True)[1]
    start = spans.start_ns[sel]
    last = np.full(int(keys.max()) + 1, _NONE, np.int64)
    np.maximum.at(last, keys, start)
    wait[sel] = np.minimum(np.maximum(last[keys] - start, 0), spans.dur_ns[sel])
    return wait
