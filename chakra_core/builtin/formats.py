"""Built-in input formats: native ``.et`` sets and the JSON form."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..api import InputFormat
from ..errors import TraceFormatError
from ..hookspecs import hookimpl
from ..jsonform import read_json, sniff_json
from ..traceset import GeneratedRank, TraceSet, open_traceset

__all__ = ["EtFormat", "JsonFormat"]


class EtFormat(InputFormat):
    """Chakra protobuf ``.et`` files (plain or gzip): a file, directory, glob, prefix or list."""

    description = "Chakra ET protobuf files (prefix.{rank}.et, .et.gz)"

    def open(self, paths: Sequence[str], options: Mapping[str, Any]) -> TraceSet:
        """Open the set (streamed from disk)."""
        return open_traceset(list(paths))


class JsonFormat(InputFormat):
    """The JSON/JSONL form written by ``chakra jsonize`` (one file per rank)."""

    description = "Chakra ET JSON/JSONL as written by 'chakra jsonize'"

    def open(self, paths: Sequence[str], options: Mapping[str, Any]) -> TraceSet:
        """Open each file as one rank (rank from the file's header, else its position)."""
        files = _expand(paths)
        ranks = []
        for i, f in enumerate(files):
            meta, _nodes, rank = read_json(f)
            rank = i if rank is None else rank
            ranks.append(GeneratedRank(rank, meta, lambda f=f: read_json(f)[1], path=f))
        found = sorted(r.rank for r in ranks)
        if found != list(range(len(found))):
            dup = sorted({r for r in found if found.count(r) > 1})
            missing = sorted(set(range(max(found) + 1)) - set(found))
            what = f"rank {dup[0]} given twice" if dup else f"missing ranks {', '.join(map(str, missing[:10]))}"
            raise TraceFormatError(f"{what} (ranks must be 0..N-1)", files[0])
        return TraceSet(ranks, source=files[0])


def _expand(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith((".json", ".jsonl")))
        else:
            out.append(p)
    if not out:
        raise TraceFormatError("no JSON trace files", paths[0] if paths else None)
    return out


def _is_et(path: str) -> bool:
    if os.path.isdir(path):
        return any(f.endswith((".et", ".et.gz")) for f in os.listdir(path))
    if path.endswith((".et", ".et.gz")):
        return True
    import glob

    return bool(glob.glob(glob.escape(path) + ".*.et")) or bool(glob.glob(glob.escape(path) + ".*.et.gz"))


@hookimpl
def chakra_register_formats(register):
    """Register ``et`` and ``json``."""
    register("et", EtFormat, description=EtFormat.description)
    register("json", JsonFormat, description=JsonFormat.description)


@hookimpl(trylast=True)
def chakra_detect_format(paths):
    """``et`` for .et files, directories and prefixes; ``json`` for our JSON form."""
    first = paths[0] if paths else ""
    if first.endswith((".json", ".jsonl")) and sniff_json(first):
        return "json"
    if os.path.isdir(first):
        names = os.listdir(first)
        if any(n.endswith((".json", ".jsonl")) for n in names) and not any(n.endswith(".et") for n in names):
            js = sorted(n for n in names if n.endswith((".json", ".jsonl")))
            if sniff_json(os.path.join(first, js[0])):
                return "json"
    if _is_et(first):
        return "et"
    return None
