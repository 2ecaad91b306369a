"""A compiled transcoder from Node messages (protobuf wire bytes) to the JSON text that
``json.dumps`` gives of their JSON mapping (:mod:`._jsonnode`): no message object, no dict.

:func:`transcode` writes, node after node, ``pre`` + the node's JSON + ``post`` into a uint8
buffer, byte for byte what ``json.dumps(node_dict(node))`` writes (keys in field-number order,
``", "`` and ``": "`` as separators, 64-bit integers as decimal strings, 32-bit ones as numbers,
the node type by name, ASCII strings escaped as ``json.dumps`` escapes them).  A node holding
anything else is left to the caller (its ``done`` flag stays 0, nothing written for it): a
string with a byte past ASCII, a float, double or bytes attribute, an attribute with two value
fields or two names, a field this schema does not know or with an unexpected wire type (unknown
fields), a group, a type number without a name, ``inputs``/``outputs`` given twice, a damaged
message.  Its loops are kernels (:mod:`chakra_core.base._kernels`): the caller runs
``compiled(transcode)`` (:mod:`._jsonwire`), or :func:`transcode` itself as Python, with the same
output.
"""

from __future__ import annotations

import numpy as np

from chakra_core.base._kernels import kernel
from chakra_core.io._schema import AttributeProto, IOInfo, Node, NodeType

__all__ = ["transcode", "room"]

_U64 = np.uint64


def _table(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``texts`` as ASCII bytes in CSR form (flat bytes, offsets)."""
    raw = [t.encode("ascii") for t in texts]
    ptr = np.zeros(len(raw) + 1, np.int64)
    ptr[1:] = np.cumsum([len(r) for r in raw])
    return np.frombuffer(b"".join(raw), np.uint8).copy(), ptr


#: ``"name": `` of each Node field (entry: the field number), AttributeProto field (entry:
#: 40 + the field number) and IOInfo field (entry: 80 + the field number)
_KEY_BYTES, _KEY_PTR = _table([f'"{f.name}": ' if f else "" for f in
                               [m.DESCRIPTOR.fields_by_number.get(n) for m in (Node, AttributeProto, IOInfo)
                                for n in range(40)]])
_ATTR_KEY, _IO_KEY = 40, 80
#: the name of each node type number (empty: no name)
_TYPE_NAMES = {int(t): t.name for t in NodeType}
_TYPE_BYTES, _TYPE_PTR = _table([_TYPE_NAMES.get(t, "") for t in range(max(_TYPE_NAMES) + 1)])
#: ``{"values": [`` / ``]}`` around a list attribute's values, and the other literals
_LIT_BYTES, _LIT_PTR = _table(['{"values": [', "]}", "true", "false", ", ", "{}"])
_OPEN_LIST, _CLOSE_LIST, _TRUE, _FALSE, _COMMA, _EMPTY = range(6)

#: value kinds: how a value (or a list's element) is read and written
_I32, _I64, _U32, _U64K, _S32, _S64, _F32, _F64, _SF32, _SF64, _BOOL, _STR = range(1, 13)
#: per AttributeProto field number: the value kind (0: left to the caller), plus 16 for a list
_ATTR_KIND = np.zeros(40, np.int64)
for _n, _k in ((7, _I32), (9, _I64), (11, _U32), (13, _U64K), (15, _S32), (17, _S64), (19, _F32), (21, _F64),
               (23, _SF32), (25, _SF64), (27, _BOOL), (29, _STR)):
    _ATTR_KIND[_n] = _k
    _ATTR_KIND[_n + 1] = _k + 16
#: per value kind: the wire type of one value (varint 0, 64-bit 1, length 2, 32-bit 5)
_WIRE_OF = np.array([-1, 0, 0, 0, 0, 0, 0, 5, 1, 5, 1, 0, 2], np.int64)
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8).copy()
#: how far past a node's own size its JSON can run (bytes): constant keys, and the decimal
#: form of values; a node's JSON is under 16 bytes per wire byte plus this
_SLACK = 1024


def room(size: int) -> int:
    """An upper bound of the bytes :func:`transcode` writes for a node of ``size`` wire bytes
    (``pre`` and ``post`` included when they are under 16 bytes)."""
    return 16 * size + _SLACK


@kernel(cache=True, nogil=True)
def transcode(buf, start, end, first, out, pre, post, done, ends):  # pragma: no cover - compiled
    """Write the nodes ``buf[start[i]:end[i]]`` from ``first`` on into ``out`` (``buf``
    followed by :data:`._wirekernels.PAD`): ``pre``, the node's JSON, ``post`` for each node written
    (``done[i] = 1``), nothing for a node left to the caller; ``ends[i]`` is where ``out`` stands
    after node ``i``.  Stops before a node that might not fit (see :func:`room`); returns
    ``(next node, bytes written)``."""
    k = 0
    for i in range(first, len(start)):
        if k + 16 * (end[i] - start[i]) + _SLACK > len(out):
            return i, k
        at = _copy(out, k, pre, 0, len(pre))
        at = _node(buf, start[i], end[i], out, at)
        if at < 0:
            done[i] = 0
        else:
            k = _copy(out, at, post, 0, len(post))
            done[i] = 1
        ends[i] = k
    return len(start), k


@kernel(cache=True, nogil=True, inline="always")
def _copy(out, k, src, lo, hi):  # pragma: no cover - compiled
    """``src[lo:hi]`` written at ``out[k]``; the position after it."""
    for j in range(lo, hi):
        out[k] = src[j]
        k += 1
    return k


@kernel(cache=True, nogil=True, inline="always")
def _key(out, k, number):  # pragma: no cover - compiled
    """The ``"name": `` of field entry ``number`` (see ``_KEY_PTR``)."""
    return _copy(out, k, _KEY_BYTES, _KEY_PTR[number], _KEY_PTR[number + 1])


@kernel(cache=True, nogil=True, inline="always")
def _lit(out, k, which):  # pragma: no cover - compiled
    """One of the literals (``_OPEN_LIST``...)."""
    return _copy(out, k, _LIT_BYTES, _LIT_PTR[which], _LIT_PTR[which + 1])


@kernel(cache=True, nogil=True, inline="always")
def _varint(buf, p):  # pragma: no cover - compiled
    """The varint at ``p`` of a zero-padded buffer: (value, byte length; 11 when it does not
    end within 10 bytes)."""
    value = _U64(0)
    for j in range(10):
        b = buf[p + j]
        value |= _U64(b & 0x7F) << _U64(7 * j)
        if b < 0x80:
            return value, j + 1
    return value, 11


@kernel(cache=True, nogil=True, inline="always")
def _fixed(buf, at, width):  # pragma: no cover - compiled
    """The little-endian value of ``width`` bytes at ``at``."""
    value = _U64(0)
    for j in range(width):
        value |= _U64(buf[at + j]) << _U64(8 * j)
    return value


@kernel(cache=True, nogil=True, inline="always")
def _field(buf, p, stop):  # pragma: no cover - compiled
    """The field at ``p`` of a message ending at ``stop``: (field number, wire type, value or
    length, where the value or bytes start, where the next field starts); number -1 for a
    group, a bad key or varint, or a field running past ``stop``."""
    key, kl = _varint(buf, p)
    wire = np.int64(key & _U64(7))
    number = np.int64(key >> _U64(3)) if key < _U64(1 << 32) else np.int64(0)
    at = p + kl
    if kl > 5 or number == 0 or wire == 3 or wire == 4 or wire > 5:  # a key: 5 bytes at most
        return -1, wire, _U64(0), at, stop + 1
    if wire == 0 or wire == 2:
        value, vl = _varint(buf, at)
        at += vl
        if vl > 10 or at > stop or (wire == 2 and value > _U64(stop - at)):
            return -1, wire, value, at, stop + 1
        nxt = at + (np.int64(value) if wire == 2 else 0)
    else:
        width = 8 if wire == 1 else 4
        value = _fixed(buf, at, width)
        nxt = at + width
    if nxt > stop:
        return -1, wire, value, at, nxt
    return number, wire, value, at, nxt


@kernel(cache=True, nogil=True)
def _unsigned(out, k, v):  # pragma: no cover - compiled
    """``v`` (uint64) in decimal.  A one-digit value is written at once and the digits are
    counted by dividing: against a loop of powers of ten for every value, 0.80 -> 0.70 us a
    node of a chain of compute nodes with two attributes (measured)."""
    if v < _U64(10):
        out[k] = np.uint8(48) + np.uint8(v)
        return k + 1
    n = 1
    rest = v
    while rest >= _U64(10):
        rest //= _U64(10)
        n += 1
    for j in range(k + n - 1, k - 1, -1):
        out[j] = np.uint8(48) + np.uint8(v % _U64(10))
        v //= _U64(10)
    return k + n


@kernel(cache=True, nogil=True)
def _number(out, k, negative, magnitude):  # pragma: no cover - compiled
    """``-magnitude`` (``negative``) or ``magnitude`` in decimal."""
    if negative:
        out[k] = 45  # '-'
        k += 1
    return _unsigned(out, k, magnitude)


@kernel(cache=True, nogil=True)
def _value(out, k, kind, v):  # pragma: no cover - compiled
    """A scalar of value kind ``kind`` whose varint or fixed bits are ``v``: 64-bit integers
    quoted, as protobuf's JSON mapping writes them."""
    if kind == _BOOL:
        return _lit(out, k, _TRUE if v != _U64(0) else _FALSE)
    low = v & _U64(0xFFFFFFFF)
    if kind == _U32 or kind == _F32:
        return _unsigned(out, k, low)
    if kind == _I32 or kind == _SF32:
        return _number(out, k, low >= _U64(1 << 31), _U64(1 << 32) - low if low >= _U64(1 << 31) else low)
    if kind == _S32:
        return _number(out, k, (low & _U64(1)) != _U64(0), (low >> _U64(1)) + (low & _U64(1)))
    out[k] = 34
    if kind == _U64K or kind == _F64:
        k = _unsigned(out, k + 1, v)
    elif kind == _S64:
        k = _number(out, k + 1, (v & _U64(1)) != _U64(0), (v >> _U64(1)) + (v & _U64(1)))
    else:
        k = _number(out, k + 1, v >= _U64(1 << 63), (~v) + _U64(1) if v >= _U64(1 << 63) else v)
    out[k] = 34
    return k + 1


@kernel(cache=True, nogil=True)
def _string(buf, at, n, out, k):  # pragma: no cover - compiled
    """``buf[at:at+n]`` as ``json.dumps`` writes the string; -1 for a byte past ASCII."""
    out[k] = 34
    k += 1
    for j in range(at, at + n):
        b = buf[j]
        if b >= 0x80:
            return -1
        if 0x20 <= b < 0x7F and b != 34 and b != 92:
            out[k] = b
            k += 1
            continue
        out[k] = 92
        if b == 34 or b == 92:
            out[k + 1] = b
        elif b == 10 or b == 13 or b == 9 or b == 8 or b == 12:
            out[k + 1] = 110 if b == 10 else 114 if b == 13 else 116 if b == 9 else 98 if b == 8 else 102
        else:
            out[k + 1], out[k + 2], out[k + 3] = 117, 48, 48  # u00
            out[k + 4], out[k + 5] = _HEX[b >> 4], _HEX[b & 15]
            k += 4
        k += 2
    out[k] = 34
    return k + 1


@kernel(cache=True, nogil=True)
def _packed_count(buf, p, stop):  # pragma: no cover - compiled
    """How many varints ``buf[p:stop]`` packs; -1 when one is cut by ``stop`` or over 10 bytes."""
    n = 0
    while p < stop:
        _, vl = _varint(buf, p)
        if vl > 10 or p + vl > stop:
            return -1
        p += vl
        n += 1
    return n


@kernel(cache=True, nogil=True)
def _deps(buf, p, stop, number, out, k):  # pragma: no cover - compiled
    """The values of the repeated uint64 field ``number`` among the fields ``buf[p:stop]`` of a
    message (packed and not, in file order), each quoted, between ``", "`` (the message already
    checked)."""
    first = k
    while p < stop:
        got, wire, v, at, nxt = _field(buf, p, stop)
        if got == number:
            if wire == 0:
                k = _comma(out, k, first)
                k = _value(out, k, _U64K, v)
            else:
                while at < nxt:
                    k = _comma(out, k, first)
                    v, vl = _varint(buf, at)
                    k = _value(out, k, _U64K, v)
                    at += vl
        p = nxt
    return k


@kernel(cache=True, nogil=True)
def _io(buf, p, stop, out, k):  # pragma: no cover - compiled
    """An IOInfo message (three strings, the last of each number counts) as its JSON object;
    -1 for any other field or a string past ASCII."""
    at1 = at2 = at3 = n1 = n2 = n3 = 0
    while p < stop:
        number, wire, v, a, nxt = _field(buf, p, stop)
        if number < 1 or number > 3 or wire != 2:
            return -1
        if number == 1:
            at1, n1 = a, nxt - a
        elif number == 2:
            at2, n2 = a, nxt - a
        else:
            at3, n3 = a, nxt - a
        p = nxt
    out[k] = 123
    k += 1
    first = k
    for number, at, n in ((1, at1, n1), (2, at2, n2), (3, at3, n3)):
        if n and k >= 0:
            k = _string(buf, at, n, out, _key(out, _comma(out, k, first), _IO_KEY + number))
    if k < 0:
        return -1
    out[k] = 125
    return k + 1


@kernel(cache=True, nogil=True)
def _list(buf, p, stop, kind, out, k):  # pragma: no cover - compiled
    """A list attribute's message (values of value kind ``kind``, packed or not) as
    ``{"values": [...]}``, or ``{}`` when it holds none; -1 for another field or a string past
    ASCII."""
    start = k
    k = _lit(out, k, _OPEN_LIST)
    first = k
    width = 8 if _WIRE_OF[kind] == 1 else 4
    while p < stop:
        number, wire, v, at, nxt = _field(buf, p, stop)
        if number != 1:
            return -1
        if wire == _WIRE_OF[kind]:
            k = _comma(out, k, first)
            k = _string(buf, at, nxt - at, out, k) if kind == _STR else _value(out, k, kind, v)
            if k < 0:
                return -1
        elif wire == 2 and kind != _STR:
            if _WIRE_OF[kind] != 0 and (nxt - at) % width:
                return -1
            while at < nxt:
                if _WIRE_OF[kind] == 0:
                    v, vl = _varint(buf, at)
                    if vl > 10 or at + vl > nxt:
                        return -1
                else:
                    v, vl = _fixed(buf, at, width), width
                k = _comma(out, k, first)
                k = _value(out, k, kind, v)
                at += vl
        else:
            return -1
        p = nxt
    if k == first:
        return _lit(out, start, _EMPTY)
    return _lit(out, k, _CLOSE_LIST)


@kernel(cache=True, nogil=True)
def _attr(buf, p, stop, out, k):  # pragma: no cover - compiled
    """An AttributeProto message as its JSON object (name, doc string, value); -1 for a value
    kind left to the caller, two value fields, an unknown field or a string past ASCII."""
    name_at = name_len = doc_at = doc_len = 0
    count = slot = kind = v_at = v_end = 0
    value = _U64(0)
    while p < stop:
        number, wire, v, at, nxt = _field(buf, p, stop)
        if number == 1 and wire == 2:
            name_at, name_len = at, nxt - at
        elif number == 2 and wire == 2:
            doc_at, doc_len = at, nxt - at
        elif 2 < number < 40 and _ATTR_KIND[number] and count == 0 and \
                wire == (2 if _ATTR_KIND[number] > 16 else _WIRE_OF[_ATTR_KIND[number]]):
            count, slot, kind, value, v_at, v_end = 1, number, _ATTR_KIND[number], v, at, nxt
        else:
            return -1
        p = nxt
    out[k] = 123
    k += 1
    first = k
    if name_len:
        k = _string(buf, name_at, name_len, out, _key(out, k, _ATTR_KEY + 1))
    if doc_len and k >= 0:
        k = _comma(out, k, first)
        k = _string(buf, doc_at, doc_len, out, _key(out, k, _ATTR_KEY + 2))
    if count and k >= 0:
        k = _comma(out, k, first)
        k = _key(out, k, _ATTR_KEY + slot)
        if kind > 16:
            k = _list(buf, v_at, v_end, kind - 16, out, k)
        elif kind == _STR:
            k = _string(buf, v_at, v_end - v_at, out, k)
        else:
            k = _value(out, k, kind, value)
    if k < 0:
        return -1
    out[k] = 125
    return k + 1


@kernel(cache=True, nogil=True)
def _node(buf, p0, stop, out, k):  # noqa: C901  # pragma: no cover - compiled
    """A Node message as its JSON object; -1 when it is left to the caller (module docstring)."""
    node_id = kind = begin = duration = _U64(0)
    name_at = name_len = in_at = out_at = nctrl = ndata = nattr = 0
    in_len = out_len = -1
    # the bytes holding the fields of each list (from the first one's key to the last one's
    # end): what its writer walks again, instead of the whole message
    c_lo = d_lo = a_lo = stop
    c_hi = d_hi = a_hi = p0
    p = p0
    while p < stop:
        number, wire, v, a, nxt = _field(buf, p, stop)
        if number < 0:  # a field that does not decode, or runs past the message
            return -1
        if number == 4:
            c_lo, c_hi = min(c_lo, p), nxt
        elif number == 5:
            d_lo, d_hi = min(d_lo, p), nxt
        elif number == 10:
            a_lo, a_hi = min(a_lo, p), nxt
        if wire == 0 and number < 8 and number != 2:
            if number == 1:
                node_id = v
            elif number == 3:
                kind = v
            elif number == 4:
                nctrl += 1
            elif number == 5:
                ndata += 1
            elif number == 6:
                begin = v
            else:
                duration = v
        elif wire == 2 and (number == 4 or number == 5):
            c = _packed_count(buf, a, nxt)
            if c < 0:
                return -1
            nctrl, ndata = (nctrl + c, ndata) if number == 4 else (nctrl, ndata + c)
        elif wire == 2 and number == 10:
            nattr += 1
        elif wire == 2 and number == 2:
            name_at, name_len = a, nxt - a
        elif wire == 2 and number == 8 and in_len < 0:
            in_at, in_len = a, nxt - a
        elif wire == 2 and number == 9 and out_len < 0:
            out_at, out_len = a, nxt - a
        else:
            return -1
        p = nxt
    if kind >= _U64(len(_TYPE_PTR) - 1):
        return -1
    t = np.int64(kind)
    if _TYPE_PTR[t] == _TYPE_PTR[t + 1]:
        return -1
    out[k] = 123
    k += 1
    first = k
    if node_id:
        k = _value(out, _key(out, k, 1), _U64K, node_id)
    if name_len > 0:
        k = _string(buf, name_at, name_len, out, _key(out, _comma(out, k, first), 2))
        if k < 0:
            return -1
    if t:
        k = _key(out, _comma(out, k, first), 3)
        out[k] = 34
        k = _copy(out, k + 1, _TYPE_BYTES, _TYPE_PTR[t], _TYPE_PTR[t + 1])
        out[k] = 34
        k += 1
    for number, count, lo, hi in ((4, nctrl, c_lo, c_hi), (5, ndata, d_lo, d_hi)):
        if count:
            k = _key(out, _comma(out, k, first), number)
            out[k] = 91
            k = _deps(buf, lo, hi, number, out, k + 1)
            out[k] = 93
            k += 1
    if begin:
        k = _value(out, _key(out, _comma(out, k, first), 6), _U64K, begin)
    if duration:
        k = _value(out, _key(out, _comma(out, k, first), 7), _U64K, duration)
    if in_len >= 0:
        k = _io(buf, in_at, in_at + in_len, out, _key(out, _comma(out, k, first), 8))
    if out_len >= 0 and k >= 0:
        k = _io(buf, out_at, out_at + out_len, out, _key(out, _comma(out, k, first), 9))
    if nattr and k >= 0:
        k = _attrs(buf, a_lo, a_hi, out, _key(out, _comma(out, k, first), 10))
    if k < 0:
        return -1
    out[k] = 125
    return k + 1


@kernel(cache=True, nogil=True, inline="always")
def _comma(out, k, first):  # pragma: no cover - compiled
    """``", "`` when something was written since ``first``."""
    return _lit(out, k, _COMMA) if k > first else k


@kernel(cache=True, nogil=True)
def _attrs(buf, p, stop, out, k):  # pragma: no cover - compiled
    """The node's attributes (the fields 10 among the fields ``buf[p:stop]`` of its message) as a
    JSON list; -1 as :func:`_attr`."""
    out[k] = 91
    k += 1
    first = k
    while p < stop:
        number, wire, v, at, nxt = _field(buf, p, stop)
        if number == 10:
            k = _comma(out, k, first)
            k = _attr(buf, at, nxt, out, k)
            if k < 0:
                return -1
        p = nxt
    out[k] = 93
    return k + 1
