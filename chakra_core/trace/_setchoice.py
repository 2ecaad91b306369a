"""Whether the loops over some ranks of a trace set are worth loading numba for: the core's rule
(:func:`chakra_core.base._jitchoice.compiled_worthwhile`) applied to the ranks' ``.et`` files."""

from __future__ import annotations

import os
from collections.abc import Sequence

from chakra_core.base._jitchoice import compiled_worthwhile
from chakra_core.trace._roles import COMPILED_FROM, CONTENT_BELOW
from chakra_core.trace._traceset import FileRank, TraceSet

__all__ = ["ranks_compiled_worthwhile", "keys_compiled_worthwhile"]


def ranks_compiled_worthwhile(traces: TraceSet, ranks: Sequence[int], from_bytes: int) -> bool:
    """:func:`compiled_worthwhile` of the ``.et`` files of ``ranks`` of ``traces`` and
    ``from_bytes`` (bytes on disk); when not every one of those ranks is a file (ranks generated or
    held in memory, whose size is not known before they are read), whenever numba is installed."""
    files = [rt.file for rt in (traces[r] for r in ranks) if isinstance(rt, FileRank)]
    return compiled_worthwhile(files, from_bytes if len(files) == len(ranks) else 0)


def keys_compiled_worthwhile(traces: TraceSet, ranks: Sequence[int], from_bytes: int) -> bool:
    """:func:`ranks_compiled_worthwhile` for the role keys of ``ranks``: their files of 16 KiB
    or more hold ``from_bytes``, or all their files hold 16 MiB (the bound of
    :func:`chakra_core.role_key`'s own rule for one file). A file under 16 KiB that names no peer
    is keyed by its bytes (the same bytes keyed once, fast as Python); one that names peers is
    not, hence the second bound."""
    files = [rt.file for rt in (traces[r] for r in ranks) if isinstance(rt, FileRank)]
    sizes = [_size(f) for f in files]
    enough = (len(files) < len(ranks) or sum(z for z in sizes if z >= CONTENT_BELOW) >= from_bytes
              or sum(sizes) >= COMPILED_FROM)
    return compiled_worthwhile([], 0 if enough else 1)  # weighed above: numba installed (and, if not enough, loaded)


def _size(path: str) -> int:
    """The size of file ``path`` (0 when it cannot be sized: its reader names the error)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
