"""Stream a PyTorch host execution trace (``.json`` / ``.json.gz``) into compact records.

The file is parsed a batch of nodes at a time (:mod:`.jsonitems`); the conversion's pass reads
each node with only the keys it uses, its inputs and outputs as their JSON text, unparsed
(:func:`_node_decoder`), and no node outlives the pass as a Python dict.  What is kept per node
is a few integers in arrays indexed by node id (parent, rf_id, flags); per *operator* node the
input/output lists are kept as compact JSON bytes only until its parent arrives: PyTorch writes
a node when it finishes, so children come before parents and a parent operator folds its
children away at once (the memory stays proportional to the selected nodes, not to all nodes).
The newest candidates (at most ``_RAW_WINDOW``) wait as read, so that those folded away never
have their attributes put in compact form nor their inputs and outputs parsed (inputs that
could not be written are an error only for a node that keeps them).  Files in any other order
convert the same, with more memory.

Which host nodes become Chakra nodes (``select``): an *operator* (a node with an ``op_schema``,
a compiled kernel call with a ``kernel_backend`` such as Inductor's ``triton_*`` ops, or for old
schemas an ``ns::op`` name) with no operator above it; nested operators are folded
into it so durations are not counted twice.  Communication ops (``c10d::*`` and a
``record_param_comms`` outside any c10d op) always become nodes, even when nested; the operator
around them then gets its exclusive time.
"""

from __future__ import annotations

import gzip
import sys
import zlib
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from itertools import compress
from typing import Any

import ijson
import orjson

from chakra_core import TraceFormatError, open_binary

from .comms import CommInfo, comm_from_c10d, comm_from_param_comms, merge_param_comms, tensors_in
from .commwork import WorkAnnotation, attach_annotations
from .intmap import IntMap
from .ints import INT64_END, MAX_RANKS, int64, is_rank, node_ref
from .iotext import dump_io
from .jsonitems import broken_json, iter_items, json_value, keyed_type, short_error, typed_decoder
from .kineto import KinetoTrace
from .linked import LinkedTiming
from .needles import PG_INIT_NEEDLE, holds

__all__ = ["KEEP_ATTRS", "HostOp", "HostTrace", "read_host_et", "read_header", "schema_of", "iter_raw_nodes",
           "scan_groups"]

#: the root nodes (``execution_graph`` in the first PyTorch versions, schema 1.0.1)
_ROOT_NAMES = frozenset(("[pytorch|profiler|execution_trace|process]", "[pytorch|profiler|execution_trace|thread]",
                         "[pytorch|profiler|execution_graph|process]", "[pytorch|profiler|execution_graph|thread]"))
PG_INIT = PG_INIT_NEEDLE.decode()
_NOT_OPS = ("autograd::", "torch::autograd::", "##", "[pytorch|", "ProfilerStep#", "Optimizer.")

F_SEEN, F_OP, F_ROOT, F_ANCHOR = 1, 2, 4, 8
#: node ids index arrays (17 bytes per id up to the largest): an id above both the floor and the
#: factor times the nodes read so far is refused (PyTorch's ids count nodes and tensors from 1)
_ID_FLOOR = 1 << 22
_ID_FACTOR = 64
#: operator candidates held as read (attributes, inputs and outputs), before the compact form is
#: made: most are folded into their parent operator, which PyTorch writes right after them
_RAW_WINDOW = 64


@dataclass(slots=True)
class HostOp:
    """A host node that becomes a Chakra node (an operator or a communication op)."""

    id: int
    name: str
    tid: int
    rf_id: int
    keep: tuple  # values of KEEP_ATTRS (None when absent)
    io: bytes  # the six lists of inputs/outputs as kept (:mod:`.iotext`)
    comm: CommInfo | None = None
    parent_sel: int = -1  # nearest selected ancestor (for exclusive time of nested nodes)


@dataclass
class HostTrace:
    """Everything the conversion needs from one host ET."""

    path: str
    schema: str
    pid: int | None
    ops: list[HostOp]
    #: selected op id for each rf_id of the file (folded nodes map to their selected ancestor)
    rf_owner: IntMap
    #: process groups of the pg-init node: {pg_name: {"ranks": [...], "size": n, "desc": s}}
    groups: dict[str, dict[str, Any]]
    #: the Kineto timing of a host ET linked by chakra_trace_link (None for PyTorch's own)
    linked: KinetoTrace | None = None


def _fail(path: str, msg: str, where: str | None = None) -> TraceFormatError:
    return TraceFormatError(msg, path, where)


def _dump_io(io: tuple, path: str, index: int) -> bytes:
    """A node's inputs/outputs as kept (:func:`.iotext.dump_io`); values orjson cannot write
    (a list nested deeper than 254 levels, integers past 64 bits) are an error naming the node."""
    try:
        return dump_io(io)
    except orjson.JSONEncodeError as e:
        raise _fail(path, f"inputs/outputs cannot be kept ({e})", f"node {index}") from None


def read_header(path: str) -> dict[str, Any]:
    """The top-level scalar fields before ``nodes`` (``schema``, ``pid``, ``time``, ``start_ts``)."""
    out: dict[str, Any] = {}
    try:
        with open_binary(path) as f:
            for prefix, event, value in ijson.parse(f, use_float=True):
                if prefix == "" and event == "map_key" and value == "nodes":
                    break
                if event in ("string", "number", "boolean") and "." not in prefix and prefix:
                    out[prefix] = value
                if prefix.startswith("nodes"):
                    break
    except (ijson.JSONError, ijson.IncompleteJSONError, OSError, EOFError, zlib.error, UnicodeError) as e:
        raise _fail(path, f"not a PyTorch execution trace ({short_error(e)})") from None
    return out



def iter_raw_nodes(path: str, decode: Callable[[bytes], list] | None = None) -> Iterator[Any]:
    """Yield the host ET's nodes as dicts, one at a time (``decode``: as :func:`iter_items`);
    TraceFormatError on broken JSON."""
    count = 0
    try:
        for node in iter_items(path, "nodes", decode):
            count += 1
            yield node
    except FileNotFoundError:
        raise _fail(path, "no such file") from None
    except (ijson.IncompleteJSONError, EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise _fail(path, broken_json(e), f"after node {count}") from None
    except ijson.JSONError as e:
        raise _fail(path, f"malformed JSON ({short_error(e)})", f"after node {count}") from None
    except UnicodeError as e:
        raise _fail(path, f"text that is not valid UTF-8 ({short_error(e)})", f"after node {count}") from None
    if count == 0:
        raise _fail(path, "no 'nodes' list: not a PyTorch execution trace")


def _attrs(node: dict, path: str, index: int) -> dict[str, Any]:
    if "attrs" in node:
        a = node["attrs"]
        try:
            if not isinstance(a, list):
                raise TypeError
            if a and type(a[0]) is not dict:  # read as attr records (:func:`_node_decoder`)
                return {x.name: x.value for x in a}
            out = {}
            for x in a:
                if "type" not in x:
                    raise KeyError
                out[x["name"]] = x["value"]
            return out
        except (TypeError, KeyError, AttributeError):
            raise _fail(path, "'attrs' must be a list of {name, type, value}", f"node {index}") from None
    # schema 1.0.1: attributes are keys of the node itself
    return {k: node[k] for k in ("rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid", "op_schema")
            if k in node}


def _io(node: dict, path: str, index: int) -> tuple[list, list, list, list, list, list]:
    """(input values, shapes, types, output values, shapes, types); a part that is missing reads
    as empty, one of another type is an error naming the node.  Parts read as their JSON text (:data:`IO_KEYS`, by
    :func:`_node_decoder`) are parsed here; nested deeper than orjson reads, they are an error
    naming the node."""
    ins, outs = _parsed(node.get("inputs"), path, index), _parsed(node.get("outputs"), path, index)
    if isinstance(ins, dict) or ins is None:
        ins = ins or {}
        outs = outs if isinstance(outs, dict) else {}
        parts = (ins.get("values"), ins.get("shapes"), ins.get("types"),
                 outs.get("values"), outs.get("shapes"), outs.get("types"))
    else:
        # schema 1.0.1: lists plus input_shapes/input_types keys
        parts = (ins, *(_parsed(node.get(k), path, index) for k in ("input_shapes", "input_types")),
                 outs, *(_parsed(node.get(k), path, index) for k in ("output_shapes", "output_types")))
    if tuple(map(type, parts)) == _SIX_LISTS:  # the usual case (JSON lists are never a subclass)
        return parts  # type: ignore[return-value]
    names = _DICT_PARTS if isinstance(ins, dict) else _LIST_PARTS
    bad = next(((k, p) for k, p in zip(names, parts) if p is not None and not isinstance(p, list)), None)
    if bad is not None:
        raise _fail(path, f"{bad[0]!r} must be a list, not {type(bad[1]).__name__}", f"node {index}")
    return tuple([p if isinstance(p, list) else [] for p in parts])  # type: ignore[return-value]


#: the parts of a node's inputs and outputs, as :func:`_io` reads them (schema 1.0.2 and later;
#: schema 1.0.1)
_DICT_PARTS = ("inputs.values", "inputs.shapes", "inputs.types", "outputs.values", "outputs.shapes", "outputs.types")
_LIST_PARTS = ("inputs", "input_shapes", "input_types", "outputs", "output_shapes", "output_types")

#: the types of the six parts when each is a list
_SIX_LISTS = (list,) * 6
#: the types of a JSON value as parsed (never a subclass of one)
_PLAIN = frozenset((dict, list, str, int, float, bool, type(None)))


def _parsed(v: Any, path: str, index: int) -> Any:
    """``v``, or the value of its JSON text when it was read as such (a ``msgspec.Raw``)."""
    if type(v) in _PLAIN:
        return v
    try:
        return orjson.loads(memoryview(v))
    except orjson.JSONDecodeError as e:
        raise _fail(path, f"inputs/outputs cannot be kept ({short_error(e)})", f"node {index}") from None


def _parent(node: dict, path: str, index: int) -> int:
    p = node.get("ctrl_deps", node.get("parent"))
    if isinstance(p, list):  # a list of the one parent, as some writers give it
        if len(p) > 1:
            raise _fail(path, f"'ctrl_deps' names {len(p)} parents; a node of the host ET has one",
                        f"node {index}")
        p = p[0] if p else -1
    if p is None:
        return -1
    if type(p) is not int:  # JSON numbers decode to int or float; true is not an id
        raise _fail(path, f"'ctrl_deps' must be a node id, not {type(p).__name__}", f"node {index}")
    return p


#: the keys of a node the conversion's pass reads as values: its identity, schema 1.0.1's
#: attributes, and the timing chakra_trace_link adds (besides ``attrs`` and :data:`IO_KEYS`)
NODE_KEYS = ("id", "name", "ctrl_deps", "parent", "rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid",
             "op_schema", "inclusive_dur", "ts", "cat", "stream")
#: the keys of a node that make its inputs/outputs, kept as their JSON text until used
IO_KEYS = ("inputs", "outputs", "input_shapes", "input_types", "output_shapes", "output_types")

#: host attributes copied to Chakra nodes (the integer ones first, then op_schema)
KEEP_ATTRS = ("rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid", "op_schema")


def _keep(attrs: dict) -> tuple:
    """The attributes copied to Chakra nodes, as a tuple (the schema text shared between nodes)."""
    get = attrs.get
    schema = get("op_schema")
    return (int64(get("rf_id")), int64(get("fw_parent")), int64(get("seq_id")), int64(get("scope")),
            int64(get("tid")), int64(get("fw_tid")), sys.intern(schema) if isinstance(schema, str) else None)


def _is_operator(name: str, attrs: dict) -> bool:
    """An ATen/c10d operator, or a compiled kernel call: Inductor's ``triton_*`` ops carry no
    ``op_schema`` but a ``kernel_backend`` (and ``kernel_file``) attribute."""
    if attrs.get("op_schema") or attrs.get("kernel_backend") or attrs.get("kernel_file") or name.startswith("triton_"):
        return True  # a schema first: most nodes have one
    if "op_schema" in attrs:  # an empty one
        return name.startswith("c10d::")
    return "::" in name and not name.startswith(_NOT_OPS)


class _Arrays:
    """Per-id integer columns that grow on demand."""

    def __init__(self) -> None:
        self.parent = array("q")
        self.rf = array("q")
        self.flags = bytearray()

    def ensure(self, i: int) -> None:
        """Grow the columns so that index ``i`` exists."""
        n = len(self.flags)
        if i >= n:
            grow = max(i + 1 - n, n, 1024)
            self.parent.frombytes(b"\xff" * 8 * grow)
            self.rf.frombytes(b"\xff" * 8 * grow)
            self.flags.extend(bytes(grow))


class _HostReader:
    """The state of one pass over a host ET's nodes (see the module docstring for the rules)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.cols = _Arrays()
        self.kept: dict[int, tuple] = {}  # id -> (name, tid, rf, attrs, io) for operator candidates
        self.raw: dict[int, tuple] = {}  # id -> (name, attrs dict, node as read, index) for the newest candidates
        self.waiting: dict[int, list[int]] = {}  # parent id -> kept children that arrived before it
        self.comms: dict[int, CommInfo] = {}  # c10d op id -> info
        self.param_comms: list[tuple[int, CommInfo]] = []  # (record_param_comms id, info)
        self.workers: list[WorkAnnotation] = []  # gloo:* / nccl:* annotations
        self.groups: dict[str, dict[str, Any]] = {}
        self.linked = LinkedTiming()
        self.record = _attr_record()  # an attribute as the typed pass reads it

    def take(self, index: int, node: Any) -> None:
        """Read one node: check its identity, record it in the columns, and classify it."""
        try:  # the usual node's identity checked in one test, without a call
            nid, name, parent = node["id"], node["name"], node.get("ctrl_deps")
        except (KeyError, TypeError):
            nid = name = parent = None
        if not (type(nid) is int and type(name) is str and type(parent) is int
                and 0 <= nid <= _ID_FLOOR and -1 <= parent <= _ID_FLOOR):
            nid, name, parent = self._identity(index, node)  # the others, and the errors
        a = node.get("attrs")
        if type(a) is list and a and type(a[0]) is self.record:  # the usual case, without a call
            attrs = {x.name: x.value for x in a}
        else:
            attrs = _attrs(node, self.path, index)
        if "inclusive_dur" in node and _linked_gpu_copy(self.linked, node, attrs, name, self.path, index):
            return
        cols = self.cols
        flags = cols.flags
        if nid >= len(flags) or parent >= len(flags):
            cols.ensure(max(nid, parent))
        if flags[nid] & F_SEEN:
            raise _fail(self.path, f"node id {nid} appears twice", f"node {index}")
        if parent == nid and name not in _ROOT_NAMES:  # PyTorch's root (process) node is its own parent
            raise _fail(self.path, f"node id {nid} ({name}) is its own parent", f"node {index}")
        cols.parent[nid] = parent if parent != nid else -1
        rf = attrs.get("rf_id")
        if type(rf) is not int and rf is not None:  # its Kineto spans would be lost
            raise _fail(self.path, f"node id {nid}: rf_id must be an integer, not {type(rf).__name__}",
                        f"node {index}")
        cols.rf[nid] = rf if rf is not None and 0 <= rf < INT64_END else -1  # node_ref(rf), without a call
        if name in _ROOT_NAMES:
            flags[nid] = F_SEEN | F_ROOT
        elif name == PG_INIT:
            self.groups = _groups(node, self.path, index)
            flags[nid] = F_SEEN
        elif attrs.get("op_schema") or _is_operator(name, attrs):
            flags[nid] = F_SEEN | self._operator(index, node, nid, name, parent, attrs)
        else:
            self._annotation(index, node, nid, name, parent, attrs)
            flags[nid] = F_SEEN

    def _identity(self, index: int, node: Any) -> tuple[int, str, int]:
        """(id, name, parent id) of a node, checked."""
        path = self.path
        try:
            nid = node["id"]
            name = node["name"]
        except (KeyError, TypeError):
            raise _fail(path, "node without 'id' and 'name'", f"node {index}") from None
        if type(nid) is not int or nid < 0:  # JSON numbers decode to int or float, never a subclass
            raise _fail(path, "node 'id' must be a non-negative integer", f"node {index}")
        if not isinstance(name, str):
            raise _fail(path, f"node 'name' must be a string, not {type(name).__name__}", f"node {index}")
        parent = node.get("ctrl_deps")
        if type(parent) is not int:  # a list, another key, or an error
            parent = _parent(node, path, index)
        if parent < -1:
            raise _fail(path, f"'ctrl_deps' must be a node id (or -1: none), not {parent}", f"node {index}")
        limit = max(_ID_FLOOR, _ID_FACTOR * (index + 1))
        if nid > limit or parent > limit:
            what = f"node id {nid}" if nid > limit else f"parent id {parent}"
            raise _fail(path, f"{what} is far beyond the {index + 1} nodes read so far (PyTorch "
                        "numbers nodes with a counter): not a PyTorch execution trace", f"node {index}")
        return nid, name, parent

    def _keep_node(self, index: int, nid: int, name: str, parent: int, attrs: dict, node: Any) -> None:
        """Keep a candidate node until its parent arrives (then it may be folded into it), as
        read: its attributes and inputs/outputs are put in compact form only when the candidates
        as read overflow their window (:meth:`compact`), so those folded away never are."""
        raw = self.raw
        raw[nid] = (name, attrs, node, index)
        if len(raw) > _RAW_WINDOW:
            self.compact()
        if parent >= 0 and not self.cols.flags[parent] & F_SEEN:
            siblings = self.waiting.get(parent)
            if siblings is None:
                self.waiting[parent] = [nid]
            else:
                siblings.append(nid)

    def _operator(self, index: int, node: Any, nid: int, name: str, parent: int, attrs: dict) -> int:
        """An operator (a c10d one is a communication anchor); returns its flags."""
        flags = F_OP
        if name[:6] == "c10d::":  # a slice: str.startswith parses its arguments the slow way
            try:
                info = comm_from_c10d(name, _io(node, self.path, index)[0])
            except ValueError as e:
                raise _fail(self.path, f"{name}: {e}", f"node {index}") from None
            if info is not None:
                self.comms[nid] = info
                flags |= F_ANCHOR
        self._keep_node(index, nid, name, parent, attrs, node)
        children = self.waiting.pop(nid, None)
        if children is not None:
            self._fold(children)
        return flags

    def _fold(self, children: list[int]) -> None:
        """Fold the candidates that arrived before their parent operator into it (comm anchors stay)."""
        flags, raw, kept = self.cols.flags, self.raw, self.kept
        for c in children:
            if not flags[c] & F_ANCHOR and raw.pop(c, None) is None:
                kept.pop(c, None)

    def compact(self) -> None:
        """Put the candidates held as read into their compact form (:func:`_keep`, and the
        inputs/outputs as text: :mod:`.iotext`)."""
        kept, rfs, path = self.kept, self.cols.rf, self.path
        for nid, (name, attrs, node, index) in self.raw.items():
            tid = attrs.get("tid", 0)
            io = _dump_io(_io(node, path, index), path, index)
            keep, rf = _keep(attrs), rfs[nid]
            if rf == keep[0]:
                rf = keep[0]  # one int object for both
            kept[nid] = (sys.intern(name), tid if isinstance(tid, int) else 0, rf, keep, io)
        self.raw.clear()

    def _annotation(self, index: int, node: Any, nid: int, name: str, parent: int, attrs: dict) -> None:
        """A node that is not an operator: ``record_param_comms``, a gloo/NCCL work annotation,
        or another annotation, which passes its waiting children up to its own parent."""
        if name == "record_param_comms":
            io = _io(node, self.path, index)
            try:
                info = comm_from_param_comms(attrs, io[0], io[3])
            except ValueError as e:
                raise _fail(self.path, f"{name}: {e}", f"node {index}") from None
            if info is not None:
                self.param_comms.append((nid, info))
                self._keep_node(index, nid, name, parent, attrs, node)
        elif name.startswith(("gloo:", "nccl:")):
            tensors = frozenset((t[0], t[1]) for t in tensors_in(_io(node, self.path, index)[0]))
            tid = attrs.get("tid", 0)
            self.workers.append(WorkAnnotation(self.cols.rf[nid], tid if isinstance(tid, int) else 0, tensors))
        moved = self.waiting.pop(nid, None)
        if moved and parent >= 0 and not self.cols.flags[parent] & F_SEEN:
            self.waiting.setdefault(parent, []).extend(moved)


def schema_of(header: dict[str, Any], path: str) -> str:
    """The host ET's ``schema`` string (``header``: :func:`read_header`'s answer); a
    :class:`TraceFormatError` when there is none."""
    schema = header.get("schema")
    if not isinstance(schema, str):
        raise _fail(path, "no 'schema' string at the top: not a PyTorch execution trace")
    return schema


def read_host_et(path: str, header: dict[str, Any] | None = None) -> HostTrace:
    """Read one host ET into a :class:`HostTrace` (see the module docstring for the rules);
    ``header`` is :func:`read_header`'s answer when the caller has it already."""
    header = read_header(path) if header is None else header
    schema = schema_of(header, path)
    reader = _HostReader(path)
    for index, node in enumerate(iter_raw_nodes(path, _node_decoder())):
        reader.take(index, node)
    reader.compact()
    host = _resolve(reader, header, schema)
    host.linked = reader.linked.as_kineto(path, host.pid)
    return host


@cache
def _node_decoder() -> Callable[[bytes], list]:
    """The batch decoder of the conversion's pass: each node with only the keys the pass reads
    (:data:`NODE_KEYS`), its inputs and outputs as their JSON text (:data:`IO_KEYS`, parsed only
    for the nodes kept: :func:`_io`), each attribute as a record of name, type and value."""
    import msgspec

    value = json_value()
    fields: dict[str, Any] = {**dict.fromkeys(NODE_KEYS, value), **dict.fromkeys(IO_KEYS, msgspec.Raw)}
    fields["attrs"] = list[_attr_record()]  # type: ignore[misc]
    return typed_decoder(keyed_type("node", fields))


@cache
def _attr_record() -> type:
    """The record an attribute is read as by :func:`_node_decoder`: its name a string (a batch
    with another name is read as plain JSON, and :func:`_attrs` takes or refuses it there)."""
    import msgspec

    value = json_value()
    return msgspec.defstruct("attr", [("name", str), ("type", value), ("value", value)], gc=False)


def _linked_gpu_copy(linked: LinkedTiming, node: dict, attrs: dict, name: str, path: str, index: int) -> bool:
    """Take the timing chakra_trace_link put on ``node``; True for a GPU activity it added."""
    tid = attrs.get("tid", 0)
    try:
        return linked.add(node, node_ref(attrs.get("rf_id")), tid if isinstance(tid, int) else 0, name)
    except (TypeError, ValueError) as e:
        raise _fail(path, f"bad timing of a chakra_trace_link node ({short_error(e)})", f"node {index}") from None


def scan_groups(path: str) -> dict[str, dict[str, Any]]:
    """The process groups of the host ET's pg-init node, found without converting the file.

    The decompressed bytes are searched for the node's name first (:func:`.needles.holds`, one
    pass shared with the rank scan); only when it is there are the nodes parsed, up to that node.
    A file that cannot be read has none (the conversion itself reports it).
    """
    if not holds(path, PG_INIT_NEEDLE):
        return {}
    for index, node in enumerate(iter_raw_nodes(path)):
        if isinstance(node, dict) and node.get("name") == PG_INIT:
            return _groups(node, path, index)
    return {}


def _groups(node: dict, path: str, index: int) -> dict[str, dict[str, Any]]:
    values = _io(node, path, index)[0]
    try:
        if not values or not isinstance(values[0], str):
            raise ValueError(f"its first input is {orjson.dumps(values[:1]).decode()[1:-1] or 'missing'}, "
                             "not the JSON text of the groups")
        items = orjson.loads(values[0])
        if not isinstance(items, list):
            raise ValueError("not a list of groups")
        out = {}
        for d in items:
            if not isinstance(d, dict):
                raise ValueError("a group is not an object")
            ranks = [_rank(r) for r in d.get("ranks") or []]
            size = _rank(d.get("group_size") or d.get("pg_size") or len(ranks))
            out[str(d["pg_name"])] = {"ranks": ranks, "size": size, "desc": str(d.get("pg_desc", ""))}
        return out
    except (orjson.JSONDecodeError, TypeError, KeyError, ValueError) as e:
        raise _fail(path, f"bad '## process_group:init ##' description ({short_error(e)})",
                    f"node {index}") from None


def _rank(v: Any) -> int:
    """A rank or group size of the pg-init description (ValueError when it is not one)."""
    if not is_rank(v):
        raise ValueError(f"{v!r} is not a rank or group size in 0..{MAX_RANKS}")
    return v


def _resolve(reader: _HostReader, header: dict[str, Any], schema: str) -> HostTrace:
    """The host trace of a finished pass: ``record_param_comms`` placed, every node assigned the
    selected node that owns it, the selected nodes as :class:`HostOp`, and the rf_id owners."""
    cols, kept, comms = reader.cols, reader.kept, reader.comms
    _place_param_comms(cols, kept, comms, reader.param_comms)
    sel = _owners(reader.path, cols)
    ops = _host_ops(kept, comms, cols.parent, sel)
    rf_owner = _rf_owners(cols, sel)
    attach_annotations(reader.workers, comms, cols.rf, {nid: kept[nid][1] for nid in comms if nid in kept})
    return HostTrace(reader.path, schema, _pid(header), ops, rf_owner, reader.groups)


def _place_param_comms(cols: _Arrays, kept: dict[int, tuple], comms: dict[int, CommInfo],
                       param_comms: list[tuple[int, CommInfo]]) -> None:
    """A ``record_param_comms`` under a c10d op refines that op's info (and is dropped); alone
    it is a communication node of its own (flagged an anchor and an operator)."""
    parent, flags = cols.parent, cols.flags
    for anchor_id, info in param_comms:
        a = parent[anchor_id]
        while a >= 0 and flags[a] & F_SEEN and not flags[a] & F_ANCHOR and not flags[a] & F_ROOT:
            a = parent[a] if parent[a] != a else -1
        if a >= 0 and flags[a] & F_ANCHOR:
            merge_param_comms(comms[a], info)
            kept.pop(anchor_id, None)
        else:
            comms[anchor_id] = info
            flags[anchor_id] |= F_ANCHOR | F_OP


def _owners(path: str, cols: _Arrays) -> array:
    """Per node id the selected node that owns it (itself or an ancestor), -1 for none: a root
    owns nothing, an anchor or an operator with no selected ancestor owns itself, any other node
    takes its parent's owner.  Parents are resolved first: in id order, as PyTorch numbers them,
    else by :func:`_owners_above`; a cycle of ctrl_deps is a :class:`TraceFormatError`."""
    n = len(cols.flags)
    parent, flags = cols.parent, cols.flags
    sel = array("q", b"\xff" * 8 * n)
    done = bytearray(n)
    for i in compress(range(n), flags):  # the ids in the file (a node's flags hold F_SEEN)
        if done[i]:
            continue
        p = parent[i]
        if p < 0:
            sel[i] = _owner(i, flags[i], -1)
        elif p < n and flags[p] and done[p]:  # the usual case: PyTorch numbers a parent before its children
            sel[i] = _owner(i, flags[i], sel[p])
        else:
            _owners_above(path, cols, sel, done, i)
            continue
        done[i] = 1
    return sel


def _owners_above(path: str, cols: _Arrays, sel: array, done: bytearray, i: int) -> None:
    """Resolve node ``i`` and its unresolved ancestors, on an explicit stack (``done``: 1 for
    the nodes resolved); a parent that the file does not have, or a cycle, is an error."""
    n = len(cols.flags)
    parent, flags = cols.parent, cols.flags
    walking: set[int] = set()
    stack = [i]
    while stack:
        j = stack[-1]
        p = parent[j]
        if p >= 0 and not (p < n and flags[p]):
            raise _missing_parent(path, j, p)
        if p >= 0 and not done[p]:
            if p in walking:
                raise _fail(path, f"the ctrl_deps of node {j} form a cycle", f"node id {j}")
            walking.add(j)
            stack.append(p)
            continue
        sel[j] = _owner(j, flags[j], sel[p] if p >= 0 else -1)
        done[j] = 1
        stack.pop()


def _missing_parent(path: str, node: int, p: int) -> TraceFormatError:
    """The error of ``node`` naming a parent ``p`` that the file does not have (its time would be
    counted beside its parent's)."""
    return _fail(path, f"node {node} names parent {p} (ctrl_deps), which the host ET does not have",
                 f"node id {node}")


def _owner(node: int, flags: int, up: int) -> int:
    """The owner of ``node`` with these flags, whose parent's owner is ``up``."""
    if flags & F_ROOT:
        return -1
    if flags & F_ANCHOR or (flags & F_OP and up < 0):
        return node
    return up


def _host_ops(kept: dict[int, tuple], comms: dict[int, CommInfo], parent: array, sel: array) -> list[HostOp]:
    """The kept nodes that own themselves, in id order, each with its parent's owner."""
    n = len(sel)
    ops: list[HostOp] = []
    for nid in sorted(kept):
        if sel[nid] != nid:
            continue
        name, tid, rf, attrs, io = kept[nid]
        p = parent[nid]
        ops.append(HostOp(nid, name, tid if isinstance(tid, int) else 0, rf, attrs, io, comms.get(nid),
                          sel[p] if 0 <= p < n else -1))
    return ops


def _rf_owners(cols: _Arrays, sel: array) -> IntMap:
    """rf_id -> the selected node that owns the node carrying it."""
    rf_owner = IntMap()
    flags = cols.flags  # an id that is not in the file has neither (-1): only those in it are set
    rf_owner.set_pairs(compress(cols.rf, flags), compress(sel, flags))
    return rf_owner


def _pid(header: dict[str, Any]) -> int | None:
    """The header's ``pid`` as an int64 (a whole float accepted), None when absent or not one."""
    pid = header.get("pid")
    if isinstance(pid, float) and pid.is_integer():
        pid = int(pid)
    return int64(pid)
