"""One rank's nodes as numpy columns, decoded straight from their serialized messages.

A run of node messages is read by one loop (:func:`._wirekernels.walk_nodes`), compiled so that a
node costs no Python call of its own, or run as Python for a small rank (no numba to load:
:data:`COMPILED_FROM`).  Scalars follow protobuf's rules (the last occurrence of
a field wins, a field with an unexpected wire type is an unknown field), dependencies keep their
file order (data deps, then ctrl deps, as :meth:`DepGraph.build`), and an attribute is the first
of its name (as :func:`get_attr`).  The bytes are those the reader already checked to decode; a
node carrying a group-encoded unknown field is decoded, stripped of unknown fields and walked
again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from chakra_core.base._errors import TraceFormatError
from chakra_core.base._jitchoice import compiled_worthwhile
from chakra_core.base._kernels import INSTALLED, chosen, compiled
from chakra_core.io import _wirekernels as wire
from chakra_core.io._etruns import WHOLE_CHUNK, Run, file_runs
from chakra_core.io._rundecode import run_decodes
from chakra_core.io._schema import AttributeProto, Node
from chakra_core.trace._attrs import attr_value
from chakra_core.trace._graph import DepGraph
from chakra_core.trace._traceset import FileRank, RankTrace

__all__ = ["NodeColumns", "AttrColumn", "node_columns", "column_runs", "COMPILED_FROM"]

#: a rank's ``.et`` file of at least this many bytes is walked by the compiled loop unless told
#: otherwise (as Python the walk takes about 0.4 s a MB; loading numba and its first calls about 0.6 s)
COMPILED_FROM = 1 << 20

#: nodes walked at a time when they are not read from a file (memory: a few dozen bytes a node)
_RUN = 1 << 16
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
#: per slot number, 1 + its index in _INT_KINDS (0: not an integer slot): the codes the walk's
#: integer reading takes (:func:`._wirekernels.walk_nodes`)
_KIND = np.zeros(33, np.int64)
for _f, (_n, _w, _k) in _SLOTS.items():
    _KIND[_f] = _INT_KINDS.index(_k) + 1 if _k in _INT_KINDS else 0


#: the keys told apart (field << 3 | wire type); larger ones are unknown fields of both messages
_KEYS = 512
#: per key: the AttributeProto value slot it sets (0: none)
_SLOT_OF_KEY = np.zeros(_KEYS, np.int64)
for _f, (_n, _w, _k) in _SLOTS.items():
    _SLOT_OF_KEY[_f << 3 | _w] = _f


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
    ``attrs[name]`` is the :class:`AttrColumn` of each attribute name asked for; ``flags``
    (uint8) holds per node the bits 1 (an attribute name asked for occurs more than once: the
    column holds the first), 2 (an attribute holds a field this schema does not know) and 4 (the
    node was read without its unknown fields).  ``compiled``: the loops run compiled (numba) for
    these columns, else as Python.
    """

    def __init__(self, ids: np.ndarray, types: np.ndarray, duration_micros: np.ndarray,
                 dep_ptr: np.ndarray, dep_ids: np.ndarray, name_ptr: np.ndarray, name_bytes: np.ndarray,
                 attrs: dict[str, AttrColumn], flags: np.ndarray | None = None, compiled: bool = True):
        self.ids = ids
        self.types = types
        self.duration_micros = duration_micros
        self.dep_ptr = dep_ptr
        self.dep_ids = dep_ids
        self.name_ptr = name_ptr
        self.name_bytes = name_bytes
        self.attrs = attrs
        self.flags = np.zeros(len(ids), np.uint8) if flags is None else flags
        self.compiled = compiled

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
        return _offsets(length), _gather(self.name_bytes, self.name_ptr[:-1][order], length, self.compiled)


def node_columns(rt: RankTrace, attrs: Iterable[str] = (), compile_it: bool | None = None) -> NodeColumns:
    """The :class:`NodeColumns` of rank ``rt`` with the attributes named in ``attrs``, in one
    pass over its serialized nodes (an ``.et`` file's bytes as they are, 64 MiB at a time:
    the rank is kept whole, so in as few runs as its size allows; other ranks' nodes serialized).
    ``compile_it``: the loops run compiled (numba), else as Python, with the same columns; None:
    compiled when numba is installed and either loaded already or ``rt`` is not a file or a file
    of :data:`COMPILED_FROM` bytes or more.

    The wire structure of every node and attribute message walked is checked (a TraceFormatError
    names the file and node); nested messages that are not read (``inputs``/``outputs``, an
    attribute not asked for) are not decoded, so a damaged one goes unnoticed here.
    """
    names = tuple(dict.fromkeys(attrs))
    if compile_it is None:
        compile_it = compiled_worthwhile(rt.file, COMPILED_FROM) if isinstance(rt, FileRank) else INSTALLED
    runs = _runs(rt, WHOLE_CHUNK, compile_it)
    return _join([_walk_run(run, names, rt.label, compile_it) for run in runs], names, compile_it)


def column_runs(rt: RankTrace, attrs: Iterable[str] = (), decoded: bool = False) -> Iterator[NodeColumns]:
    """:func:`node_columns` a run of nodes at a time (a chunk of 1 MiB of an ``.et`` file, or
    65,536 nodes of another rank), in file order: memory for one run, not for the rank.

    With ``decoded``, every node message of a file is also decoded whole by protobuf (a run in
    one call, :func:`chakra_core.io._rundecode.run_decodes`), nested messages included; a run
    that does not decode raises a TraceFormatError (without the node: read the rank node by
    node for that)."""
    names = tuple(dict.fromkeys(attrs))
    for run in _runs(rt):
        if decoded and isinstance(rt, FileRank) and not run_decodes(run):
            raise TraceFormatError(f"a node message from node #{run[3]} on does not decode", rt.label)
        yield _walk_run(run, names, rt.label, True)


def _runs(rt: RankTrace, chunk: int | None = None, compile_it: bool = True) -> Iterator[Run]:
    """The rank's node messages in runs (of a file: ``chunk`` bytes each, 1 MiB by default)."""
    if isinstance(rt, FileRank):
        yield from file_runs(rt.file, chunk, compile_it)
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


def _in_place(data: bytes, start: np.ndarray, end: np.ndarray, flat: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """The compiled walk's buffer for the messages ``data[start:end]``: ``data`` itself when that
    is safe, else a copy padded with :data:`wire.PAD` (64 MB more for a 64 MB rank, and its pages
    faulted in). The walk reads past a message's end only in a field that runs past it, and then
    refuses the message; so the messages ending within the pad's length of the end of ``data``
    are walked first on a padded copy of their own bytes, and when none is refused no read of
    the whole walk leaves ``data``."""
    tail = int(np.searchsorted(end, len(data) - len(wire.PAD), side="right"))
    if tail < len(end):
        lo = int(start[tail])
        piece = wire.padded(data[lo:])
        if compiled(wire.walk_nodes)(piece, start[tail:] - lo, end[tail:] - lo, flat, ptr, _SLOT_OF_KEY, _KIND)[0]:
            return wire.padded(data)
    return np.frombuffer(data, np.uint8)


def _walk_run(run: Run, names: tuple[str, ...], where: str, compile_it: bool) -> NodeColumns:
    """Columns of one run of node messages (``compile_it``: by the compiled loops)."""
    data, start, sizes, index, _ = run
    flat, ptr = _name_table(names)
    end = start + sizes
    if compile_it:
        buf = _in_place(data, start, end, flat, ptr)
        walked = compiled(wire.walk_nodes)(buf, start, end, flat, ptr, _SLOT_OF_KEY, _KIND)
    else:  # the interpreted loop reads Python ints fastest: bytes through memoryviews, positions in lists
        buf = wire.padded(data)
        walked = wire.walk_nodes(buf.data, start.tolist(), end.tolist(), flat.data, ptr.tolist(),
                                 _SLOT_OF_KEY.tolist(), _KIND.tolist())
    status, (row, key), nodes, deps, (hits, hit_ptr) = walked
    if status in (wire.GROUP, wire.GROUP + wire.IN_ATTRIBUTE):
        data, start, end = _plain(data, start, sizes, where, index)
        cols = _walk_run((data, start, end - start, index, -1), names, where, compile_it)
        cols.flags |= wire.FLAG_STRIPPED
        return cols
    if status:
        raise _bad(where, index + row, _wire_error(status, key))
    ids, types, dur, name_at, name_len, flags = nodes
    name_bytes, name_ptr = _gather(buf, name_at, name_len, compile_it), _offsets(name_len)
    if (name_bytes >= 0x80).any():
        _check_utf8(name_bytes, name_ptr, where, index)
    attrs = _columns(len(ids), names, hits, hit_ptr, data, where, index, compile_it)
    return NodeColumns(ids, types, dur, deps[0], deps[1], name_ptr, name_bytes, attrs, flags, compile_it)


def _name_table(names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The attribute names asked for as UTF-8 bytes in CSR form."""
    raw = [n.encode() for n in names]
    return np.frombuffer(b"".join(raw), np.uint8), _offsets(np.array([len(r) for r in raw], np.int64))


def _wire_error(status: int, key: int) -> str:
    """What the walk's status says of the field with ``key``."""
    inside = status > wire.IN_ATTRIBUTE
    status -= wire.IN_ATTRIBUTE if inside else 0
    what = (f"field {key >> 3}, wire type {key & 7}" if status == wire.BAD_FIELD else
            "a key over 5 bytes or a varint over 10 bytes" if status == wire.BAD_VARINT else
            "a field runs past the end of its message" if status == wire.BAD_PAST else
            "a packed dependency list ends inside a varint or holds one over 10 bytes")
    return f"attribute: {what}" if inside else what


def _bad(where: str, node: int, what: str) -> TraceFormatError:
    """The error for node ``node`` of a rank."""
    return TraceFormatError(f"node #{node} is not a Chakra node message ({what})", where)


def _check_utf8(name_bytes: np.ndarray, ptr: np.ndarray, where: str, index: int) -> None:
    """Raise on the first name (``name_bytes[ptr[k]:ptr[k+1]]``) that is not UTF-8."""
    high = np.flatnonzero(name_bytes >= 0x80)
    # the name holding each such byte (the last of equal offsets: empty names hold none)
    for k in np.unique(np.searchsorted(ptr, high, side="right") - 1).tolist():
        try:
            name_bytes[ptr[k]:ptr[k + 1]].tobytes().decode()
        except UnicodeDecodeError as e:
            raise _bad(where, index + k, f"name: {e}") from None


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
        raise _bad(where, index, str(e)) from None
    node.DiscardUnknownFields()
    return node.SerializeToString()


def _columns(n: int, names: tuple[str, ...], hits: np.ndarray, hit_ptr: np.ndarray, data: bytes, where: str,
             index: int, compile_it: bool) -> dict[str, AttrColumn]:
    """The :class:`AttrColumn` of each name from the walk's hit columns (one hit per node and
    name; those of name ``j`` at ``hit_ptr[j]:hit_ptr[j+1]``): the arrays of every name filled at
    once, as rows of one array per field; values that are not an integer within int64 read per
    name (``compile_it``: by the compiled loops)."""
    shape = (len(names), n)
    present, slot = np.zeros(shape, bool), np.zeros(shape, np.uint8)
    ints, is_int = np.zeros(shape, np.int64), np.zeros(shape, bool)
    cols = {name: _column_of(present[j], slot[j], ints[j], is_int[j]) for j, name in enumerate(names)}
    if not hits.shape[1]:
        return cols
    name, owners = hits[wire.HIT_NAME], hits[wire.HIT_ROW]
    present[name, owners] = True
    slot[name, owners] = hits[wire.HIT_SLOT]
    fits = hits[wire.HIT_FITS].astype(bool)
    if fits.all():
        ints[name, owners] = hits[wire.HIT_INT]
        is_int[name, owners] = True
        return cols
    ints[name[fits], owners[fits]] = hits[wire.HIT_INT][fits]
    is_int[name[fits], owners[fits]] = True
    for j in np.unique(name[~fits]).tolist():
        _other_values(cols[names[j]], hits[:, hit_ptr[j]:hit_ptr[j + 1]], data, where, index, compile_it)
    return cols


def _column_of(present: np.ndarray, slot: np.ndarray, ints: np.ndarray, is_int: np.ndarray) -> AttrColumn:
    """An :class:`AttrColumn` of the given arrays (rows of :func:`_columns`), no other values yet."""
    col = AttrColumn.__new__(AttrColumn)
    col.present, col.slot, col.ints, col.is_int, col.others = present, slot, ints, is_int, {}
    return col


def _other_values(col: AttrColumn, hits: np.ndarray, data: bytes, where: str, index: int, compile_it: bool) -> None:
    """Put the values of one name's hits (``hits``) that are not an integer within int64 into
    ``col``: strings held once at a time by :func:`_strings`, the others decoded one by one."""
    owners = hits[wire.HIT_ROW]
    fits = hits[wire.HIT_FITS].astype(bool)
    plain = ~fits & (hits[wire.HIT_COUNT] == 1) & (hits[wire.HIT_SLOT] == _STRING)
    if plain.any() and not _strings(col, owners[plain], hits[wire.HIT_AT][plain], hits[wire.HIT_LEN][plain], data,
                                    compile_it):
        plain[:] = False  # read one by one, so that the error names the first bad row
    for k in np.flatnonzero(~fits & ~plain & (hits[wire.HIT_COUNT] > 0)).tolist():
        row = int(owners[k])
        try:
            got, value = _python_value(data, hits[:, k])
        except (UnicodeDecodeError, DecodeError) as e:
            raise _bad(where, index + row, f"attribute: {e}") from None
        col.slot[row] = got
        if got == _BOOL or (got and _SLOTS[got][2] in _INT_KINDS and (got not in _WIDE or value < 1 << 63)):
            col.ints[row], col.is_int[row] = int(value), True
        elif got:
            col.others[row] = value


def _strings(col: AttrColumn, rows: np.ndarray, at: np.ndarray, length: np.ndarray, data: bytes,
             compile_it: bool) -> bool:
    """Put the ``string_val`` values held once (``data[at:at+length]``) of ``rows`` into ``col``,
    each distinct value found by a loop (compiled with ``compile_it``) and decoded once; False
    (nothing put) when one is not UTF-8."""
    with np.errstate(over="ignore"):  # the hash wraps at 2**64, as compiled
        number, first = chosen(wire.distinct_slices, compile_it)(
            np.frombuffer(data, np.uint8), np.ascontiguousarray(at, np.int64), np.ascontiguousarray(length, np.int64))
    text = []
    for a, n in zip(at[first].tolist(), length[first].tolist()):
        try:
            text.append(data[a:a + n].decode())
        except UnicodeDecodeError:
            return False
    col.others.update(zip(rows.tolist(), np.array(text, object)[number].tolist()))
    return True


def _python_value(data: bytes, hit: np.ndarray) -> tuple[int, Any]:
    """The slot number and value of one attribute hit (as :func:`attr_value` gives it; slot 0:
    none set)."""
    h = hit.tolist()
    start, end, slot, at, length, count = (h[f] for f in (wire.HIT_START, wire.HIT_END, wire.HIT_SLOT, wire.HIT_AT,
                                                          wire.HIT_LEN, wire.HIT_COUNT))
    if count == 1 and slot == _STRING:
        return _STRING, data[at:at + length].decode()
    got, value = attr_value(AttributeProto.FromString(data[start:end]))
    return (_NUMBER[got], value) if got is not None else (0, None)


def _offsets(length: np.ndarray) -> np.ndarray:
    """CSR offsets (n+1, int64) of rows of ``length`` items."""
    out = np.zeros(len(length) + 1, np.int64)
    np.cumsum(length, out=out[1:])
    return out


def _gather(flat: np.ndarray, start: np.ndarray, length: np.ndarray, compile_it: bool) -> np.ndarray:
    """The slices ``flat[start[i]:start[i]+length[i]]`` concatenated (``compile_it``: by the
    compiled loop)."""
    return chosen(wire.gather, compile_it)(flat, np.ascontiguousarray(start, np.int64),
                                           np.ascontiguousarray(length, np.int64))


def _join(runs: list[NodeColumns], names: tuple[str, ...], compile_it: bool) -> NodeColumns:
    """The columns of consecutive runs as one (``compile_it``: theirs)."""
    if len(runs) == 1:
        return runs[0]
    if not runs:
        z, one = np.zeros(0, _U64), np.zeros(1, np.int64)
        return NodeColumns(z, np.zeros(0, np.int64), z, one, z, one, np.zeros(0, np.uint8),
                           {name: AttrColumn(0) for name in names}, compiled=compile_it)
    bases = np.cumsum([0] + [len(r) for r in runs[:-1]]).tolist()
    return NodeColumns(np.concatenate([r.ids for r in runs]), np.concatenate([r.types for r in runs]),
                       np.concatenate([r.duration_micros for r in runs]), _join_ptr([r.dep_ptr for r in runs]),
                       np.concatenate([r.dep_ids for r in runs]), _join_ptr([r.name_ptr for r in runs]),
                       np.concatenate([r.name_bytes for r in runs]),
                       {name: AttrColumn.joined([r.attrs[name] for r in runs], bases) for name in names},
                       np.concatenate([r.flags for r in runs]), compile_it)


def _join_ptr(ptrs: list[np.ndarray]) -> np.ndarray:
    """CSR offsets of consecutive runs as one."""
    base = np.cumsum([0] + [int(p[-1]) for p in ptrs[:-1]])
    return np.concatenate([np.zeros(1, np.int64)] + [p[1:] + b for p, b in zip(ptrs, base)])
