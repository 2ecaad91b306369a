"""Built-in input formats: native ``.et`` sets and the JSON form.

Both accept what a user types for a trace set: a file, a list of files, a directory, a glob, or
a prefix (``out/job`` for ``out/job.0.et`` ... or ``out/job.0.json`` ...).  Only files of the
format are picked from a directory or glob, so a ``result.json`` or a timeline beside a set is
ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from chakra_core.base._errors import TraceFormatError
from chakra_core.base._paths import expand_paths
from chakra_core.hookspecs import hookimpl
from chakra_core.host._api import InputFormat
from chakra_core.io._etio import open_binary
from chakra_core.io._schema import PG_INIT_NAME, Node
from chakra_core.trace._traceset import GeneratedRank, TraceSet, listed_groups_text, open_traceset

__all__ = ["EtFormat", "JsonFormat"]

_ET = (".et", ".et.gz")
_JSON = (".json", ".jsonl", ".json.gz")


class EtFormat(InputFormat):
    """Chakra protobuf ``.et`` files (plain or gzip): a file, directory, glob, prefix or list."""

    description = "Chakra ET protobuf files (prefix.{rank}.et, .et.gz)"
    per_rank = True
    reads_in_place = True

    def open(self, paths: Sequence[str], options: Mapping[str, Any]) -> TraceSet:
        """Open the set (streamed from disk)."""
        return open_traceset(list(paths))


class JsonFormat(InputFormat):
    """The JSON/JSONL form written by ``chakra jsonize``, or ``chakra_jsonizer``'s output (one file per rank)."""

    description = "Chakra ET JSON/JSONL as written by 'chakra jsonize', or chakra_jsonizer's output (plain or gzip)"

    def open(self, paths: Sequence[str], options: Mapping[str, Any]) -> TraceSet:
        """Open each file as one rank (rank from the file's header, else its position)."""
        from chakra_core.io._jsonform import read_json

        files = _json_files(paths)
        ranks = []
        for i, f in enumerate(files):
            meta, _nodes, rank = read_json(f)
            rank = i if rank is None else rank
            ranks.append(GeneratedRank(rank, meta, partial(_json_nodes, f), path=f))
        found = sorted(r.rank for r in ranks)
        if len(found) > 1 and found != list(range(len(found))):
            dup = sorted({r for r in found if found.count(r) > 1})
            if dup:
                twice = [f for f, r in zip(files, ranks) if r.rank == dup[0]]
                raise TraceFormatError(f"rank {dup[0]} given twice (also by {twice[0]}; ranks must be 0..N-1)",
                                       twice[1])
            missing = sorted(set(range(max(found) + 1)) - set(found))
            raise TraceFormatError(f"missing ranks {', '.join(map(str, missing[:10]))} (ranks must be 0..N-1)",
                                   files[0])
        return TraceSet(ranks, _known_groups(ranks), source=files[0])


def _known_groups(ranks: list[GeneratedRank]) -> dict[str, list[int]] | None:
    """``{}`` when the set has no process groups, found without parsing its nodes: no rank's
    metadata lists them and the file of its lowest rank (the one the set would parse every node
    of to find out) does not name PyTorch's process-group node; None to let the set find them."""
    if any(listed_groups_text(r.metadata()) is not None for r in ranks):
        return None
    first = min(ranks, key=lambda r: r.rank).path
    return None if first is None or _names(first, PG_INIT_NAME.encode()) else {}


def _names(path: str, text: bytes) -> bool:
    """Whether the file ``path`` (gzip or not) holds ``text``, read a MiB at a time."""
    tail = b""
    with open_binary(path) as f:
        while chunk := f.read(1 << 20):
            if text in tail + chunk[:len(text)] or text in chunk:
                return True
            tail = chunk[-len(text):]
    return False


def _json_nodes(path: str) -> Iterator[Node]:
    from chakra_core.io._jsonform import read_json

    return read_json(path)[1]


def _json_files(paths: Sequence[str]) -> list[str]:
    from chakra_core.io._jsonsniff import sniff_json

    out: list[str] = []
    for p in paths:
        if os.path.isfile(p):  # a file named explicitly is read whatever its name
            out.append(p)
        else:  # from a directory, glob or prefix: only our JSON form (not result.json, timelines)
            out += [f for f in expand_paths(p, _JSON) if sniff_json(f)]
    if not out:
        raise TraceFormatError("no Chakra JSON trace files here", paths[0] if paths else None)
    return out


@hookimpl
def chakra_register_formats(register):
    """Register ``et`` and ``json``."""
    register("et", EtFormat, description=EtFormat.description)
    register("json", JsonFormat, description=JsonFormat.description)


@hookimpl(tryfirst=True)
def chakra_detect_format(paths):
    """``et`` when the paths hold .et files, ``json`` when they hold our JSON form, else None.

    Runs first: both are unambiguous (our JSON form carries a format tag), so a set is never
    mistaken for another format because of other files beside it.
    """
    found = expand_paths(paths[0]) if paths else []
    if any(f.endswith(_ET) for f in found):
        return "et"
    json_files = [f for f in found if f.endswith(_JSON)]
    if not json_files:
        return None
    from chakra_core.io._jsonsniff import sniff_json

    if any(sniff_json(f) for f in json_files[:64]):
        return "json"
    return None
