"""The relabelling walk of :func:`chakra_core.role_key` as kernels (:mod:`chakra_core.base._kernels`:
compiled by numba when it is installed, run as Python otherwise).

:func:`relabel_run` reads a run of Node messages field by field and copies each node's bytes
with every top-level attribute named ``pg_name``, ``comm_src`` or ``comm_dst`` replaced by a
token: the byte 0x07 (a key of wire type 7, which no message holds), the attribute's kind
(``g``, ``s``, ``d``) and its label code as a varint.  Group codes: 0 for "", 1 for "0", 2 + the
label of any other name; peer codes: 0 for the rank itself, 1 + the label of any other peer.
Labels count up in first-naming order; names and peers are kept in :class:`Labels`' arrays.

An attribute of those names held in another form (a value other than ``string_val`` for a
group, or other than an integer varint slot within int64 for a peer; a doc string; more or
fewer than one value) stops the walk at its node (status UNUSUAL), which the caller labels
itself through :func:`group_code` and :func:`peer_code`; so does a node whose labels need more
room (status FULL: the caller grows the arrays and walks on from that node).  A node whose wire structure does not
read is copied as it is.
"""

from __future__ import annotations

import numpy as np

from chakra_core.base._copyrun import copy_run
from chakra_core.base._kernels import chosen, kernel

__all__ = ["Labels", "relabel_run", "group_code", "peer_code", "DONE", "UNUSUAL", "FULL", "TOKEN", "MAX_MARKS"]

#: statuses of :func:`relabel_run`: every node written; the node returned needs the caller; the
#: node returned needs more room (:meth:`Labels.room`)
DONE, UNUSUAL, FULL = 0, 1, 2
#: the first byte of a token (field 0, wire type 7: no message holds it)
TOKEN = 0x07
_GROUP, _SRC, _DST = 1, 2, 3
_KIND_BYTE = np.array([0, ord("g"), ord("s"), ord("d")], np.uint8)
_PG_NAME = np.frombuffer(b"pg_name", np.uint8)
_COMM_SRC = np.frombuffer(b"comm_src", np.uint8)
_COMM_DST = np.frombuffer(b"comm_dst", np.uint8)
#: relabelled attributes a node may hold in the walk (more: UNUSUAL)
MAX_MARKS = 16
_MIN64 = -(1 << 63)


class Labels:
    """One rank's labels: group label ``k`` names ``pool[ptr[k]:ptr[k+1]]``, peer label ``k``
    is ``order[k]``; ``used`` = (groups, pool bytes, peers).  Two open-addressing tables find
    them: ``gslots`` by a hash of the name, ``pslots`` (keys ``pkeys``) by the peer rank, each
    slot holding label + 1 (0: empty), half of the slots or more left empty."""

    def __init__(self, rank: int, compile_it: bool):
        self.rank = rank
        self.compile_it = compile_it
        self.pool = np.zeros(1024, np.uint8)
        self.ptr = np.zeros(65, np.int64)
        self.order = np.zeros(64, np.int64)
        self.used = np.zeros(3, np.int64)
        self.gslots = np.zeros(128, np.int64)
        self.pkeys = np.zeros(128, np.int64)
        self.pslots = np.zeros(128, np.int64)

    def room(self, nbytes: int) -> None:
        """Grow the arrays (doubling) for a node of ``nbytes`` bytes: that many more bytes of
        names and MAX_MARKS more labels of each kind."""
        self.pool = _grown(self.pool, int(self.used[1]) + nbytes)
        self.ptr = _grown(self.ptr, int(self.used[0]) + MAX_MARKS + 1)
        self.order = _grown(self.order, int(self.used[2]) + MAX_MARKS)
        need = 2 * (int(max(self.used[0], self.used[2])) + MAX_MARKS)
        if need > len(self.gslots):
            size = 1 << need.bit_length()
            self.gslots, self.pkeys, self.pslots = (np.zeros(size, np.int64) for _ in range(3))
            chosen(_rehash, self.compile_it)(self.state())

    def groups(self) -> tuple[tuple[str, ...], bytes]:
        """The group names by label (UTF-8, undecodable bytes replaced), and the bytes of each
        name that is not UTF-8, after its label and length (empty when every name is): what
        tells apart names that the replacement writes alike."""
        names, bad = [], []
        for k in range(int(self.used[0])):
            raw = self.pool[self.ptr[k]:self.ptr[k + 1]].tobytes()
            try:
                names.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                names.append(raw.decode("utf-8", "replace"))
                bad.append(b"%d:%d:" % (k, len(raw)) + raw)
        return tuple(names), b"".join(bad)

    def peer_ranks(self) -> tuple[int, ...]:
        """The peer ranks by label."""
        return tuple(int(p) for p in self.order[:int(self.used[2])])

    def state(self) -> tuple:
        """The arrays the kernels take."""
        return self.rank, self.gslots, self.pool, self.ptr, self.pkeys, self.pslots, self.order, self.used


def _grown(arr: np.ndarray, need: int) -> np.ndarray:
    """``arr`` with room for ``need`` items (doubled when short)."""
    if need <= len(arr):
        return arr
    out = np.zeros(max(need, 2 * len(arr)), arr.dtype)
    out[:len(arr)] = arr
    return out


@kernel(cache=True, nogil=True, inline="always")
def _varint(buf, p, end):  # pragma: no cover - compiled
    """The varint at ``p`` of ``buf[:end]`` as a signed 64-bit value (protobuf keeps the low 64
    bits) and the position after it (-1: it does not end within 10 bytes and before ``end``)."""
    value = 0
    shift = 0
    while p < end and shift < 70:
        b = int(buf[p])
        p += 1
        if shift < 63:
            value |= (b & 0x7F) << shift
        elif b & 1:
            value += _MIN64
        if b < 0x80:
            return value, p
        shift += 7
    return 0, -1


@kernel(cache=True, nogil=True, inline="always")
def _field(buf, p, end):  # pragma: no cover - compiled
    """The field whose key starts at ``p``: (key, start of its payload, end of the field); the
    key is -1 when the field does not read (a key or length that does not end, a negative key or
    one over 5 bytes, a wire type other than 0, 1, 2 or 5, or a payload past ``end``).  One call a field: numba
    compiled the earlier pair (the key's varint, then a skip of the value that returned its
    length) into a relabelling walk twice as slow (476 against 255 ns a node of a converted
    GPT-3-like rank; 214 with :func:`_same` a call as well)."""
    at = p
    key, p = _varint(buf, p, end)
    if p < 0 or key < 0 or p - at > 5:  # protobuf reads a key of 5 bytes at most
        return -1, 0, 0
    wt = key & 7
    if wt == 0:
        _, q = _varint(buf, p, end)
        return (key, p, q) if q >= 0 else (-1, 0, 0)
    if wt == 2:
        ln, a = _varint(buf, p, end)
        if a < 0 or ln < 0 or ln > end - a:
            return -1, 0, 0
        return key, a, a + ln
    if wt == 1 or wt == 5:
        q = p + (8 if wt == 1 else 4)
        return (key, p, q) if q <= end else (-1, 0, 0)
    return -1, 0, 0


@kernel(cache=True, nogil=True)
def _same(buf, at, ln, word):  # pragma: no cover - compiled
    """Whether ``buf[at:at+ln]`` is ``word``.  A call, not inlined: inlined, the relabelling walk
    took a fifth longer (262 against 217 ns a node, measured)."""
    if ln != len(word):
        return False
    for k in range(ln):
        if buf[at + k] != word[k]:
            return False
    return True


@kernel(cache=True, nogil=True, inline="always")
def _slot_int(slot, v):  # pragma: no cover - compiled
    """The integer an integer varint slot holds (as :func:`int_value` reads it) and whether the
    walk reads it (uint64 past int64 and non-integer slots: no)."""
    low = v & 0xFFFFFFFF
    if slot == 7:
        return (low - 4294967296 if low >= 2147483648 else low), True
    if slot == 9:
        return v, True
    if slot == 11:
        return low, True
    if slot == 13:
        return v, v >= 0
    if slot == 15:
        return (low >> 1) ^ -(low & 1), True
    if slot == 17:
        return ((v >> 1) & 0x7FFFFFFFFFFFFFFF) ^ -(v & 1), True
    return 0, False


@kernel(cache=True, nogil=True, inline="always")
def _name_kind(buf, at, ln):  # pragma: no cover - compiled
    """_GROUP, _SRC or _DST for the attribute name ``buf[at:at+ln]``, else 0."""
    if ln == 7:
        return _GROUP if _same(buf, at, ln, _PG_NAME) else 0
    if ln != 8 or buf[at] != 0x63:  # "c"
        return 0
    if _same(buf, at, ln, _COMM_SRC):
        return _SRC
    return _DST if _same(buf, at, ln, _COMM_DST) else 0


@kernel(cache=True, nogil=True, inline="always")
def _attribute(buf, p, end):  # pragma: no cover - compiled
    """What the attribute message ``buf[p:end]`` is to the walk: (kind, a, b) with kind 0 (not
    relabelled), _GROUP (name at ``a``, ``b`` bytes), _SRC/_DST (peer ``a``) or -1 (a
    relabelled name in another form or named twice, or fields that do not read).  An attribute whose first
    field is another name with too few bytes after it for a name field of 7 or 8 bytes (9 or
    more) is settled without reading on."""
    first = int(buf[p + 1]) if end - p >= 2 and buf[p] == 0x0A else 0x80
    if first < 0x80 and end - p - 2 - first < 9 and _name_kind(buf, p + 2, first) == 0:
        return 0, 0, 0
    name_at, name_len, names, values, slot, at, ln, raw, other = -1, 0, 0, 0, 0, 0, 0, 0, False
    while p < end:
        key, a, q = _field(buf, p, end)
        if key < 0:
            return -1, 0, 0
        f, wt = key >> 3, key & 7
        if f == 1 and wt == 2:
            name_at, name_len = a, q - a
            names += 1
        elif 3 <= f <= 32:
            values += 1
            slot, at, ln = f * 8 + wt, a, q - a
            if wt == 0:
                raw, _ = _varint(buf, a, q)
        else:
            other = True
        p = q
    kind = _name_kind(buf, name_at, name_len)
    if kind == 0:
        return 0, 0, 0
    if other or values != 1 or names != 1:  # an earlier name is read by protobuf (its UTF-8 checked)
        return -1, 0, 0
    if kind == _GROUP:
        return (kind, at, ln) if slot == (29 << 3 | 2) else (-1, 0, 0)
    v, ok = _slot_int(slot >> 3, raw)
    return (kind, v, 0) if ok and slot & 7 == 0 else (-1, 0, 0)


@kernel(cache=True, nogil=True, inline="always")
def _hash(buf, at, ln):  # pragma: no cover - compiled
    """A polynomial hash of ``buf[at:at+ln]`` (probed on: equal hashes are compared)."""
    h = ln
    for k in range(ln):
        h = (h * 257 + int(buf[at + k]) + 1) & 0xFFFFFFFFFFFF
    return h


@kernel(cache=True, nogil=True, inline="always")
def _group_slot(buf, at, ln, state):  # pragma: no cover - compiled
    """The slot of ``gslots`` holding the group named ``buf[at:at+ln]``, or the empty one
    where it goes."""
    _, gslots, pool, ptr, _, _, _, _ = state
    mask = len(gslots) - 1
    h = _hash(buf, at, ln) & mask
    while gslots[h] and not _same(buf, at, ln, pool[ptr[gslots[h] - 1]:ptr[gslots[h]]]):
        h = (h + 1) & mask
    return h


@kernel(cache=True, nogil=True, inline="always")
def _peer_slot(peer, state):  # pragma: no cover - compiled
    """The slot of ``pslots`` holding peer ``peer``, or the empty one where it goes."""
    _, _, _, _, pkeys, pslots, _, _ = state
    mask = len(pslots) - 1
    h = (peer * 0x9E3779B1) & mask
    while pslots[h] and pkeys[h] != peer:
        h = (h + 1) & mask
    return h


@kernel(cache=True, nogil=True)
def _rehash(state):  # pragma: no cover - compiled
    """Fill the (empty) tables with every label so far."""
    _, gslots, pool, ptr, pkeys, pslots, order, used = state
    for k in range(used[0]):
        gslots[_group_slot(pool, ptr[k], ptr[k + 1] - ptr[k], state)] = k + 1
    for k in range(used[2]):
        h = _peer_slot(order[k], state)
        pkeys[h], pslots[h] = order[k], k + 1


@kernel(cache=True, nogil=True, inline="always")
def group_code(buf, at, ln, state):  # pragma: no cover - compiled
    """The code of the group named ``buf[at:at+ln]`` (labelling it when new; the arrays have
    room)."""
    _, gslots, pool, ptr, _, _, _, used = state
    if ln == 0:
        return 0
    if ln == 1 and buf[at] == 48:
        return 1
    h = _group_slot(buf, at, ln, state)
    if gslots[h] == 0:
        k = used[0]
        copy_run(pool, used[1], buf, at, ln)
        used[1] += ln
        ptr[k + 1] = used[1]
        used[0] += 1
        gslots[h] = k + 1
    return gslots[h] + 1


@kernel(cache=True, nogil=True, inline="always")
def peer_code(peer, state):  # pragma: no cover - compiled
    """The code of peer rank ``peer`` (labelling it when new; the arrays have room)."""
    rank, _, _, _, pkeys, pslots, order, used = state
    if peer == rank:
        return 0
    h = _peer_slot(peer, state)
    if pslots[h] == 0:
        k = used[2]
        order[k] = peer
        used[2] += 1
        pkeys[h], pslots[h] = peer, k + 1
    return pslots[h]


@kernel(cache=True, nogil=True, inline="always")
def _put_varint(out, o, v):  # pragma: no cover - compiled
    """Write the varint of ``v`` >= 0 at ``out[o]``; the position after it."""
    while v >= 0x80:
        out[o] = (v & 0x7F) | 0x80
        v >>= 7
        o += 1
    out[o] = v
    return o + 1


@kernel(cache=True, nogil=True, inline="always")
def _marks(buf, s, e, marks):  # pragma: no cover - compiled
    """The relabelled attributes of node ``buf[s:e]`` as rows of ``marks`` (field start, field
    end, kind, a, b); their count, -1 for an attribute in another form, -2 for a node that does
    not read."""
    m = 0
    p = s
    while p < e:
        key, a, q = _field(buf, p, e)
        if key < 0:
            return -2
        if key == (10 << 3 | 2):
            kind, x, y = _attribute(buf, a, q)
            if kind < 0:
                return -1
            if kind > 0:
                if m == MAX_MARKS:
                    return -1
                marks[m, 0], marks[m, 1], marks[m, 2], marks[m, 3], marks[m, 4] = p, q, kind, x, y
                m += 1
        p = q
    return m


@kernel(cache=True, nogil=True, inline="always")
def _write(buf, s, e, marks, m, out, o, state):  # pragma: no cover - compiled
    """Node ``buf[s:e]`` with its ``m`` marked attributes as tokens, written at ``out[o]``
    (labels given in attribute order); the position after it."""
    p = s
    for j in range(m):
        q = marks[j, 0]
        copy_run(out, o, buf, p, q - p)
        o += q - p
        kind = marks[j, 2]
        if kind == _GROUP:
            code = group_code(buf, marks[j, 3], marks[j, 4], state)
        else:
            code = peer_code(marks[j, 3], state)
        out[o] = TOKEN
        out[o + 1] = _KIND_BYTE[kind]
        o = _put_varint(out, o + 2, code)
        p = marks[j, 1]
    copy_run(out, o, buf, p, e - p)
    return o + e - p


@kernel(cache=True, nogil=True, inline="always")
def _short(state, m, nbytes):  # pragma: no cover - compiled
    """Whether ``state``'s arrays lack room for ``m`` new labels and ``nbytes`` bytes of names."""
    _, gslots, pool, ptr, _, _, order, used = state
    return (used[0] + m + 1 > len(ptr) - 1 or used[2] + m > len(order) or used[1] + nbytes > len(pool)
            or 2 * (max(used[0], used[2]) + m) > len(gslots))


@kernel(cache=True, nogil=True)
def relabel_run(buf, start, size, walk, first, out, o, sizes, state):  # pragma: no cover - compiled
    """Write the nodes ``buf[start[i]:start[i]+size[i]]``, ``i`` from ``first`` on, relabelled
    into ``out`` from position ``o`` (``out`` as long as the nodes: a token is shorter than the
    attribute it replaces), each one's length in ``sizes[i]``; a node whose ``walk`` is False
    holds none of the three names and is copied as it is.  Returns (status, node, position in
    ``out``): DONE after the last node, UNUSUAL at a node the caller labels, FULL at a node that
    needs more room in ``state``'s arrays."""
    marks = np.zeros((MAX_MARKS, 5), np.int64)
    for i in range(first, len(start)):
        s = start[i]
        e = s + size[i]
        m = _marks(buf, s, e, marks) if walk[i] else 0
        if m == -1:  # an attribute in another form
            return UNUSUAL, i, o
        if m == -2:  # a field the walk does not read (a group)
            m = 0
            if walk[i]:  # always so (only a walked node gives -2): numba's code for the whole loop
                return UNUSUAL, i, o  # is about twice as fast as with one `m < 0` return (measured)
        if m == 0:
            copy_run(out, o, buf, s, e - s)
            sizes[i] = e - s
            o += e - s
            continue
        if _short(state, m, e - s):
            return FULL, i, o
        o2 = _write(buf, s, e, marks, m, out, o, state)
        sizes[i] = o2 - o
        o = o2
    return DONE, len(start), o
