"""A whole trace set in the JSON form: each rank's metadata with the set's process groups, and an
``.et``-backed rank written from its file's wire bytes (the compiled transcoder of
:func:`chakra_core.io._jsonform.write_rank_json`, decided once for the whole set: its files
together hold :data:`TRANSCODE_FROM` bytes or more)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from chakra_core.base._jitchoice import compiled_worthwhile
from chakra_core.io._etio import EtReader
from chakra_core.io._jsonform import TRANSCODE_FROM, write_rank_json
from chakra_core.trace._traceset import FileRank, TraceSet, groups_by_rank, with_process_groups

__all__ = ["write_set_json"]


def write_set_json(traces: TraceSet, directory: Path, names: Sequence[str], lines: bool,
                   advance: Callable[[], None] | None = None) -> int:
    """Write rank ``i`` of ``traces`` as ``directory / names[i]`` (JSON Lines when ``lines``),
    calling ``advance()`` after each; the number of nodes written."""
    transcode = compiled_worthwhile((rt.file for rt in traces if type(rt) is FileRank), TRANSCODE_FROM)
    count = 0
    own = groups_by_rank(traces.process_groups)
    for rt, name in zip(traces, names):
        meta = with_process_groups(rt.metadata(), own(rt.rank))
        nodes = EtReader(rt.file) if type(rt) is FileRank else rt.nodes()
        count += write_rank_json(directory / name, meta, nodes, rt.rank, lines, transcode)
        if advance:
            advance()
    return count
