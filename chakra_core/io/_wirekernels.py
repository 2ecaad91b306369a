"""Loops over the protobuf wire format of Chakra ``.et`` files, run compiled (numba) or as Python.

:func:`cut_frames` finds the length-prefixed frames of a chunk of a file; :func:`walk_nodes`
reads the fields of a run of Node messages, and of the attribute messages whose names are
asked for, one node after the other.  They are kernels (:mod:`chakra_core.base._kernels`):
the caller runs them as Python (a small input: no numba to load) or compiled, once per machine
(numba's on-disk cache, beside this module or in the user's cache directory), holding no Python
object per node.  Their integer casts are :data:`~chakra_core.base._kernels.types`' (numba's
when compiled, Python's ``int`` as Python, with a varint's value cut to its low 64 bits in both),
so that as Python they read Python ints: bytes through a memoryview, positions from lists.
The rules of the walk (which key sets what, which attribute counts) are :mod:`._columns`'s;
these loops only read bytes.
"""

from __future__ import annotations

import numpy as np

from chakra_core.base._copyrun import copy_run
from chakra_core.base._kernels import kernel
from chakra_core.base._kernels import types as ktypes

__all__ = ["cut_frames", "walk_nodes", "gather", "as_repeated_field", "distinct_slices", "GROUP", "BAD_FIELD",
           "BAD_VARINT", "BAD_PAST", "BAD_PACKED", "IN_ATTRIBUTE", "FLAG_AGAIN", "FLAG_UNKNOWN", "FLAG_STRIPPED",
           "HIT_ROW", "HIT_START", "HIT_END", "HIT_SLOT", "HIT_AT", "HIT_LEN", "HIT_COUNT", "HIT_INT", "HIT_FITS",
           "PAD", "padded"]

#: zero bytes after a buffer the compiled walks read varints from without a bound. After zeros a
#: varint ends at the first of them, so 10 would do; past a message's end followed by other bytes,
#: :func:`walk_nodes` reads up to 20 (a key of 11 bytes whose 10 all continue, then a value of
#: 10), the JSON transcoder's walk 19, before they find the field running past it. As long as
#: that reach, so that a run walked in place can be checked by walking its last messages on a
#: padded copy (:func:`chakra_core.trace._columns._in_place`).
PAD = bytes(32)


def padded(data: bytes) -> np.ndarray:
    """``data`` followed by :data:`PAD`, as the walks' buffer (a copy)."""
    return np.frombuffer(data + PAD, np.uint8)

#: the walk's status codes (0: every node read); IN_ATTRIBUTE is added for a field of an attribute
GROUP, BAD_FIELD, BAD_VARINT, BAD_PAST, BAD_PACKED, IN_ATTRIBUTE = 1, 2, 3, 4, 5, 8
#: per-node flags: an attribute name asked for occurs again in the node; an attribute walked holds
#: a field other than its name, doc string and known value slots (an unknown field); the node was
#: re-serialized without its unknown fields before the walk (set by :mod:`._columns`)
FLAG_AGAIN, FLAG_UNKNOWN, FLAG_STRIPPED = 1, 2, 4
#: the walk's buffers are full (it is run again with room for every dependency and attribute)
FULL = 6
#: the rows of the attribute hit table: node, name index, attribute message start and end, value
#: slot (the last one set; 0: none), value position and length (length-delimited slots), how
#: many value fields, the value as an integer, whether that integer is the attribute's value
HIT_ROW, HIT_NAME, HIT_START, HIT_END, HIT_SLOT, HIT_AT, HIT_LEN, HIT_COUNT, HIT_INT, HIT_FITS = range(10)
HIT_FIELDS = 10
#: longer than any message: a length past it runs past its message
_FAR = 1 << 40
#: a key from here on is no field (read as int64 it is negative)
_SIGN = 1 << 63
#: the least key past protobuf's highest field number (2**29 - 1)
_MAX_KEY = 1 << 32
#: the low 64 bits: a varint's value as the compiled loops keep it
_MASK = (1 << 64) - 1
_U64 = np.uint64


@kernel(cache=True, nogil=True)
def cut_frames(buf, pos, end):  # pragma: no cover - compiled
    """The whole frames of ``buf[pos:end]`` (a varint length, then that many bytes): their
    positions, payload starts and payload sizes (int64), and the position after the last one
    (a bad, cut-short or overlong length prefix, or a frame running past ``end``, stops the cut
    there)."""
    cap = end - pos + 1
    at = np.empty(cap, np.int64)
    start = np.empty(cap, np.int64)
    size = np.empty(cap, np.int64)
    k = 0
    while pos < end:
        value, p, ok = buf[pos], pos + 1, True
        if value >= 0x80:
            value, p, ok = _read_varint(buf, pos, end)
        if not ok or value > ktypes.uint64(end - p):
            break
        at[k], start[k], size[k] = pos, p, ktypes.int64(value)
        k += 1
        pos = p + ktypes.int64(value)
    return at[:k].copy(), start[:k].copy(), size[:k].copy(), pos


@kernel(cache=True, nogil=True, inline="always")
def _read_varint(buf, pos, end):  # pragma: no cover - compiled
    """The varint at ``pos`` of ``buf[:end]``: (value, position after, whether it ended within
    10 bytes and before ``end``).  The compiled loops' own decoder: numba compiles only what it
    can type, so they cannot call the Python codec (:func:`chakra_core.decode_varint`), whose
    rules (little-endian groups of 7 bits, at most 10 bytes, the low 64 bits kept) this repeats."""
    value = ktypes.uint64(0)
    p = pos
    for k in range(10):
        if p >= end:
            return value, pos, False
        b = buf[p]
        value |= ktypes.uint64(b & 0x7F) << ktypes.uint64(7 * k)
        p += 1
        if b < 0x80:
            return value & ktypes.uint64(_MASK), p, True
    return value & ktypes.uint64(_MASK), pos, False


@kernel(cache=True, nogil=True, inline="always")
def _varint(buf, p):  # pragma: no cover - compiled
    """The varint at ``p`` of a zero-padded buffer: (value, byte length; 11 when it does not end
    within 10 bytes).  :func:`_read_varint` without its bound: the walk reads every key and value
    through this one, and a test against the end at each byte made :func:`walk_nodes` 15-20%
    slower (``node_columns`` of 10 attributes over 1M nodes: 0.59 s against 0.70 s)."""
    value = ktypes.uint64(0)
    for k in range(10):
        b = buf[p + k]
        value |= ktypes.uint64(b & 0x7F) << ktypes.uint64(7 * k)
        if b < 0x80:
            return value & ktypes.uint64(_MASK), k + 1
    return value & ktypes.uint64(_MASK), 11


@kernel(cache=True, nogil=True)
def walk_nodes(buf, start, end, names, name_ptr, slot_of_key, kind_of_slot):  # pragma: no cover - compiled
    """Read the Node messages ``buf[start[i]:end[i]]`` (``buf`` followed by :data:`PAD` or more).

    Returns ``(status, (row, key), nodes, deps, (hits, hit_ptr))``: ``nodes`` = (ids, types,
    durations, name positions, name lengths, FLAG_* bits); ``deps`` = (CSR offsets, ids: data
    deps, then ctrl deps, each in file order); ``hits`` holds one column per attribute counted (the first
    of each name asked for, ``names[name_ptr[j]:name_ptr[j+1]]``, in a node), those of name
    ``j`` in ``hit_ptr[j]:hit_ptr[j+1]`` in node order; its rows are the HIT_* fields.  A status
    other than 0 stops the walk at node ``row`` (``key``: the field's key; plus IN_ATTRIBUTE for
    a field of one of its attributes; the arrays are then empty)."""
    n = len(start)
    ids = np.zeros(n, np.uint64)
    types = np.zeros(n, np.int64)
    dur = np.zeros(n, np.uint64)
    name_at = np.zeros(n, np.int64)
    name_len = np.zeros(n, np.int64)
    flags = np.zeros(n, np.uint8)
    dep_ptr = np.zeros(n + 1, np.int64)
    sizes = np.zeros(2, np.int64)
    # room for 4 dependencies and 4 attributes a node; when that is short, for as many as the bytes
    # can hold (a dependency takes a byte or more, an attribute two or more): buffers that large
    # cost page faults
    deps, ctrl, hits, raw = _buffers(4 * n + 16, 4 * n + 16)
    status, row, key = _walk(buf, start, end, names, name_ptr, slot_of_key, (ids, types, dur, name_at, name_len, flags),
                             dep_ptr, deps, ctrl, hits, raw, sizes)
    if status == FULL:
        deps, ctrl, hits, raw = _buffers(len(buf), len(buf) // 2 + 1)
        status, row, key = _walk(buf, start, end, names, name_ptr, slot_of_key,
                                 (ids, types, dur, name_at, name_len, flags), dep_ptr, deps, ctrl, hits, raw, sizes)
    if status:
        z, u, b = np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.uint8)
        return status, (row, key), (u, z, u, z, z, b), (z, u), (np.zeros((HIT_FIELDS, 0), np.int64), z)
    nd, nh = sizes[0], sizes[1]
    _values(hits[:, :nh], raw[:nh], kind_of_slot)
    grouped, hit_ptr = _by_name(hits[:, :nh], len(name_ptr) - 1)
    return 0, (0, 0), (ids, types, dur, name_at, name_len, flags), (dep_ptr, deps[:nd].copy()), (grouped, hit_ptr)


@kernel(cache=True, nogil=True)
def _buffers(deps, hits):  # pragma: no cover - compiled
    """The walk's buffers for ``deps`` dependencies and ``hits`` attributes."""
    return (np.empty(deps, np.uint64), np.empty(deps, np.uint64), np.empty((HIT_FIELDS, hits), np.int64),
            np.empty(hits, np.uint64))


@kernel(cache=True, nogil=True)
def _values(hits, raw, kind_of_slot):  # pragma: no cover - compiled
    """Fill HIT_INT and HIT_FITS: the value as its slot's integer type reads it (bool as 0/1,
    zigzag for sint, the low 32 bits for 32-bit slots), and whether it is that, held once, and
    within int64."""
    for h in range(hits.shape[1]):
        kind = kind_of_slot[hits[HIT_SLOT, h]]
        r = raw[h]
        if kind == 1:
            v = np.int64(np.int32(np.uint32(r & _U64(0xFFFFFFFF))))
        elif kind == 3:
            v = np.int64(r & _U64(0xFFFFFFFF))
        elif kind == 5:
            v = _zigzag(r & _U64(0xFFFFFFFF))
        elif kind == 6:
            v = _zigzag(r)
        elif kind == 7:
            v = np.int64(r != 0)
        else:
            v = np.int64(r)
        hits[HIT_INT, h] = v
        hits[HIT_FITS, h] = hits[HIT_COUNT, h] == 1 and kind > 0 and not (kind == 4 and r >= _U64(1 << 63))


@kernel(cache=True, nogil=True, inline="always")
def _zigzag(r):  # pragma: no cover - compiled
    """The zigzag-decoded value of ``r``."""
    return np.int64(r >> _U64(1)) ^ -np.int64(r & _U64(1))


@kernel(cache=True, nogil=True)
def _by_name(hits, nnames):  # pragma: no cover - compiled
    """The hit columns grouped by name (node order kept within a name) and the group offsets."""
    ptr = np.zeros(nnames + 1, np.int64)
    for h in range(hits.shape[1]):
        ptr[hits[HIT_NAME, h] + 1] += 1
    for j in range(nnames):
        ptr[j + 1] += ptr[j]
    at = ptr[:-1].copy()
    out = np.empty_like(hits)
    for h in range(hits.shape[1]):
        j = hits[HIT_NAME, h]
        out[:, at[j]] = hits[:, h]
        at[j] += 1
    return out, ptr


@kernel(cache=True, nogil=True)
def _walk(buf, start, end, names, name_ptr, slot_of_key, nodes, dep_ptr, deps, ctrl, hits, hit_raw,  # noqa: C901
          sizes):  # pragma: no cover - compiled
    """The loop of :func:`walk_nodes`: one field at a time, of a node (depth 0) or of the
    attribute being read (depth 1); returns (status, row, key).  One loop with the field and the
    name match written out: calls to numba functions here, even inlined ones, made it 2-3x slower
    (measured).  That is why it stays one function of high complexity instead of named steps:
    its steps are the numbered states of one compiled loop.

    It reads at or past a message's end only within a field that runs past it, and then returns
    a status other than 0 for that message: a run whose last messages walk without one on a
    padded copy is walked in place (``_columns._in_place``; a test runs the Python form over the
    bare bytes, where a read past them raises). Keep it so."""
    ids, types, dur, name_at, name_len, flags = nodes
    nnames = len(name_ptr) - 1
    seen = np.full(max(nnames, 1), -1, np.int64)
    nd = nh = 0
    a_first = a_name = a_len = a_slot = a_at = a_vlen = a_count = 0
    a_raw = ktypes.uint64(0)
    for i in range(len(start)):
        p, stop, node_stop, depth, nc = start[i], end[i], end[i], 0, 0
        while True:
            if p >= stop:
                if depth == 0:
                    break
                for j in range(nnames):  # the attribute just read: a hit if asked for and the first of its name
                    lo = name_ptr[j]
                    if name_ptr[j + 1] - lo != a_len:
                        continue
                    same = True
                    for k in range(a_len):
                        if buf[a_name + k] != names[lo + k]:
                            same = False
                            break
                    if not same:
                        continue
                    if seen[j] != i:
                        if nh >= hits.shape[1]:
                            return FULL, i, 0
                        seen[j] = i
                        hits[HIT_ROW, nh] = i
                        hits[HIT_NAME, nh] = j
                        hits[HIT_START, nh] = a_first
                        hits[HIT_END, nh] = stop
                        hits[HIT_SLOT, nh] = a_slot
                        hits[HIT_AT, nh] = a_at
                        hits[HIT_LEN, nh] = a_vlen
                        hits[HIT_COUNT, nh] = a_count
                        hit_raw[nh] = a_raw
                        nh += 1
                    else:
                        flags[i] |= FLAG_AGAIN
                    break
                p, stop, depth = stop, node_stop, 0
                continue
            # the field at p: its key, its value (varint, length or fixed) at `at`, the next field at `nxt`
            # a one-byte varint (most keys and many values) is read here: a call a field as Python
            key, kl = buf[p], 1
            if key >= 0x80:
                raw, kl = _varint(buf, p)
                key = ktypes.int64(raw)
                if raw >= ktypes.uint64(_SIGN) and (key & 7 != 3 and key & 7 != 4):
                    return BAD_FIELD + depth * IN_ATTRIBUTE, i, np.int64(np.uint64(raw))
            wire = key & 7
            at = p + kl
            if wire == 0 or wire == 2:  # the usual wire types first: one test a field
                value, vl = buf[at], 1
                if value >= 0x80:
                    value, vl = _varint(buf, at)
                at += vl
                nxt = at
                if wire == 2:
                    nxt += ktypes.int64(value) if value < ktypes.uint64(_FAR) else _FAR
            elif wire == 1 or wire == 5:
                vl = 0
                value = _fixed(buf, at, 8 if wire == 1 else 4)
                nxt = at + (8 if wire == 1 else 4)
            else:
                return (GROUP if wire == 3 or wire == 4 else BAD_FIELD) + depth * IN_ATTRIBUTE, i, key
            if key < 8 or key >= _MAX_KEY:  # field 0, or past protobuf's last field number
                return BAD_FIELD + depth * IN_ATTRIBUTE, i, key
            if kl > 5 or vl > 10:  # protobuf reads a key of 5 bytes at most (32 bits), a value of 10
                return BAD_VARINT + depth * IN_ATTRIBUTE, i, key
            if nxt > stop:
                return BAD_PAST + depth * IN_ATTRIBUTE, i, key
            if depth:
                if key == 0x0A:
                    a_name, a_len = at, ktypes.int64(value)
                elif key < len(slot_of_key) and slot_of_key[key]:
                    a_slot, a_raw, a_at, a_count = slot_of_key[key], value, at, a_count + 1
                    a_vlen = ktypes.int64(value) if wire == 2 else 0
                elif key != 0x12:
                    flags[i] |= FLAG_UNKNOWN
            elif key == 0x08:
                ids[i] = value
            elif key == 0x18:
                types[i] = np.int64(np.int32(np.uint32(value & ktypes.uint64(0xFFFFFFFF))))
            elif key == 0x38:
                dur[i] = value
            elif key == 0x12:
                name_at[i], name_len[i] = at, ktypes.int64(value)
            elif key == 0x28:
                if nd >= len(deps):
                    return FULL, i, key
                deps[nd] = value
                nd += 1
            elif key == 0x20:
                if nc >= len(ctrl):
                    return FULL, i, key
                ctrl[nc] = value
                nc += 1
            elif key == 0x2A:
                nd = _packed(buf, at, nxt, deps, nd)
                if nd < 0:
                    return BAD_PACKED if nd == -1 else FULL, i, key
            elif key == 0x22:
                nc = _packed(buf, at, nxt, ctrl, nc)
                if nc < 0:
                    return BAD_PACKED if nc == -1 else FULL, i, key
            elif key == 0x52 and nnames:  # read the attribute's fields next
                a_first, depth, stop, nxt = at, 1, nxt, at
                a_name = a_len = a_slot = a_at = a_vlen = a_count = 0
                a_raw = ktypes.uint64(0)
            p = nxt
        if nd + nc > len(deps):
            return FULL, i, 0
        for k in range(nc):
            deps[nd + k] = ctrl[k]
        nd += nc
        dep_ptr[i + 1] = nd
    sizes[0], sizes[1] = nd, nh
    return 0, 0, 0


@kernel(cache=True, nogil=True, inline="always")
def _fixed(buf, at, width):  # pragma: no cover - compiled
    """The little-endian value of ``width`` bytes at ``at``."""
    value = ktypes.uint64(0)
    for k in range(width):
        value |= ktypes.uint64(buf[at + k]) << ktypes.uint64(8 * k)
    return value


@kernel(cache=True, nogil=True, inline="always")
def _packed(buf, p, stop, out, k):  # pragma: no cover - compiled
    """Append the varints packed in ``buf[p:stop]`` to ``out`` from ``k`` on; return the count
    after them, -1 when one is cut by ``stop`` or is over 10 bytes, -2 when ``out`` is full."""
    while p < stop:
        value, vl = buf[p], 1
        if value >= 0x80:
            value, vl = _varint(buf, p)
        if vl > 10 or p + vl > stop:
            return -1
        if k >= len(out):
            return -2
        out[k] = value
        k += 1
        p += vl
    return k


@kernel(cache=True, nogil=True)
def gather(flat, start, length):  # pragma: no cover - compiled
    """The slices ``flat[start[i]:start[i]+length[i]]`` concatenated."""
    out = np.empty(length.sum(), flat.dtype)
    k = 0
    for i in range(len(start)):
        s, n = start[i], length[i]
        copy_run(out, k, flat, s, n)
        k += n
    return out


@kernel(cache=True, nogil=True)
def as_repeated_field(buf, start, size):  # pragma: no cover - compiled
    """The messages ``buf[start[i]:start[i]+size[i]]`` as the wire form of a repeated message
    field number 1 (each one behind the key 0x0A and its length as a varint)."""
    total = 0
    for i in range(len(start)):
        n, width = size[i], 1
        while n >= 0x80:
            n >>= 7
            width += 1
        total += 1 + width + size[i]
    out = np.empty(total, np.uint8)
    k = 0
    for i in range(len(start)):
        out[k] = 0x0A
        k += 1
        n = size[i]
        while n >= 0x80:
            out[k] = (n & 0x7F) | 0x80
            n >>= 7
            k += 1
        out[k] = n
        k += 1
        out[k:k + size[i]] = buf[start[i]:start[i] + size[i]]
        k += size[i]
    return out


@kernel(cache=True, nogil=True)
def distinct_slices(buf, at, length):  # pragma: no cover - compiled
    """Number the distinct byte strings ``buf[at[i]:at[i]+length[i]]`` in order of first
    occurrence: ``(number per slice, the first slice of each number)``."""
    n = len(at)
    number = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    size = 16
    while size < 2 * n:  # a power of two at least twice the slices: short probe chains
        size *= 2
    table = np.full(size, -1, np.int64)
    mask = len(table) - 1
    count = 0
    for i in range(n):
        h = np.uint64(14695981039346656037)
        for j in range(length[i]):
            h = (h ^ np.uint64(buf[at[i] + j])) * np.uint64(1099511628211)
        slot = np.int64(h & np.uint64(mask))
        while True:
            k = table[slot]
            if k < 0:
                table[slot] = count
                first[count] = i
                number[i] = count
                count += 1
                break
            f = first[k]
            same = length[f] == length[i]
            if same:
                for j in range(length[i]):
                    if buf[at[f] + j] != buf[at[i] + j]:
                        same = False
                        break
            if same:
                number[i] = k
                break
            slot = (slot + 1) & mask
    return number, first[:count].copy()
