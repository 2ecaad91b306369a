"""Fast decoding of Node objects from the canonical protobuf JSON mapping.

``google.protobuf.json_format.ParseDict`` is exact but slow (about 15,000 nodes/s); this decodes
the shapes our JSON form contains directly into the message, and returns None for anything it
does not recognise, so that the caller falls back to ``ParseDict`` (which also words the
errors).  Exactness: 64-bit integers arrive as decimal strings, doubles as the shortest repr
(exact), floats as the shortest float32 repr (rounded back to the same float32 by the field),
bytes as base64, and "NaN"/"Infinity"/"-Infinity" as strings.  Field names are the proto
names (``duration_micros``, what ``chakra jsonize`` writes) or protobuf's JSON names
(``durationMicros``, what ``MessageToJson`` and so the MLCommons ``chakra_jsonizer`` write).
``unknown_fields`` (fields of a newer schema, see :mod:`._unknown`) is appended to the message
it is on: the node, its ``inputs``/``outputs``, the metadata, an attribute or a list value.  A
node type number past the enum's int32 range raises :class:`OutOfRange` (``ParseDict`` would
keep its low 32 bits).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import struct
from typing import Any

from chakra_core.io._schema import AttributeProto, GlobalMetadata, Node, NodeType
from chakra_core.io._unknown import UNKNOWN_KEY, merge_unknown

__all__ = ["node_from_dict", "metadata_from_dict", "OutOfRange"]

_NODE_TYPES = {t.name: int(t) for t in NodeType}
_SCALAR_INT = {"id", "start_time_micros", "duration_micros"}
_IO_KEYS = {"values", "shapes", "types"}
_INT32 = range(-(1 << 31), 1 << 31)
_SPECIAL = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_INT_SLOTS = {
    "int32_val", "int64_val", "uint32_val", "uint64_val", "sint32_val", "sint64_val",
    "fixed32_val", "fixed64_val", "sfixed32_val", "sfixed64_val",
}
_FLOAT_SLOTS = {"double_val", "float_val"}
_INT_LISTS = {s.replace("_val", "_list") for s in _INT_SLOTS}
_FLOAT_LISTS = {"double_list", "float_list"}
_LISTS = _INT_LISTS | _FLOAT_LISTS | {"bytes_list", "bool_list", "string_list"}


def _json_name(proto_name: str) -> str:
    """protobuf's JSON name of a field: lowerCamelCase of the proto name."""
    first, *rest = proto_name.split("_")
    return first + "".join(w[:1].upper() + w[1:] for w in rest)


_NODE_FIELDS = _SCALAR_INT | {"name", "type", "data_deps", "ctrl_deps", "inputs", "outputs", "attr"}
_ATTR_FIELDS = _INT_SLOTS | _FLOAT_SLOTS | _LISTS | {"name", "doc_string", "bool_val", "string_val", "bytes_val"}
#: JSON name -> proto name, for the fields whose names differ
_PROTO_NAMES = {_json_name(f): f for f in _NODE_FIELDS | _ATTR_FIELDS if _json_name(f) != f}


class _Unknown(Exception):
    """A shape this fast path does not handle."""


class OutOfRange(Exception):
    """A node type number that the enum (an int32) cannot hold."""


def _int(v: Any) -> int:
    if isinstance(v, bool):
        raise _Unknown
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    raise _Unknown


def _float(v: Any) -> float:
    if isinstance(v, bool):
        raise _Unknown
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and v in _SPECIAL:
        return _SPECIAL[v]
    raise _Unknown


def _float32(v: Any) -> float:
    """A float field's value: past float32's range (1e39) it would be stored as infinity, so
    :class:`OverflowError` sends it to ``ParseDict``, which refuses it."""
    f = _float(v)
    struct.pack("<f", f)
    return f


def _bytes(v: Any) -> bytes:
    if not isinstance(v, str):
        raise _Unknown
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise _Unknown from None


def _attr(d: Any, a: AttributeProto) -> None:
    if not isinstance(d, dict):
        raise _Unknown
    valued = False
    for k, v in d.items():
        k = _PROTO_NAMES.get(k, k)
        if k == "name" or k == "doc_string":
            if not isinstance(v, str):
                raise _Unknown
            setattr(a, k, v)
            continue
        if k != UNKNOWN_KEY:
            if valued:  # a second member of the value oneof: ParseDict refuses it
                raise _Unknown
            valued = True
        if k in _INT_SLOTS:
            setattr(a, k, _int(v))
        elif k in _FLOAT_SLOTS:
            setattr(a, k, _float32(v) if k == "float_val" else _float(v))
        elif k == "bool_val" or k == "string_val":
            if not isinstance(v, bool if k == "bool_val" else str):
                raise _Unknown
            setattr(a, k, v)
        elif k == "bytes_val":
            a.bytes_val = _bytes(v)
        elif k == UNKNOWN_KEY:
            merge_unknown(a, v)
        elif k in _LISTS:
            _list(v, k, getattr(a, k))
        else:
            raise _Unknown


def _list(v: Any, k: str, field: Any) -> None:
    """Fill the list slot ``k`` (``field``) from its JSON form ``{"values": [...]}``."""
    if not isinstance(v, dict) or set(v) - {"values", UNKNOWN_KEY}:
        raise _Unknown
    if UNKNOWN_KEY in v:
        merge_unknown(field, v[UNKNOWN_KEY])
    values = v.get("values", [])
    if not isinstance(values, list):
        raise _Unknown
    if k in _INT_LISTS:
        field.values.extend(_int(x) for x in values)
    elif k in _FLOAT_LISTS:
        field.values.extend((_float32 if k == "float_list" else _float)(x) for x in values)
    elif k == "bytes_list":
        field.values.extend(_bytes(x) for x in values)
    else:
        want = bool if k == "bool_list" else str
        if not all(isinstance(x, want) for x in values):
            raise _Unknown
        field.values.extend(values)
    if not values:
        field.SetInParent()  # an empty list still selects the oneof slot


def _node_type(v: Any) -> int:
    """A node type given by name (``"COMP_NODE"``) or number; OutOfRange past int32."""
    t = _NODE_TYPES.get(v) if isinstance(v, str) else None
    if t is None:
        t = _int(v)
        if t not in _INT32:
            raise OutOfRange(f"node type {t} is out of the range of the enum (a 32-bit integer)")
    return t


def _io(v: Any, io: Any) -> None:
    """Fill a node's ``inputs`` or ``outputs`` message (``io``) from its JSON form: strings by
    field name."""
    if not isinstance(v, dict) or set(v) - _IO_KEYS - {UNKNOWN_KEY}:
        raise _Unknown
    io.SetInParent()
    for k, s in v.items():
        if k == UNKNOWN_KEY:
            merge_unknown(io, s)
        elif isinstance(s, str):
            setattr(io, k, s)
        else:
            raise _Unknown


def node_from_dict(d: Any) -> Node | None:
    """The Node for ``d``, or None when ``d`` has a shape this fast path does not handle."""
    if not isinstance(d, dict):
        return None
    n = Node()
    try:
        for k, v in d.items():
            k = _PROTO_NAMES.get(k, k)
            if k in _SCALAR_INT:
                setattr(n, k, _int(v))
            elif k == "name":
                if not isinstance(v, str):
                    raise _Unknown
                n.name = v
            elif k == "type":
                n.type = _node_type(v)
            elif k == "data_deps" or k == "ctrl_deps":
                if not isinstance(v, list):
                    raise _Unknown
                getattr(n, k).extend(_int(x) for x in v)
            elif k == "inputs" or k == "outputs":
                _io(v, getattr(n, k))
            elif k == "attr":
                if not isinstance(v, list):
                    raise _Unknown
                for item in v:
                    _attr(item, n.attr.add())
            elif k == UNKNOWN_KEY:
                merge_unknown(n, v)
            else:
                raise _Unknown
    except (_Unknown, TypeError, ValueError, OverflowError):
        _check_type(d)
        return None
    return n


def _check_type(d: dict) -> None:
    """OutOfRange when ``d``'s type is a number past int32 (checked before ``ParseDict``, which
    would keep its low 32 bits, is given the node)."""
    with contextlib.suppress(_Unknown):
        _node_type(d.get("type"))


def metadata_from_dict(d: Any) -> GlobalMetadata | None:
    """The GlobalMetadata for ``d``, or None when ``d`` has a shape this fast path does not handle."""
    if not isinstance(d, dict):
        return None
    m = GlobalMetadata()
    try:
        for k, v in d.items():
            if k == "version" and isinstance(v, str):
                m.version = v
            elif k == "attr" and isinstance(v, list):
                for item in v:
                    _attr(item, m.attr.add())
            elif k == UNKNOWN_KEY:
                merge_unknown(m, v)
            else:
                raise _Unknown
    except (_Unknown, TypeError, ValueError, OverflowError):
        return None
    return m
