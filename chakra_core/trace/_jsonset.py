"""A whole trace set in the JSON form: each rank's metadata with the set's process groups, and an
``.et``-backed rank written from its file's wire bytes (the compiled transcoder of
:func:`chakra_core.io._jsonform.write_rank_json`, decided once for the whole set: its files
together hold :data:`TRANSCODE_FROM` bytes or more).

The groups are written as :meth:`TraceSet.write` writes them (``convert``), so a JSON file is
self-contained: a set whose groups came from its input format (a text workload, a JAX module),
not from its ranks' metadata, keeps them through ``jsonize``; :func:`ranks_given_groups` names
the ranks whose metadata is so changed, for the command's note.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from chakra_core.base._jitchoice import compiled_worthwhile
from chakra_core.io._etio import EtReader
from chakra_core.io._jsonform import TRANSCODE_FROM, write_rank_json
from chakra_core.io._schema import GlobalMetadata
from chakra_core.trace._traceset import FileRank, RankTrace, TraceSet, groups_by_rank, with_process_groups

__all__ = ["write_set_json", "ranks_given_groups"]


def _written_metadata(traces: TraceSet) -> Iterator[tuple[RankTrace, GlobalMetadata]]:
    """Each rank of ``traces`` with the metadata its JSON file carries (its own groups added)."""
    own = groups_by_rank(traces.process_groups)
    for rt in traces:
        yield rt, with_process_groups(rt.metadata(), own(rt.rank))


def ranks_given_groups(traces: TraceSet) -> list[int]:
    """The ranks whose metadata written differs from their own: a ``process_groups`` attribute
    added (or made to list only the rank's groups)."""
    return [rt.rank for rt, meta in _written_metadata(traces) if meta != rt.metadata()]


def write_set_json(traces: TraceSet, directory: Path, names: Sequence[str], lines: bool,
                   advance: Callable[[], None] | None = None) -> int:
    """Write rank ``i`` of ``traces`` as ``directory / names[i]`` (JSON Lines when ``lines``),
    calling ``advance()`` after each; the number of nodes written."""
    transcode = compiled_worthwhile((rt.file for rt in traces if type(rt) is FileRank), TRANSCODE_FROM)
    count = 0
    for (rt, meta), name in zip(_written_metadata(traces), names):
        nodes = EtReader(rt.file) if type(rt) is FileRank else rt.nodes()
        count += write_rank_json(directory / name, meta, nodes, rt.rank, lines, transcode)
        if advance:
            advance()
    return count
