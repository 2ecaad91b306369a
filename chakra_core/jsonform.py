"""The JSON form of a Chakra ET, and its exact inverse.

Layout (valid JSON; one node per line so that it streams both ways)::

    {"format": "chakra-et-json", "version": 1, "rank": 0, "metadata": {...}, "nodes": [
    {...},
    {...}
    ]}

``.jsonl`` files hold the same objects as JSON Lines: the header object (without ``nodes``) on
line 1, then one node per line.  Messages are mapped with protobuf's canonical JSON mapping
(proto field names, 64-bit integers as strings, oneof slots kept), so .et -> JSON -> .et is
byte-identical for the traces we write.  Any other valid JSON of this shape is read too, by
loading it whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from google.protobuf import json_format

from .errors import TraceFormatError
from .etio import atomic_output
from .schema import GlobalMetadata, Node

__all__ = ["write_json", "read_json", "iter_json", "FORMAT_TAG", "sniff_json"]

FORMAT_TAG = "chakra-et-json"


def _to_dict(msg) -> dict:
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def write_json(path: str | os.PathLike, metadata: GlobalMetadata, nodes: Iterable[Node],
               rank: int | None = None) -> int:
    """Write one rank as JSON (or JSON Lines when ``path`` ends in ``.jsonl``); return node count."""
    lines = str(path).endswith(".jsonl")
    header = {"format": FORMAT_TAG, "version": 1}
    if rank is not None:
        header["rank"] = rank
    header["metadata"] = _to_dict(metadata)
    count = 0
    with atomic_output(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        if lines:
            f.write(json.dumps(header) + "\n")
            for n in nodes:
                f.write(json.dumps(_to_dict(n)) + "\n")
                count += 1
        else:
            f.write(json.dumps(header)[:-1] + ', "nodes": [')
            sep = "\n"
            for n in nodes:
                f.write(sep + json.dumps(_to_dict(n)))
                sep = ",\n"
                count += 1
            f.write("\n]}\n")
    return count


def sniff_json(path: str | os.PathLike) -> bool:
    """True when ``path`` starts like a file written by :func:`write_json`."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    return FORMAT_TAG.encode() in head


def _parse(cls, obj, path, where):
    try:
        return json_format.ParseDict(obj, cls())
    except (json_format.ParseError, TypeError, ValueError, AttributeError) as e:
        raise TraceFormatError(f"not a Chakra {cls.__name__} ({e})", str(path), where) from None


def read_json(path: str | os.PathLike) -> tuple[GlobalMetadata, Iterator[Node], int | None]:
    """Open a JSON/JSONL trace: ``(metadata, node iterator, rank or None)``, streaming when possible."""
    path = Path(path)
    try:
        f = open(path, encoding="utf-8")
        first = f.readline()
    except (OSError, UnicodeDecodeError) as e:
        raise TraceFormatError(f"cannot read ({e})", str(path)) from None
    if not first.strip():
        f.close()
        raise TraceFormatError("empty file", str(path))
    if path.suffix == ".jsonl":
        header = _loads(first, path, 1)
        meta = _parse(GlobalMetadata, header.get("metadata", {}), path, "line 1")
        return meta, _iter_lines(f, path, 2, ""), header.get("rank")
    head = first.rstrip("\n")
    if head.endswith(', "nodes": [') and head.startswith("{"):
        header = _loads(head[: -len(', "nodes": [')] + "}", path, 1)
        meta = _parse(GlobalMetadata, header.get("metadata", {}), path, "line 1")
        return meta, _iter_lines(f, path, 2, ","), header.get("rank")
    # any other layout: load it whole
    text = first + f.read()
    f.close()
    obj = _loads(text, path, None)
    if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list):
        raise TraceFormatError('expected an object with "metadata" and a "nodes" list', str(path))
    meta = _parse(GlobalMetadata, obj.get("metadata", {}), path, "metadata")
    nodes = (_parse(Node, d, path, f"node #{i}") for i, d in enumerate(obj["nodes"]))
    return meta, nodes, obj.get("rank")


def iter_json(path: str | os.PathLike) -> Iterator[Node]:
    """Iterate over the nodes of a JSON/JSONL trace."""
    return read_json(path)[1]


def _loads(text: str, path: Path, line: int | None):
    try:
        return json.loads(text)
    except ValueError as e:
        where = f"line {line}" if line else f"line {getattr(e, 'lineno', '?')}"
        raise TraceFormatError(f"malformed JSON ({getattr(e, 'msg', e)})", str(path), where) from None


def _iter_lines(f, path: Path, lineno: int, sep: str) -> Iterator[Node]:
    with f:
        for line in f:
            s = line.strip()
            if not s:
                lineno += 1
                continue
            if sep and s in ("]}", "]"):
                return
            if sep and s.endswith(sep):
                s = s[:-1]
            yield _parse(Node, _loads(s, path, lineno), path, f"line {lineno}")
            lineno += 1
    if sep:
        raise TraceFormatError("truncated JSON (no closing ']}')", str(path), f"line {lineno}")
