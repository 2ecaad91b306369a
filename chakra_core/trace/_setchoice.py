"""Whether the loops over some ranks of a trace set are worth loading numba for: the core's rule
(:func:`chakra_core.base._jitchoice.compiled_worthwhile`) applied to the ranks' ``.et`` files."""

from __future__ import annotations

from collections.abc import Sequence

from chakra_core.base._jitchoice import compiled_worthwhile
from chakra_core.trace._traceset import FileRank, TraceSet

__all__ = ["ranks_compiled_worthwhile"]


def ranks_compiled_worthwhile(traces: TraceSet, ranks: Sequence[int], from_bytes: int) -> bool:
    """:func:`compiled_worthwhile` of the ``.et`` files of ``ranks`` of ``traces`` and
    ``from_bytes`` (bytes on disk); when not every one of those ranks is a file (ranks generated or
    held in memory, whose size is not known before they are read), whenever numba is installed."""
    files = [rt.file for rt in (traces[r] for r in ranks) if isinstance(rt, FileRank)]
    return compiled_worthwhile(files, from_bytes if len(files) == len(ranks) else 0)
