"""Converted nodes in compact form, one rank's graph, and its topological order."""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from chakra_core import (
    IDLE_NAME,
    PG_INIT_NAME,
    GlobalMetadata,
    Node,
    NodeType,
    TraceFormatError,
    add_attr,
    encode_varint,
    process_groups_json,
)

from .hostet import KEEP_ATTRS
from .ints import INT64_END, int64
from .iotext import dump_io, io_texts

__all__ = ["OutNode", "ConvertedRank", "toposort", "pg_init_node", "attr_records", "IDLE_NAME", "IDLE_ATTRS"]

IDLE_ATTRS = (("idle", True),)
_INT_KEEP = KEEP_ATTRS[:-1]  # the integer attributes; op_schema is the last


@dataclass(slots=True)
class OutNode:
    """A Chakra node in compact form (turned into a protobuf Node only when written)."""

    id: int
    name: str
    type: int
    start: int = -1  # microseconds from the trace origin, -1 when unknown
    dur: int = 0
    issued: int = -1  # when its op was issued (a communication's c10d op), -1: at its start
    ctrl: list[int] = field(default_factory=list)
    data: list[int] | tuple[()] = ()  # most nodes have none: no list each
    cpu: bool = True  # is_cpu_op
    host: tuple | None = None  # KEEP_ATTRS values of the host op (copied when written)
    extra: list[tuple[str, Any]] | tuple = ()
    io: bytes | None = None

    def attrs(self) -> Iterator[tuple[str, Any]]:
        """The node's attributes as (name, value) pairs, in the order they are written."""
        yield "is_cpu_op", self.cpu
        if self.host is not None:
            yield from _host_attrs(self.host)
        yield from self.extra

    @property
    def end(self) -> int:
        """Observed end (start + duration) in microseconds."""
        return self.start + self.dur

    def to_node(self, printed: dict[bytes, str] | None = None) -> Node:
        """The protobuf Node (``printed``: as :func:`.iotext.io_texts` takes it, else a table of
        its own)."""
        n = self._head({} if printed is None else printed)
        # the slots add_attr takes for these names (the spec's), set by one call each
        add = n.attr.add
        host = self.host
        if host is not None:
            for k, v in zip(_INT_KEEP, host):
                if type(v) is int:  # an integer attribute that is set (not None, not a bool)
                    add(name=k, int64_val=v)
            schema = host[-1]
            if isinstance(schema, str) and schema:
                add(name="op_schema", string_val=schema)
        if self.extra is IDLE_ATTRS:  # the most common extra, in add_attr's slot by one call
            add(name="idle", bool_val=True)
        else:
            for k, v in self.extra:
                add_attr(n, k, v)
        return n

    def serialized(self, records: dict[str, dict[Any, Any]]) -> bytes:
        """``to_node().SerializeToString()``, made faster for all but the nodes with attributes
        of their own (other than ``[idle]``'s): protobuf writes their fields before the
        attributes, then the attribute records (the Node's last field) are appended as bytes;
        those of the host attributes after ``rf_id`` (values that repeat from node to node) are
        encoded once and kept in ``records`` (:func:`attr_records`, one table for the nodes
        written together, which also keeps the printed shapes and types of the inputs and
        outputs).  A value of a type or range not written here takes protobuf's way: its bytes,
        or its error."""
        extra, printed = self.extra, records[_PRINTED]
        if extra and extra is not IDLE_ATTRS:
            return self.to_node(printed).SerializeToString()
        try:
            n = self._numbered()
            if self.io is not None:
                _set_io(n, self.io, printed)
            parts = [n.SerializeToString(), _CPU_RECORDS[self.cpu]]
            if self.host is not None:
                _host_records(parts, self.host, records)
        except (LookupError, TypeError, ValueError):  # one written by protobuf: its bytes, or its error
            return self.to_node(printed).SerializeToString()
        if extra:
            parts.append(_IDLE_RECORD)
        return b"".join(parts)

    def _head(self, printed: dict[bytes, str]) -> Node:
        """The protobuf Node up to its first attribute (``is_cpu_op``), inputs and outputs included
        (``printed``: as :func:`.iotext.io_texts` takes it)."""
        n = self._numbered()
        n.attr.add(name="is_cpu_op", bool_val=self.cpu)
        if self.io is not None:
            _set_io(n, self.io, printed)
        return n

    def _numbered(self) -> Node:
        """The protobuf Node of the fields before ``inputs``: id, name, type, dependencies and times."""
        start, dur = self.start, self.dur
        n = Node(id=self.id, name=self.name, type=self.type, duration_micros=dur if dur > 0 else 0, ctrl_deps=self.ctrl)
        if start >= 0:
            n.start_time_micros = start
        if self.data:
            n.data_deps.extend(self.data)
        return n


def _set_io(n: Node, io: bytes, printed: dict[bytes, str]) -> None:
    """Set the inputs and outputs of ``n`` from kept inputs/outputs ``io`` (``printed``: as
    :func:`.iotext.io_texts` takes it)."""
    iv, ish, ity, ov, osh, oty = io_texts(io, printed)
    inputs, outputs = n.inputs, n.outputs
    inputs.values, inputs.shapes, inputs.types = iv, ish, ity
    outputs.values, outputs.shapes, outputs.types = ov, osh, oty


#: the host attributes after rf_id, whose values repeat from node to node
_REPEATING = KEEP_ATTRS[1:]
#: the names of the host attributes, by their place in a host op's tuple (integers, then the schema)
_RF_ID, _FW_PARENT, _SEQ_ID, _SCOPE, _TID, _FW_TID, _SCHEMA = KEEP_ATTRS
#: the key of the printed inputs and outputs in :func:`attr_records`' table (no attribute's name)
_PRINTED = "inputs/outputs"
#: the most values per attribute name whose records are kept; others are encoded each time
_MAX_RECORDS = 4096


def attr_records() -> dict[str, dict[Any, Any]]:
    """An empty table for :meth:`OutNode.serialized`: per attribute name, value -> the encoded
    attribute record (field 10 of Node: key, length, message), and the printed shapes and types
    of inputs and outputs (:func:`.iotext.io_texts`).  Let it go with the nodes: its small
    objects, made while the nodes are written, would otherwise hold on to memory pages."""
    return {_PRINTED: {}, **{k: {} for k in _REPEATING}}


def _key(field_number: int, wire_type: int) -> bytes:
    """The key protobuf writes before a field: its number and how its value is written."""
    return encode_varint(field_number << 3 | wire_type)


_VARINT, _SIZED = 0, 2  # the wire types written here: a varint, and a length then bytes
# Node's field of the attributes (chakra_core's et_def.proto), then AttributeProto's fields written here
_ATTR = _key(10, _SIZED)
_ATTR_NAME, _INT64_VAL, _BOOL_VAL, _STRING_VAL = _key(1, _SIZED), _key(9, _VARINT), _key(27, _VARINT), _key(29, _SIZED)


def _sized(data: bytes) -> bytes:
    """``data`` after its length, as a length-delimited field holds it."""
    return encode_varint(len(data)) + data


def _int64(value: int) -> bytes:
    """An int64's varint (a negative one as its 64-bit two's complement); a ValueError past 64 bits."""
    if int64(value) is None:
        raise ValueError(f"{value} is not an int64")
    return encode_varint(value & (2 * INT64_END - 1))


def _record(name: str, value: bytes) -> bytes:
    """The record of attribute ``name`` (not empty) in a Node, ``value`` its oneof's key and value."""
    return _ATTR + _sized(_ATTR_NAME + _sized(name.encode()) + value)


_CPU_RECORDS = {cpu: _record("is_cpu_op", _BOOL_VAL + encode_varint(cpu)) for cpu in (False, True)}
_IDLE_RECORD = _record("idle", _BOOL_VAL + encode_varint(True))  # the attribute record of an [idle] node
#: an rf_id record up to its value, by the length of the value's varint (a record under 128 bytes)
_RF_ID_HEADS = {size: _record(_RF_ID, _INT64_VAL + bytes(size))[:-size] for size in range(1, 11)}


def _host_records(parts: list[bytes], host: tuple, records: dict[str, dict[Any, Any]]) -> None:
    """Append the records of the KEEP_ATTRS values of a host op that are set (the integers, and
    the schema when not empty), in the order :meth:`OutNode.to_node` adds them."""
    rf, fw_parent, seq_id, scope, tid, fw_tid, schema = host
    if type(rf) is int:
        value = encode_varint(rf) if 0 <= rf < INT64_END else _int64(rf)
        parts += (_RF_ID_HEADS[len(value)], value)
    if type(fw_parent) is int:
        parts.append(records[_FW_PARENT].get(fw_parent) or _attr_record(records, _FW_PARENT, fw_parent))
    if type(seq_id) is int:
        parts.append(records[_SEQ_ID].get(seq_id) or _attr_record(records, _SEQ_ID, seq_id))
    if type(scope) is int:
        parts.append(records[_SCOPE].get(scope) or _attr_record(records, _SCOPE, scope))
    if type(tid) is int:
        parts.append(records[_TID].get(tid) or _attr_record(records, _TID, tid))
    if type(fw_tid) is int:
        parts.append(records[_FW_TID].get(fw_tid) or _attr_record(records, _FW_TID, fw_tid))
    if isinstance(schema, str) and schema:
        parts.append(records[_SCHEMA].get(schema) or _attr_record(records, _SCHEMA, schema))


def _attr_record(records: dict[str, dict[Any, Any]], name: str, value: int | str) -> bytes:
    """The record of attribute ``name`` = ``value`` (an op_schema as a string, an integer as
    int64, the slots :meth:`OutNode.to_node` takes), not yet in ``records`` (the caller looked):
    made, and kept there while the table has room."""
    if isinstance(value, str):
        rec = _record(name, _STRING_VAL + _sized(value.encode()))
    else:
        rec = _record(name, _INT64_VAL + _int64(value))
    table = records[name]
    if len(table) < _MAX_RECORDS:
        table[value] = rec
    return rec


def _host_attrs(host: tuple) -> Iterator[tuple[str, Any]]:
    """The KEEP_ATTRS values of a host op that are set: integers, and a non-empty schema."""
    for k, v in zip(KEEP_ATTRS, host):
        if isinstance(v, int) and not isinstance(v, bool):
            yield k, v
        elif k == "op_schema" and isinstance(v, str) and v:
            yield k, v


@dataclass
class ConvertedRank:
    """One rank's converted graph: nodes in topological order, metadata, facts for checks."""

    rank: int
    nodes: list[OutNode]
    metadata: GlobalMetadata
    groups: dict[str, list[int]]
    step_us: int | None  # the recorded ProfilerStep spans, first start to last end
    warnings: list[str] = field(default_factory=list)

    def protobuf_nodes(self) -> Iterator[Node]:
        """Yield the nodes as protobuf messages."""
        printed: dict[bytes, str] = {}
        for n in self.nodes:
            yield n.to_node(printed)


def toposort(out: dict[int, OutNode]) -> list[OutNode]:
    """The nodes in dependency order, earliest issue (``issued``, else the observed start) first
    among the ready ones, then lowest id; repeated and dangling dependencies are dropped from
    the nodes.  A communication sorts by the time its op was issued, not by when gloo's worker
    started it: ranks match collectives by their order in the file, which is the issue order
    (a worker can start the first of two queued collectives after the second was issued).
    ``out`` is emptied (the order is the last use of the table, and its memory is let go); the
    tables of the order are integer arrays, and a list of each node's dependencies not yet
    ordered (small integers, which Python shares): a few bytes per node."""
    nodes = list(out.values())
    counts, first, more = _dependencies(nodes, dict(zip(out, range(len(nodes)))))
    out.clear()
    by_rank, rank = _issue_ranks(nodes)
    waiting = counts.tolist()  # read and written faster than the array's boxed integers
    del counts
    ready = [rank[i] for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[OutNode] = []
    pop, push = heapq.heappop, heapq.heappush
    while ready:
        i = by_rank[pop(ready)]
        order.append(nodes[i])
        kids: Sequence[int] | None = more.get(i)
        if kids is None:  # one dependant at most (the next node of a lane): no sequence of it
            c = first[i]
            if c >= 0:
                waiting[c] -= 1
                if not waiting[c]:
                    push(ready, rank[c])
            continue
        for c in kids:
            waiting[c] -= 1
            if not waiting[c]:
                push(ready, rank[c])
    if len(order) < len(nodes):
        raise TraceFormatError("the converted graph has a dependency cycle")
    return order


def _issue_ranks(nodes: list[OutNode]) -> tuple[array, array]:
    """The positions in (issue time, id) order, and each position's rank in it (the heap of
    ready nodes holds ranks: plain integers).  Two stable sorts on keys the nodes hold (by id,
    then by issue time) make no key object per node."""
    ids = [n.id for n in nodes]
    by_rank = sorted(range(len(nodes)), key=ids.__getitem__)
    del ids
    issue = [n.issued if n.issued >= 0 else max(n.start, 0) for n in nodes]
    by_rank.sort(key=issue.__getitem__)
    del issue
    order = array("q", by_rank)
    del by_rank
    rank = array("q", bytes(8 * len(nodes)))
    for r, i in enumerate(order):
        rank[i] = r
    return order, rank


def _dependencies(nodes: list[OutNode], pos: dict[int, int]) -> tuple[array, array, dict[int, list[int]]]:
    """Per position the number of its dependencies, and the positions that depend on it: the
    first in an array (-1: none), all of them in a dict for the positions with two or more;
    each node's lists lose repeated ids and ids not in ``pos`` (a data dependency also a
    control one is kept as control only)."""
    waiting = array("q", bytes(8 * len(nodes)))
    first = array("q", b"\xff" * 8 * len(nodes))
    more: dict[int, list[int]] = {}
    deps: tuple[int, ...]
    for i, n in enumerate(nodes):
        if not n.data and len(n.ctrl) == 1:  # the common case: the node before it on its lane
            p = pos.get(n.ctrl[0])
            if p is None:
                n.ctrl = []
                continue
            deps = (p,)
        elif not n.ctrl and not n.data:
            continue
        else:
            ctrl = n.ctrl = [d for d in dict.fromkeys(n.ctrl) if d in pos]
            data = [d for d in dict.fromkeys(n.data) if d in pos and d not in ctrl]
            n.data = data or ()
            deps = tuple(pos[d] for d in ctrl + data)
        waiting[i] = len(deps)
        for p in deps:
            if first[p] < 0:
                first[p] = i
            elif p in more:
                more[p].append(i)
            else:
                more[p] = [first[p], i]
    return waiting, first, more


def pg_init_node(nid: int, groups: dict[str, list[int]], world: int) -> OutNode:
    """The ``## process_group:init ##`` METADATA node listing every group (ASTRA-sim reads it)."""
    listed = {"0": list(range(world)), **{k: v for k, v in groups.items() if k != "0"}}
    text = process_groups_json(listed, {"0": "default_pg"})
    node = OutNode(nid, PG_INIT_NAME, NodeType.METADATA_NODE)
    node.io = dump_io(([text], [[]], ["String"], [], [], []))
    return node
