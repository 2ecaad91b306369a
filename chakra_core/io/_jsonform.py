"""The JSON form of a Chakra ET, and its exact inverse.

Layout (valid JSON; one node per line so that it streams both ways)::

    {"format": "chakra-et-json", "version": 1, "rank": 0, "metadata": {...}, "nodes": [
    {...},
    {...}
    ]}

``.jsonl`` files hold the same objects as JSON Lines: the header object (without ``nodes``) on
line 1, then one node per line.  Messages are mapped with protobuf's canonical JSON mapping
(proto field names, 64-bit integers as strings, oneof slots kept), so .et -> JSON -> .et is
byte-identical for the traces we write.  Fields of a newer schema than ours (an attribute kind
or a node field we do not know; protobuf keeps them as unknown fields) are written as
``"unknown_fields"``: their wire bytes in base64, appended again when read.  Any other valid JSON
of this shape is read too, by loading it whole.

The output of the MLCommons ``chakra_jsonizer`` is read too (recognised by its start, streamed):
the GlobalMetadata object, then one object per node, written one after another without a list
or separators (``}{``), in protobuf's JSON mapping with its camelCase names
(``durationMicros``, ``int64Val``).  It carries no rank: a set of such files takes the ranks
from the order of the files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from google.protobuf import json_format

from chakra_core.base._docparse import parse_json, parse_json_values
from chakra_core.base._errors import TraceFormatError
from chakra_core.base._jitchoice import compiled_worthwhile
from chakra_core.base._limits import check_limit
from chakra_core.io._etio import EtReader, atomic_output, open_fresh
from chakra_core.io._jsonfast import node_from_dict
from chakra_core.io._jsonnode import node_dict
from chakra_core.io._jsonsniff import FORMAT_TAG, JSONIZER_START
from chakra_core.io._jsonsniff import head as _head
from chakra_core.io._schema import GlobalMetadata, Node
from chakra_core.io._unknown import UNKNOWN_KEY, merge_unknown, unknown_fields

__all__ = ["write_json", "write_rank_json", "read_json"]

#: an ``.et`` file from this size on is transcoded by the compiled loop even when numba is not
#: loaded yet (loading it costs about 0.35 s, what the node-by-node path takes for ~2 MiB)
TRANSCODE_FROM = 8 << 20


def _to_dict(msg) -> dict:
    """protobuf's JSON mapping of ``msg``, plus ``unknown_fields`` (see :mod:`._unknown`) on the
    message and on each attribute that holds fields of a newer schema."""
    d = node_dict(msg) if isinstance(msg, Node) else None
    if d is None:
        d = json_format.MessageToDict(msg, preserving_proto_field_name=True)
    extra = unknown_fields(msg)
    if extra:
        d[UNKNOWN_KEY] = extra
    for i, a in enumerate(getattr(msg, "attr", ())):
        extra = unknown_fields(a)
        if extra:
            d["attr"][i][UNKNOWN_KEY] = extra
    return d


def write_json(path: str | os.PathLike, metadata: GlobalMetadata, nodes: Iterable[Node],
               rank: int | None = None, lines: bool | None = None) -> int:
    """Write one rank as JSON, or JSON Lines (``lines``; by default when the name ends in
    ``.jsonl``); return the node count.  ``nodes`` given as an :class:`EtReader` are written
    from the file's wire bytes by a compiled transcoder when numba is installed (same output)."""
    return write_rank_json(path, metadata, nodes, rank, lines)


def write_rank_json(path: str | os.PathLike, metadata: GlobalMetadata, nodes: Iterable[Node],
                    rank: int | None = None, lines: bool | None = None, transcode: bool | None = None) -> int:
    """:func:`write_json`; ``transcode``: whether an :class:`EtReader`'s file goes through the
    compiled transcoder (None: when :func:`compiled_worthwhile` says so for this file alone)."""
    if lines is None:
        lines = str(path).endswith(".jsonl")
    header = {"format": FORMAT_TAG, "version": 1}
    if rank is not None:
        header["rank"] = rank
    header["metadata"] = _to_dict(metadata)
    with atomic_output(path) as tmp:
        count = None
        if isinstance(nodes, EtReader) and (os.path.isfile(tmp) or not os.path.exists(tmp)):
            if compiled_worthwhile(nodes.path, TRANSCODE_FROM) if transcode is None else transcode:
                count = _write_wire(tmp, header, nodes.path, lines)
        if count is None:
            count = _write_nodes(tmp, header, nodes, lines)
    return count


def _node_json(n: Node) -> str:
    return json.dumps(_to_dict(n))


def _write_nodes(tmp: Path, header: dict, nodes: Iterable[Node], lines: bool) -> int:
    """Write the file from node objects; the node count."""
    count = 0
    with open(tmp, "w", encoding="utf-8") as f:
        if lines:
            f.write(json.dumps(header) + "\n")
            for n in nodes:
                f.write(_node_json(n) + "\n")
                count += 1
        else:
            f.write(json.dumps(header)[:-1] + ', "nodes": [')
            sep = "\n"
            for n in nodes:
                f.write(sep + _node_json(n))
                sep = ",\n"
                count += 1
            f.write("\n]}\n")
    return count


def _write_wire(tmp: Path, header: dict, source: str, lines: bool) -> int | None:
    """Write the file from the wire bytes of the ``.et`` file ``source`` (:mod:`._jsonwire`);
    the node count, or None when it is to be read node by node instead (a regular file is
    written again from the start; the output is not a pipe here)."""
    from chakra_core.io._jsonwire import Reread, write_nodes

    with open_fresh(tmp) as f:
        try:
            if lines:
                f.write((json.dumps(header) + "\n").encode())
                return write_nodes(f, source, b"", b"\n", _node_json)
            f.write((json.dumps(header)[:-1] + ', "nodes": [').encode())
            count = write_nodes(f, source, b",\n", b"", _node_json, skip_first=True)
            f.write(b"\n]}\n")
            return count
        except Reread:
            return None


def _parse(cls, obj, path, where):
    if cls is Node:
        node = node_from_dict(obj)
        if node is not None:
            return node
    try:
        if isinstance(obj, dict) and UNKNOWN_KEY in obj:
            obj = dict(obj)
            extra = obj.pop(UNKNOWN_KEY)
            msg = json_format.ParseDict(obj, cls())
            merge_unknown(msg, extra)
            return msg
        return json_format.ParseDict(obj, cls())
    except (json_format.ParseError, TypeError, ValueError, AttributeError) as e:
        reason = str(e) if len(str(e)) <= 300 else str(e)[:300] + "..."
        raise TraceFormatError(f"not a Chakra {cls.__name__} ({reason})", str(path), where) from None


def read_json(path: str | os.PathLike) -> tuple[GlobalMetadata, Iterator[Node], int | None]:
    """Open a JSON/JSONL trace: ``(metadata, node iterator, rank or None)``, streaming when possible.

    The layout is recognised from the start: ``chakra_jsonizer``'s concatenated objects, our
    streaming JSON header, our JSONL header (an object with ``"format": "chakra-et-json"``), or,
    in a ``.jsonl`` file, a node (JSON Lines without a header: empty metadata).  Anything else
    is loaded whole.
    """
    path = Path(path)
    if JSONIZER_START.match(_head(path)):
        return _read_concatenated(path)
    try:
        f = open(path, encoding="utf-8")
        first = f.readline()
    except (OSError, UnicodeDecodeError) as e:
        raise TraceFormatError(f"cannot read ({e})", str(path)) from None
    if not first.strip():
        f.close()
        raise TraceFormatError("empty file", str(path))
    head = first.rstrip("\n")
    if head.startswith("{") and head.endswith(', "nodes": ['):
        header = _check_header(_header(_loads(head[: -len(', "nodes": [')] + "}", path, 1), path), path)
        meta = _parse(GlobalMetadata, header.get("metadata", {}), path, "line 1")
        return meta, _iter_lines(f, path, 2, ","), _rank(header, path)
    if FORMAT_TAG in head and head.startswith("{") and head.endswith("}"):
        obj = _loads(head, path, 1)
        if isinstance(obj, dict) and obj.get("format") == FORMAT_TAG and "nodes" not in obj:
            _check_header(obj, path)
            meta = _parse(GlobalMetadata, obj.get("metadata", {}), path, "line 1")
            return meta, _iter_lines(f, path, 2, ""), _rank(obj, path)  # our JSON Lines
    if path.suffix == ".jsonl":
        f.seek(0)  # JSON Lines of nodes without our header
        return GlobalMetadata(), _iter_lines(f, path, 1, ""), None
    # any other layout: load it whole
    try:
        text = first + f.read()
    except UnicodeDecodeError as e:
        raise TraceFormatError(f"not UTF-8 text ({e.reason} at byte {e.start})", str(path)) from None
    finally:
        f.close()
    obj = _loads(text, path, None)
    if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list):
        raise TraceFormatError('expected an object with "metadata" and a "nodes" list', str(path))
    _check_header(obj, path)
    meta = _parse(GlobalMetadata, obj.get("metadata", {}), path, "metadata")
    nodes = (_parse(Node, d, path, f"node #{i}") for i, d in enumerate(obj["nodes"]))
    return meta, nodes, _rank(obj, path)


def _header(obj, path: Path) -> dict:
    if not isinstance(obj, dict):
        raise TraceFormatError("line 1 is not a Chakra JSON header object", str(path), "line 1")
    return obj


def _check_header(header: dict, path: Path) -> dict:
    version = header.get("version", 1)
    if version != 1:
        raise TraceFormatError(f"JSON form version {version!r} is not supported (this reader knows 1)",
                               str(path), "line 1")
    if not isinstance(header.get("metadata", {}), dict):
        raise TraceFormatError('"metadata" must be an object', str(path), "line 1")
    return header


def _rank(header: dict, path: Path) -> int | None:
    rank = header.get("rank")
    if rank is None:
        return None
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise TraceFormatError(f'"rank" must be a non-negative integer, got {rank!r}', str(path), "line 1")
    return check_limit("rank", rank, '"rank"', str(path), "line 1")


def _loads(text: str, path: Path, line: int | None):
    return parse_json(text, str(path), TraceFormatError, line)


def _iter_lines(f, path: Path, lineno: int, sep: str) -> Iterator[Node]:
    """Yield one node per line; ``sep`` is "," inside our streaming JSON, "" for JSON Lines."""
    with f:
        try:
            for line in f:
                s = line.strip()
                if not s:
                    lineno += 1
                    continue
                if sep and s == "]}":
                    rest = f.read().strip()
                    if rest:
                        raise TraceFormatError("text after the end of the JSON document", str(path),
                                               f"line {lineno + 1}")
                    return
                if sep and s.endswith(sep):
                    s = s[:-1]
                yield _parse(Node, _loads(s, path, lineno), path, f"line {lineno}")
                lineno += 1
        except UnicodeDecodeError as e:
            raise TraceFormatError(f"not UTF-8 text ({e.reason})", str(path), f"line {lineno}") from None
    if sep:
        raise TraceFormatError("truncated JSON (no closing ']}')", str(path), f"line {lineno}")


def _read_concatenated(path: Path) -> tuple[GlobalMetadata, Iterator[Node], None]:
    """``chakra_jsonizer`` output: the metadata now, the nodes as they are read."""
    objects = _iter_objects(path)
    first = next(objects, None)
    if first is None:
        raise TraceFormatError("empty file", str(path))
    meta_obj, line = first
    if not isinstance(meta_obj, dict):
        raise TraceFormatError("the first object is not a GlobalMetadata", str(path), f"line {line}")
    meta = _parse(GlobalMetadata, meta_obj, path, f"line {line}")
    return meta, (_parse(Node, obj, path, f"line {at}") for obj, at in objects), None


def _iter_objects(path: Path) -> Iterator[tuple[object, int]]:
    """The JSON objects of a file of concatenated objects, one at a time, with their first line.

    protobuf's ``MessageToJson`` indents nested values, so a top-level object ends on a line
    that starts with ``}`` (a JSON string cannot hold a raw newline, so such a line is never
    inside a string); the text is cut there, after the brace.  A text with no such line (objects
    written without indentation) is parsed at the end of the file, whole.
    """
    try:
        with open(path, encoding="utf-8") as f:
            piece: list[str] = []
            start = lineno = 1
            for line in f:
                if line.startswith("}"):
                    piece.append("}")
                    yield from parse_json_values("".join(piece), str(path), TraceFormatError, start)
                    rest = line[1:]
                    piece = [rest] if rest.strip() else []
                    start = lineno if piece else lineno + 1
                elif piece or line.strip():
                    if not piece:
                        start = lineno
                    piece.append(line)
                lineno += 1
            if piece:
                yield from parse_json_values("".join(piece), str(path), TraceFormatError, start)
    except UnicodeDecodeError as e:
        raise TraceFormatError(f"not UTF-8 text ({e.reason})", str(path)) from None
