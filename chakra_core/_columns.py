"""One rank's nodes as numpy columns, decoded straight from their serialized messages.

The protobuf wire format of a run of nodes is walked for all of them at once: step k reads the
k-th field of every node that has one (a handful of array operations per step), so a node costs
no Python call of its own.  Scalars follow protobuf's rules (the last occurrence of a field
wins, a field with an unexpected wire type is an unknown field), dependencies keep their file
order (data deps, then ctrl deps, as :meth:`DepGraph.build`), and an attribute is the first of
its name (as :func:`get_attr`).  The bytes are those the reader already checked to decode; a
node carrying a group-encoded unknown field is decoded, stripped of unknown fields and walked
again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from ._attrs import attr_value
from ._errors import TraceFormatError
from ._etruns import Run, file_runs
from ._graph import DepGraph
from ._schema import AttributeProto, Node
from ._traceset import FileRank, RankTrace

__all__ = ["NodeColumns", "AttrColumn", "node_columns"]

#: nodes walked at a time (memory: a few dozen bytes per node and field of the run).
_RUN = 1 << 16
_PAD = b"\x00" * 32
_U64 = np.uint64
#: AttributeProto value slots by field number: (name, wire type of the scalar, kind)
_SLOTS: dict[int, tuple[str, int, str]] = {
    7: ("int32_val", 0, "int32"), 9: ("int64_val", 0, "int64"), 11: ("uint32_val", 0, "uint32"),
    13: ("uint64_val", 0, "uint64"), 15: ("sint32_val", 0, "sint32"), 17: ("sint64_val", 0, "sint64"),
    19: ("fixed32_val", 5, "uint32"), 21: ("fixed64_val", 1, "uint64"), 23: ("sfixed32_val", 5, "int32"),
    25: ("sfixed64_val", 1, "int64"), 27: ("bool_val", 0, "bool"), 29: ("string_val", 2, "str"),
    31: ("bytes_val", 2, "bytes"), 3: ("double_val", 1, "other"), 5: ("float_val", 5, "other"),
    **{f: (n, 2, "other") for f, n in zip(range(4, 33, 2), (
        "double_list", "float_list", "int32_list", "int64_list", "uint32_list", "uint64_list",
        "sint32_list", "sint64_list", "fixed32_list", "fixed64_list", "sfixed32_list",
        "sfixed64_list", "bool_list", "string_list", "bytes_list"))},
}
_NUMBER = {name: f for f, (name, _, _) in _SLOTS.items()}
_BOOL, _STRING = 27, 29
_WIDE = (13, 21)  # uint64_val, fixed64_val: values past int64 are kept in ``others``
_INT_KINDS = ("int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool")
_WIRE_OF = np.full(33, -1, np.int64)
#: per slot number, 1 + its index in _INT_KINDS (0: not an integer slot)
_KIND = np.zeros(33, np.int64)
for _f, (_n, _w, _k) in _SLOTS.items():
    _WIRE_OF[_f] = _w
    _KIND[_f] = _INT_KINDS.index(_k) + 1 if _k in _INT_KINDS else 0


#: the keys told apart (field << 3 | wire type); larger ones are unknown fields of both messages
_KEYS = 512
#: per key: the AttributeProto value slot it sets (0: none)
_SLOT_OF_KEY = np.zeros(_KEYS, np.int64)
for _f, (_n, _w, _k) in _SLOTS.items():
    _SLOT_OF_KEY[_f << 3 | _w] = _f
#: keys of the Node fields read: the walk's method that takes them
_NODE_FIELDS = {0x08: "_scalar", 0x18: "_scalar", 0x38: "_scalar", 0x12: "_name", 0x28: "_dep", 0x2A: "_dep",
                0x20: "_dep", 0x22: "_dep", 0x52: "_attr"}


def _sint(raw: np.ndarray) -> np.ndarray:
    """Zigzag-decoded values."""
    return (raw >> _U64(1)).view(np.int64) ^ -(raw & _U64(1)).view(np.int64)


#: how a raw uint64 (varint or fixed) becomes the slot's integer, by kind code (others: as int64)
_CONVERT = {
    1: lambda r: _int32(r),
    3: lambda r: (r & _U64(0xFFFFFFFF)).astype(np.int64),
    5: lambda r: _sint(r & _U64(0xFFFFFFFF)),
    6: _sint,
    7: lambda r: (r != 0).astype(np.int64),
}


class _GroupField(Exception):
    """A group-encoded field (wire type 3 or 4), which the walk does not skip."""


class AttrColumn:
    """One attribute name over a rank's nodes (node ``i`` is row ``i``).

    ``present``: the node has an attribute of this name (the first one counts); ``slot``: the
    AttributeProto field number of its value (0: none set); ``ints``/``is_int``: the value of an
    integer or ``bool_val`` slot (bool as 0/1) where it fits in int64; ``others``: row -> value
    (as :func:`get_attr` returns it: str, bytes, float, list, or an unsigned integer past int64)
    for the other rows with a value.  The ``get*`` methods read one row as the functions of the
    same names read a node.
    """

    def __init__(self, n: int):
        self.present = np.zeros(n, bool)
        self.slot = np.zeros(n, np.uint8)
        self.ints = np.zeros(n, np.int64)
        self.is_int = np.zeros(n, bool)
        self.others: dict[int, Any] = {}

    def get(self, i: int, default: Any = None) -> Any:
        """As :func:`get_attr` on node ``i``."""
        if not self.present[i]:
            return default
        if self.is_int[i]:
            v = int(self.ints[i])
            return bool(v) if self.slot[i] == _BOOL else v
        return self.others.get(i)

    def get_int(self, i: int, default: Any = None) -> Any:
        """As :func:`get_int` on node ``i``: any integer slot (bool as 0/1), else ``default``."""
        if self.is_int[i]:
            return int(self.ints[i])
        return self.others[i] if self.slot[i] in _WIDE else default

    def get_str(self, i: int, default: Any = None) -> Any:
        """As :func:`get_str` on node ``i``: the string (integers in decimal), else ``default``."""
        slot = self.slot[i]
        if slot == _STRING:
            return self.others[i]
        if self.is_int[i] and slot != _BOOL:
            return str(int(self.ints[i]))
        return str(self.others[i]) if slot in _WIDE else default

    def get_bool(self, i: int, default: bool | None = None) -> bool | None:
        """As :func:`get_bool` on node ``i``: ``bool_val`` or any integer slot, else ``default``."""
        v = self.get_int(i)
        return default if v is None else bool(v)

    @classmethod
    def joined(cls, parts: list[AttrColumn], bases: list[int]) -> AttrColumn:
        """The column of consecutive runs (``bases``: each run's first row)."""
        col = cls(0)
        col.present = np.concatenate([p.present for p in parts])
        col.slot = np.concatenate([p.slot for p in parts])
        col.ints = np.concatenate([p.ints for p in parts])
        col.is_int = np.concatenate([p.is_int for p in parts])
        for p, base in zip(parts, bases):
            col.others.update({base + i: v for i, v in p.others.items()})
        return col


class NodeColumns:
    """A rank's nodes in file order as numpy arrays.

    ``ids`` (uint64), ``types`` (int64, the NodeType value), ``duration_micros`` (uint64);
    node ``i`` depends on the ids ``dep_ids[dep_ptr[i]:dep_ptr[i+1]]`` (data deps, then ctrl
    deps) and is named ``name_bytes[name_ptr[i]:name_ptr[i+1]]`` (UTF-8, checked);
    ``attrs[name]`` is the :class:`AttrColumn` of each attribute name asked for.
    """

    def __init__(self, ids: np.ndarray, types: np.ndarray, duration_micros: np.ndarray,
                 dep_ptr: np.ndarray, dep_ids: np.ndarray, name_ptr: np.ndarray, name_bytes: np.ndarray,
                 attrs: dict[str, AttrColumn]):
        self.ids = ids
        self.types = types
        self.duration_micros = duration_micros
        self.dep_ptr = dep_ptr
        self.dep_ids = dep_ids
        self.name_ptr = name_ptr
        self.name_bytes = name_bytes
        self.attrs = attrs

    def __len__(self) -> int:
        return len(self.ids)

    def graph(self, order: np.ndarray | None = None) -> DepGraph:
        """The rank's :class:`DepGraph` (positions in file order, or in ``order``)."""
        return DepGraph(self.ids, self.dep_ptr, self.dep_ids, order=order)

    def name(self, i: int) -> str:
        """The name of node ``i``."""
        return self.name_bytes[self.name_ptr[i]:self.name_ptr[i + 1]].tobytes().decode()

    def names_in(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(name_ptr, name_bytes)`` with the nodes in ``order`` (positions)."""
        length = np.diff(self.name_ptr)[order]
        return _offsets(length), _gather(self.name_bytes, self.name_ptr[:-1][order], length)


def node_columns(rt: RankTrace, attrs: Iterable[str] = ()) -> NodeColumns:
    """The :class:`NodeColumns` of rank ``rt`` with the attributes named in ``attrs``, in one
    pass over its serialized nodes (an ``.et`` file's bytes as they are, a chunk of 1 MiB
    at a time; other ranks' nodes serialized).

    The wire structure of every node and attribute message walked is checked (a TraceFormatError
    names the file and node); nested messages that are not read (``inputs``/``outputs``, an
    attribute not asked for) are not decoded, so a damaged one goes unnoticed here: ``chakra
    validate`` decodes everything.
    """
    names = tuple(dict.fromkeys(attrs))
    where = rt.label
    runs = [_walk_run(run, names, where) for run in _runs(rt)]
    return _join(runs, names)


def _runs(rt: RankTrace) -> Iterator[Run]:
    """The rank's node messages in runs."""
    if isinstance(rt, FileRank):
        yield from file_runs(rt.file)
        return
    index = 0
    messages: list[bytes] = []
    for batch in rt.batches():
        messages += [n.SerializeToString() for n in batch]
        if len(messages) >= _RUN:
            yield _run_of(messages, index)
            index += len(messages)
            messages = []
    if messages:
        yield _run_of(messages, index)


def _run_of(messages: list[bytes], index: int) -> Run:
    sizes = np.fromiter(map(len, messages), np.int64, len(messages))
    return b"".join(messages), np.cumsum(sizes) - sizes, sizes, index, -1


def _walk_run(run: Run, names: tuple[str, ...], where: str) -> NodeColumns:
    """Columns of one run of node messages."""
    data, start, sizes, index, _ = run
    try:
        return _NodeWalk(_Bytes(data), data, start, start + sizes, names, where, index).columns()
    except _GroupField:
        data, start, end = _plain(data, start, sizes, where, index)
        return _walk_run((data, start, end - start, index, -1), names, where)


def _plain(data: bytes, start: np.ndarray, sizes: np.ndarray, where: str,
           index: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    """A run's messages re-serialized without unknown fields: (bytes, starts, ends)."""
    spans = enumerate(zip(start.tolist(), sizes.tolist()))
    plain = [_strip(data[s:s + z], where, index + k) for k, (s, z) in spans]
    joined, at, length, _, _ = _run_of(plain, index)
    return joined, at, at + length


def _strip(message: bytes, where: str, index: int) -> bytes:
    """A node message re-serialized without its unknown fields."""
    try:
        node = Node.FromString(message)
    except DecodeError as e:
        raise TraceFormatError(f"node #{index} is not a Chakra node message ({e})", where) from None
    node.DiscardUnknownFields()
    return node.SerializeToString()


class _Bytes:
    """A run's bytes (zero-padded) as ``u8`` and, at every offset, the little-endian 8-byte word
    starting there (an unaligned strided view, no copy)."""

    def __init__(self, data: bytes):
        padded = data + _PAD
        self.u8 = np.frombuffer(padded, np.uint8)
        self.words = np.ndarray((len(padded) - 7,), "<u8", buffer=padded, strides=(1,))


def _varints(b: _Bytes, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varints starting at ``pos``: (values as uint64, byte lengths; 11 for a varint
    that does not end within 10 bytes)."""
    buf = b.u8
    first = buf[pos]
    val = (first & 0x7F).astype(_U64)
    ln = np.ones(len(pos), np.int64)
    idx = np.flatnonzero(first & 0x80)
    shift = 7
    while idx.size and shift < 70:
        bb = buf[pos[idx] + ln[idx]]
        val[idx] |= (bb & 0x7F).astype(_U64) << _U64(shift)
        ln[idx] += 1
        idx = idx[(bb & 0x80) != 0]
        shift += 7
    ln[idx] = 11
    return val, ln


class _BadWire(Exception):
    """Message ``row`` of a walk is not well-formed protobuf."""

    def __init__(self, row: int, what: str):
        super().__init__(what)
        self.row = row
        self.what = what


#: per wire type: whether a varint follows the key (0, 2), the width of a fixed value (1, 5),
#: and whether the type is not one protobuf writes (6, 7; groups 3 and 4 are told apart)
_HAS_VARINT = np.array([1, 0, 1, 0, 0, 0, 0, 0], np.int64)
_FIXED = np.array([0, 8, 0, 0, 0, 4, 0, 0], np.int64)
_NO_WIRE = np.array([0, 0, 0, 0, 0, 0, 1, 1], bool)
#: longer than any message: a length past it runs past its message
_FAR = _U64(1 << 40)


def _fields(buf: _Bytes, start: np.ndarray, end: np.ndarray) -> Iterator[tuple[np.ndarray, ...]]:
    """Walk messages ``buf.u8[start[i]:end[i]]`` one field of each at a time, yielding
    ``(rows, keys, varint values, value positions)``: a key is ``field << 3 | wire type``;
    for wire type 0 the value, for 2 the length (the payload starts at the position), for 1
    and 5 the position of the fixed-width value.  Raises :class:`_BadWire` on the first
    message that is not well-formed, :class:`_GroupField` on a group."""
    rows = np.flatnonzero(start < end)
    pos, stop = start[rows], end[rows]
    while rows.size:
        key, kl = _varints(buf, pos)
        key = key.astype(np.int64)
        wire = key & 7
        if ((wire == 3) | (wire == 4)).any():
            raise _GroupField
        p = pos + kl
        val, vl = _varints(buf, p)
        at = p + vl * _HAS_VARINT[wire]
        length = np.where(wire == 2, np.minimum(val, _FAR), _U64(0)).astype(np.int64)
        nxt = at + _FIXED[wire] + length
        bad = (nxt > stop) | (key < 8) | _NO_WIRE[wire] | (kl > 10)
        over = vl > 10
        if over.any():
            bad |= over & (_HAS_VARINT[wire] == 1)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            odd = key[k] < 8 or _NO_WIRE[wire[k]]
            raise _BadWire(int(rows[k]), f"field {int(key[k] >> 3)}, wire type {int(wire[k])}" if odd else
                           "a varint over 10 bytes" if kl[k] > 10 or over[k] else
                           "a field runs past the end of its message")
        yield rows, key, val, at
        keep = nxt < stop
        rows, pos, stop = rows[keep], nxt[keep], stop[keep]


def _by_key(keys: np.ndarray) -> Iterator[tuple[int, slice | np.ndarray]]:
    """``(key, selection)`` for each key of a step (keys past the table together as its last);
    the selection is every row when a step holds one key, the usual case."""
    small = np.minimum(keys, _KEYS - 1)
    present = np.flatnonzero(np.bincount(small, minlength=_KEYS)).tolist()
    if len(present) == 1:
        yield present[0], slice(None)
        return
    for key in present:
        yield key, small == key


class _NodeWalk:
    """The top-level fields of one run of Node messages."""

    def __init__(self, b: _Bytes, data: bytes, start: np.ndarray, end: np.ndarray,
                 names: tuple[str, ...], where: str, index: int):
        self.bytes, self.buf, self.data, self.names = b, b.u8, data, names
        self.where, self.index = where, index
        n = len(start)
        self.n = n
        self.ids = np.zeros(n, _U64)
        self.types = np.zeros(n, np.int64)
        self.dur = np.zeros(n, _U64)
        self.name_at = np.zeros(n, np.int64)
        self.name_len = np.zeros(n, np.int64)
        self.deps: list[tuple[np.ndarray, ...]] = []  # (owner, ctrl flag, values)
        self.attr_spans: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (owner, start, end)
        try:
            for rows, keys, val, at in _fields(b, start, end):
                self._take(rows, keys, val, at)
        except _BadWire as e:
            raise self.bad(e.row, e.what) from None

    def bad(self, node: int, what: str) -> TraceFormatError:
        """The error for node ``node`` of the run."""
        return TraceFormatError(f"node #{self.index + node} is not a Chakra node message ({what})", self.where)

    def _take(self, rows, keys, val, at) -> None:
        for key, sel in _by_key(keys):
            if key in _NODE_FIELDS:
                getattr(self, _NODE_FIELDS[key])(rows[sel], val[sel], at[sel], key)

    def _scalar(self, rows, val, at, key) -> None:
        if key == 0x08:
            self.ids[rows] = val
        elif key == 0x38:
            self.dur[rows] = val
        else:
            self.types[rows] = _int32(val)

    def _name(self, rows, val, at, key) -> None:
        self.name_at[rows] = at
        self.name_len[rows] = val.astype(np.int64)

    def _dep(self, rows, val, at, key) -> None:
        ctrl = np.full(len(rows), key >> 3 == 4)
        if key & 7 == 0:
            self.deps.append((rows, ctrl, val, np.ones(len(rows), np.int64)))
            return
        try:
            values, counts = _packed(self.buf, at, val.astype(np.int64))
        except _BadWire as e:
            raise _BadWire(int(rows[e.row]), e.what) from None
        self.deps.append((rows, ctrl, values, counts))

    def _attr(self, rows, val, at, key) -> None:
        self.attr_spans.append((rows, at, at + val.astype(np.int64)))

    def columns(self) -> NodeColumns:
        ptr, dep_ids = self._dep_csr()
        attrs = _AttrWalk(self, *self._spans()).columns() if self.names else {}
        name_bytes = _gather(self.buf, self.name_at, self.name_len)
        if (name_bytes >= 0x80).any():
            self._check_utf8(name_bytes)
        return NodeColumns(self.ids, self.types, self.dur, ptr, dep_ids, _offsets(self.name_len), name_bytes, attrs)

    def _check_utf8(self, name_bytes: np.ndarray) -> None:
        ptr = _offsets(self.name_len)
        for k in np.flatnonzero(np.add.reduceat(name_bytes >= 0x80, ptr[:-1]) * (self.name_len > 0)).tolist():
            try:
                name_bytes[ptr[k]:ptr[k + 1]].tobytes().decode()
            except UnicodeDecodeError as e:
                raise self.bad(k, f"name: {e}") from None

    def _dep_csr(self) -> tuple[np.ndarray, np.ndarray]:
        ptr = np.zeros(self.n + 1, np.int64)
        if not self.deps:
            return ptr, np.zeros(0, _U64)
        owner = np.concatenate([np.repeat(o, c) for o, _, _, c in self.deps])
        ctrl = np.concatenate([np.repeat(f, c) for _, f, _, c in self.deps])
        values = np.concatenate([v for _, _, v, _ in self.deps])
        key = owner * 2 + ctrl
        np.cumsum(np.bincount(owner, minlength=self.n), out=ptr[1:])
        if (key[1:] >= key[:-1]).all():  # one dependency field per node, the usual case
            return ptr, values
        return ptr, values[np.argsort(key, kind="stable")]

    def _spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.attr_spans:
            z = np.zeros(0, np.int64)
            return z, z, z
        return tuple(np.concatenate(c) for c in zip(*self.attr_spans))  # type: ignore[return-value]


def _offsets(length: np.ndarray) -> np.ndarray:
    """CSR offsets (n+1, int64) of rows of ``length`` items."""
    out = np.zeros(len(length) + 1, np.int64)
    np.cumsum(length, out=out[1:])
    return out


def _gather(flat: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The slices ``flat[start[i]:start[i]+length[i]]`` concatenated."""
    total = int(length.sum())
    if not total:
        return np.zeros(0, flat.dtype)
    first = np.cumsum(length) - length
    return flat[np.repeat(start - first, length) + np.arange(total)]


def _int32(v: np.ndarray) -> np.ndarray:
    """uint64 varint values read as int32 (protobuf keeps the low 32 bits)."""
    return (v & _U64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)


def _packed(buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varints packed in each span ``buf[start:start+length]``: (all values in span order,
    count per span).  Raises :class:`_BadWire` (row: the span) on a varint cut short or too long."""
    total = int(length.sum())
    if not total:
        return np.zeros(0, _U64), np.zeros(len(start), np.int64)
    first = np.cumsum(length) - length
    b = buf[np.repeat(start - first, length) + np.arange(total)]
    last = (b & 0x80) == 0
    heads = np.flatnonzero(np.concatenate(([True], last[:-1])))
    within = np.arange(total) - np.repeat(heads, np.diff(np.append(heads, total)))
    ends = np.concatenate(([0], np.cumsum(last)))
    span_end = first + length
    cut = (length > 0) & ~last[np.maximum(span_end - 1, 0)]
    if cut.any() or (within >= 10).any():
        k = np.flatnonzero(cut)[0] if cut.any() else np.searchsorted(span_end, np.flatnonzero(within >= 10)[0], "right")
        raise _BadWire(int(k), "a packed dependency list ends inside a varint or holds one over 10 bytes")
    values = np.add.reduceat((b & 0x7F).astype(_U64) << (7 * within).astype(_U64), heads)
    return values, ends[span_end] - ends[first]


class _AttrWalk:
    """The attributes named in the walk's ``names``: the first of each name per node."""

    def __init__(self, nodes: _NodeWalk, owner: np.ndarray, start: np.ndarray, end: np.ndarray):
        self.nodes = nodes
        self.owner, self.start, self.end = owner, start, end
        k = len(owner)
        self.name_at = np.zeros(k, np.int64)
        self.name_len = np.zeros(k, np.int64)
        self.slot = np.zeros(k, np.int64)
        self.value = np.zeros(k, _U64)
        self.value_at = np.zeros(k, np.int64)
        self.value_len = np.zeros(k, np.int64)
        self.values = np.zeros(k, np.int64)
        try:
            self._walk()
        except _BadWire as e:
            raise nodes.bad(int(owner[e.row]), f"attribute: {e.what}") from None

    def _walk(self) -> None:
        for rows, keys, val, at in _fields(self.nodes.bytes, self.start, self.end):
            for key, sel in _by_key(keys):
                r = rows[sel]
                if key == 0x0A:
                    self.name_at[r] = at[sel]
                    self.name_len[r] = val[sel].astype(np.int64)
                elif _SLOT_OF_KEY[key]:
                    self.slot[r] = _SLOT_OF_KEY[key]
                    self.value[r] = val[sel]
                    self.value_at[r] = at[sel]
                    self.value_len[r] = val[sel].astype(np.int64) if key & 7 == 2 else 0
                    self.values[r] += 1

    def columns(self) -> dict[str, AttrColumn]:
        words = self._name_words()
        return {name: self._column(self._named(name, words)) for name in self.nodes.names}

    def _name_words(self) -> np.ndarray:
        """Each attribute's name as two little-endian uint64 words of its first 16 bytes (zero
        past its end)."""
        words = self.nodes.bytes.words
        out = np.empty((len(self.name_at), 2), _U64)
        for half in (0, 1):
            w = words[self.name_at + 8 * half]
            left = np.clip(self.name_len - 8 * half, 0, 8)
            out[:, half] = np.where(left >= 8, w, w & ((_U64(1) << (8 * left).astype(_U64)) - _U64(1)))
        return out

    def _named(self, name: str, words: np.ndarray) -> np.ndarray:
        """Attribute indices (ascending) whose name is ``name``."""
        raw = name.encode()
        head = np.frombuffer(raw[:16].ljust(16, b"\0"), _U64)
        hits = np.flatnonzero((self.name_len == len(raw)) & (words[:, 0] == head[0]) & (words[:, 1] == head[1]))
        if len(raw) > 16 and hits.size:
            tail = np.frombuffer(raw[16:], np.uint8)
            got = self.nodes.buf[self.name_at[hits, None] + 16 + np.arange(len(tail))]
            hits = hits[(got == tail).all(axis=1)]
        return hits

    def _column(self, hits: np.ndarray) -> AttrColumn:
        col = AttrColumn(self.nodes.n)
        owners = self.owner[hits]
        if owners.size and np.bincount(owners).max() > 1:  # a name repeated in a node: its first
            order = np.argsort(owners, kind="stable")
            owners, first = np.unique(owners[order], return_index=True)
            hits = hits[order][first]
        col.present[owners] = True
        col.slot[owners] = self.slot[hits]
        fits = self._ints(col, owners, hits)
        rest = ~fits & (self.values[hits] > 0)
        for row, k in zip(owners[rest].tolist(), hits[rest].tolist()):
            slot, value = self._python_value(k)
            col.slot[row] = slot
            if slot == _BOOL or (slot and _SLOTS[slot][2] in _INT_KINDS and slot not in _WIDE):
                col.ints[row], col.is_int[row] = int(value), True
            elif slot:
                col.others[row] = value
        return col

    def _ints(self, col: AttrColumn, owners: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Fill the integer values of attributes ``a`` (of nodes ``owners``) held once in an
        integer or bool slot; return which of them were."""
        slot = self.slot[a]
        kind = _KIND[slot]
        raw = self.value[a]
        fixed = (kind > 0) & (_WIRE_OF[slot] != 0)
        if fixed.any():
            raw[fixed] = self._fixed(a[fixed])
        v = raw.view(np.int64).copy()
        for code, convert in _CONVERT.items():
            m = kind == code
            if m.any():
                v[m] = convert(raw[m])
        fits = (self.values[a] == 1) & (kind > 0) & ~((kind == _KIND[13]) & (raw >= _U64(1 << 63)))
        col.ints[owners[fits]] = v[fits]
        col.is_int[owners[fits]] = True
        return fits

    def _fixed(self, k: np.ndarray) -> np.ndarray:
        """The little-endian fixed-width value (4 or 8 bytes) of attributes ``k``."""
        w = self.nodes.bytes.words[self.value_at[k]]
        return np.where(_WIRE_OF[self.slot[k]] == 5, w & _U64(0xFFFFFFFF), w)

    def _python_value(self, k: int) -> tuple[int, Any]:
        """The slot number and value of attribute ``k`` (as :func:`attr_value` gives it; slot 0:
        none set)."""
        data = self.nodes.data
        try:
            if self.values[k] == 1 and self.slot[k] == _STRING:
                at = int(self.value_at[k])
                return _STRING, data[at:at + int(self.value_len[k])].decode()
            slot, value = attr_value(AttributeProto.FromString(data[int(self.start[k]):int(self.end[k])]))
        except (UnicodeDecodeError, DecodeError) as e:
            raise self.nodes.bad(int(self.owner[k]), f"attribute: {e}") from None
        return (_NUMBER[slot], value) if slot is not None else (0, None)


def _join(runs: list[NodeColumns], names: tuple[str, ...]) -> NodeColumns:
    """The columns of consecutive runs as one."""
    if len(runs) == 1:
        return runs[0]
    if not runs:
        z, one = np.zeros(0, _U64), np.zeros(1, np.int64)
        return NodeColumns(z, np.zeros(0, np.int64), z, one, z, one, np.zeros(0, np.uint8),
                           {name: AttrColumn(0) for name in names})
    bases = np.cumsum([0] + [len(r) for r in runs[:-1]]).tolist()
    return NodeColumns(np.concatenate([r.ids for r in runs]), np.concatenate([r.types for r in runs]),
                       np.concatenate([r.duration_micros for r in runs]), _join_ptr([r.dep_ptr for r in runs]),
                       np.concatenate([r.dep_ids for r in runs]), _join_ptr([r.name_ptr for r in runs]),
                       np.concatenate([r.name_bytes for r in runs]),
                       {name: AttrColumn.joined([r.attrs[name] for r in runs], bases) for name in names})


def _join_ptr(ptrs: list[np.ndarray]) -> np.ndarray:
    """CSR offsets of consecutive runs as one."""
    base = np.cumsum([0] + [int(p[-1]) for p in ptrs[:-1]])
    return np.concatenate([np.zeros(1, np.int64)] + [p[1:] + b for p, b in zip(ptrs, base)])
