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
``"unknown_fields"`` on the object of the message that holds them: their wire bytes in base64,
appended again when read.  Any other valid JSON of this shape is read too, by loading it whole;
so is a streamed file whose lines are laid out otherwise.  Input may be gzip (:func:`open_binary`).

The output of the MLCommons ``chakra_jsonizer`` is read too (recognised by its start, streamed),
in protobuf's JSON mapping with its camelCase names (``durationMicros``, ``int64Val``): today a
JSON list, indented (the GlobalMetadata, then the nodes; gzip when named ``.gz``), formerly the
GlobalMetadata object, then one object per node, written one after another without a list or
separators (``}{``), and in its first versions (2023) those node objects alone.  It carries no
rank: a set of such files takes the ranks from the order of the files.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import zlib
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import TextIO

from google.protobuf import json_format

from chakra_core.base._docparse import parse_json, parse_json_values
from chakra_core.base._errors import TraceFormatError
from chakra_core.base._jitchoice import compiled_worthwhile
from chakra_core.base._limits import check_limit
from chakra_core.io._etio import EtReader, atomic_output, open_binary, open_fresh
from chakra_core.io._jsonfast import OutOfRange, metadata_from_dict, node_from_dict
from chakra_core.io._jsonnode import node_dict
from chakra_core.io._jsonsniff import FORMAT_TAG, JSONIZER_LIST_START, JSONIZER_START
from chakra_core.io._jsonsniff import head as _head
from chakra_core.io._schema import GlobalMetadata, Node
from chakra_core.io._unknown import add_unknown, merge_unknown_in, without_unknown

__all__ = ["write_json", "write_rank_json", "read_json"]

#: an ``.et`` file from this size on is transcoded by the compiled loop even when numba is not
#: loaded yet (loading it costs about 0.35 s, what the node-by-node path takes for ~2 MiB)
TRANSCODE_FROM = 8 << 20


def _to_dict(msg) -> dict:
    """protobuf's JSON mapping of ``msg``, plus ``unknown_fields`` (see :mod:`._unknown`) on each
    object whose message holds fields of a newer schema."""
    d = node_dict(msg) if isinstance(msg, Node) else None
    if d is None:
        d = json_format.MessageToDict(msg, preserving_proto_field_name=True)
    return add_unknown(msg, d)


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
    """The message ``cls`` (Node or GlobalMetadata) of the JSON value ``obj``; TraceFormatError
    naming ``path`` and ``where`` when it is not one."""
    try:
        msg = (node_from_dict if cls is Node else metadata_from_dict)(obj)
        if msg is not None:
            return msg
        msg = json_format.ParseDict(without_unknown(obj), cls())
        merge_unknown_in(msg, obj)
        return msg
    except (json_format.ParseError, TypeError, ValueError, AttributeError, OutOfRange) as e:
        reason = str(e) if len(str(e)) <= 300 else str(e)[:300] + "..."
        raise TraceFormatError(f"not a Chakra {cls.__name__} ({reason})", str(path), where) from None


def read_json(path: str | os.PathLike) -> tuple[GlobalMetadata, Iterator[Node], int | None]:
    """Open a JSON/JSONL trace (plain or gzip): ``(metadata, node iterator, rank or None)``,
    streaming when possible.

    The layout is recognised from the start: ``chakra_jsonizer``'s list or concatenated objects
    (the GlobalMetadata first, or a node first), our streaming JSON header, our JSONL header (an
    object with ``"format": "chakra-et-json"``), or, in a ``.jsonl`` file, a node (JSON Lines
    without a header: empty metadata).  Anything else is loaded whole, and so is a streamed JSON
    file whose nodes are laid out otherwise (a piece that does not parse alone).
    """
    path = Path(path)
    start = _head(path)
    if JSONIZER_START.match(start):
        return _read_concatenated(path)
    if JSONIZER_LIST_START.match(start):
        return _read_list(path)
    f = _open_text(path)
    first = _line_of(f, path)
    if not first.strip():
        f.close()
        raise TraceFormatError("empty file", str(path))
    head = first.rstrip("\n")
    if head.startswith("{") and head.endswith(', "nodes": ['):
        header = _check_header(_header(_loads(head[: -len(', "nodes": [')] + "}", path, 1), path), path)
        meta = _parse(GlobalMetadata, header.get("metadata", {}), path, "line 1")
        return meta, _nodes(_lines(f, path, 2, ","), path, resume=True), _rank(header, path)
    if FORMAT_TAG in head and head.startswith("{") and head.endswith("}"):
        obj = _loads(head, path, 1)
        if isinstance(obj, dict) and obj.get("format") == FORMAT_TAG and "nodes" not in obj:
            _check_header(obj, path)
            meta = _parse(GlobalMetadata, obj.get("metadata", {}), path, "line 1")
            return meta, _nodes(_lines(f, path, 2, ""), path, resume=False), _rank(obj, path)  # our JSON Lines
    f.close()
    if path.suffix == ".jsonl":  # JSON Lines of nodes without our header
        return GlobalMetadata(), _nodes(_lines(_open_text(path), path, 1, ""), path, resume=False), None
    return _whole(path)


def _open_text(path: Path) -> TextIO:
    """``path`` opened as UTF-8 text, decompressed when it is gzip (:func:`open_binary`)."""
    try:
        return io.TextIOWrapper(open_binary(path), encoding="utf-8")
    except OSError as e:
        raise TraceFormatError(f"cannot read ({e.strerror or e})", str(path)) from None


def _unreadable(e: Exception, path: Path, line: int | None = None) -> TraceFormatError:
    """The error for text that cannot be read: not UTF-8, or bad gzip data."""
    if isinstance(e, UnicodeDecodeError):
        why = f"not UTF-8 text ({e.reason})"
    else:
        why = f"cannot read ({getattr(e, 'strerror', None) or e})"
    return TraceFormatError(why, str(path), f"line {line}" if line else None)


#: what reading a text file (gzip or not) raises on bad bytes
_READ_ERRORS = (UnicodeDecodeError, OSError, EOFError, zlib.error)


def _line_of(f: TextIO, path: Path) -> str:
    """The first line of ``f`` (closed when it cannot be read)."""
    try:
        return f.readline()
    except _READ_ERRORS as e:
        f.close()
        raise _unreadable(e, path, 1) from None


def _whole(path: Path) -> tuple[GlobalMetadata, Iterator[Node], int | None]:
    """The trace of a file loaded whole: our form's object, or ``chakra_jsonizer``'s list."""
    meta, nodes, rank = _load_whole(path)
    return _parse(GlobalMetadata, meta, path, "metadata"), _nodes_from(nodes, path, 0), rank


def _load_whole(path: Path) -> tuple[object, list, int | None]:
    """``(metadata object, node objects, rank or None)`` of the file parsed as one document."""
    try:
        with _open_text(path) as f:
            text = f.read()
    except _READ_ERRORS as e:
        raise _unreadable(e, path) from None
    obj = _loads(text, path, None)
    if isinstance(obj, list):  # chakra_jsonizer's list: the metadata, then the nodes
        if not obj or not isinstance(obj[0], dict):
            raise TraceFormatError("a JSON list whose first element is not a GlobalMetadata object", str(path))
        return obj[0], obj[1:], None
    if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list):
        raise TraceFormatError('expected an object with "metadata" and a "nodes" list', str(path))
    _check_header(obj, path)
    return obj.get("metadata", {}), obj["nodes"], _rank(obj, path)


def _nodes_from(objs: list, path: Path, skip: int) -> Iterator[Node]:
    """The nodes of a document loaded whole, from node ``skip`` on."""
    return (_parse(Node, d, path, f"node #{i}") for i, d in enumerate(objs) if i >= skip)


def _nodes(pieces: Generator[tuple[str, int], None, None], path: Path, resume: bool) -> Iterator[Node]:
    """The nodes of ``pieces`` (a node's text and its line); with ``resume``, a piece that is
    not JSON alone (several nodes on one line) has the file loaded whole, from that node on."""
    done = 0
    for text, line in pieces:
        try:
            obj = _loads(text, path, line)
        except TraceFormatError as streamed:
            if not resume:
                raise
            pieces.close()
            try:
                objs = _load_whole(path)[1]
            except TraceFormatError:
                raise streamed from None  # the streamed error names the line
            yield from _nodes_from(objs, path, done)
            return
        yield _parse(Node, obj, path, f"line {line}")
        done += 1


def _header(obj, path: Path) -> dict:
    if not isinstance(obj, dict):
        raise TraceFormatError("line 1 is not a Chakra JSON header object", str(path), "line 1")
    return obj


_JSON_TYPES = {str: "string", bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}


def _check_header(header: dict, path: Path) -> dict:
    fmt = header.get("format", FORMAT_TAG)
    if fmt != FORMAT_TAG:
        raise TraceFormatError(f'"format" is {json.dumps(fmt)}, not "{FORMAT_TAG}"', str(path), "line 1")
    version = header.get("version", 1)
    if type(version) is not int or version != 1:
        kind = _JSON_TYPES.get(type(version), "null")
        raise TraceFormatError(f"JSON form version {json.dumps(version)} (a {kind}) is not supported: this reader "
                               "knows the number 1", str(path), "line 1")
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


def _lines(f: TextIO, path: Path, lineno: int, sep: str) -> Generator[tuple[str, int], None, None]:
    """Each node's text, one per line, with its line; ``sep`` is "," inside our streaming JSON
    (which ends with a line ``]}``), "" for JSON Lines."""
    with f:
        try:
            for line in f:
                s = line.strip()
                if not s:
                    lineno += 1
                    continue
                if sep and s == "]}":
                    if f.read().strip():
                        raise TraceFormatError("text after the end of the JSON document", str(path),
                                               f"line {lineno + 1}")
                    return
                yield (s[:-1] if sep and s.endswith(sep) else s), lineno
                lineno += 1
        except _READ_ERRORS as e:
            raise _unreadable(e, path, lineno) from None
    if sep:
        raise TraceFormatError("truncated JSON (no closing ']}')", str(path), f"line {lineno}")


#: the fields of a GlobalMetadata object; a first object with any other is a node
_METADATA_KEYS = frozenset({"version", "attr"})


def _read_concatenated(path: Path) -> tuple[GlobalMetadata, Iterator[Node], None]:
    """``chakra_jsonizer``'s concatenated objects: the metadata now, the nodes as they are read.

    The first object is the GlobalMetadata, except in the files of the jsonizer until chakra
    ``b5c04ef`` (2023-11-22), which wrote nodes only (then the metadata is empty): an object whose
    fields are not all GlobalMetadata fields is the first node.  An empty first object is the
    metadata either way (that jsonizer, decoding a GlobalMetadata that holds only a version as a
    Node, wrote ``{}``).
    """
    objects = _iter_objects(path)
    first = next(objects, None)
    if first is None:
        raise TraceFormatError("empty file", str(path))
    obj, line = first
    if not isinstance(obj, dict):
        raise TraceFormatError("the first object is not a GlobalMetadata or a Node", str(path), f"line {line}")
    if obj.keys() <= _METADATA_KEYS:
        meta = _parse(GlobalMetadata, obj, path, f"line {line}")
    else:
        meta, objects = GlobalMetadata(), itertools.chain([first], objects)
    return meta, (_parse(Node, node, path, f"line {at}") for node, at in objects), None


def _iter_objects(path: Path) -> Iterator[tuple[object, int]]:
    """The JSON objects of a file of concatenated objects, one at a time, with their first line.

    protobuf's ``MessageToJson`` indents nested values, so a top-level object ends on a line
    that starts with ``}`` (a JSON string cannot hold a raw newline, so such a line is never
    inside a string); the text is cut there, after the brace.  A text with no such line (objects
    written without indentation) is parsed at the end of the file, whole.
    """
    try:
        with _open_text(path) as f:
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
    except _READ_ERRORS as e:
        raise _unreadable(e, path) from None


def _read_list(path: Path) -> tuple[GlobalMetadata, Iterator[Node], None]:
    """``chakra_jsonizer``'s JSON list: streamed when its ``[`` is alone on line 1 (the tool
    indents), else loaded whole; the metadata now, the nodes as they are read."""
    f = _open_text(path)
    if _line_of(f, path).strip() != "[":
        f.close()
        meta, nodes, _ = _whole(path)
        return meta, nodes, None
    pieces = _list_items(f, path)
    first = next(pieces, None)
    if first is None:
        raise TraceFormatError("an empty JSON list (no GlobalMetadata)", str(path))
    text, line = first
    try:
        meta = _parse(GlobalMetadata, _loads(text, path, line), path, f"line {line}")
    except TraceFormatError:
        pieces.close()
        meta, nodes, _ = _whole(path)  # laid out otherwise, or an error the whole text names
        return meta, nodes, None
    return meta, _nodes(pieces, path, resume=True), None


def _list_items(f: TextIO, path: Path) -> Generator[tuple[str, int], None, None]:
    """The elements of an indented JSON list after its ``[`` line, each text with its first line.

    An element ends on the first line indented as its own first line that ends with ``}`` or
    ``},`` (nested values are indented deeper, and a JSON string cannot hold a raw newline).  A
    list that does not end with ``]`` yields its rest as one text, which then does not parse.
    """
    lineno = 2
    piece: list[str] = []
    indent = start = 0
    with f:
        try:
            for line in f:
                s = line.strip()
                if not piece and s == "]":
                    if f.read().strip():
                        raise TraceFormatError("text after the end of the JSON list", str(path), f"line {lineno + 1}")
                    return
                if piece or s:
                    if not piece:
                        indent, start = len(line) - len(line.lstrip()), lineno
                    piece.append(line)
                    if s.endswith(("}", "},")) and len(line) - len(line.lstrip()) == indent:
                        yield "".join(piece).strip().removesuffix(","), start
                        piece = []
                lineno += 1
        except _READ_ERRORS as e:
            raise _unreadable(e, path, lineno) from None
    yield "".join(piece), start if piece else lineno
