"""A Node as protobuf's JSON mapping (proto field names), without ``json_format``'s per-field
machinery.

:func:`node_dict` gives what ``json_format.MessageToDict(node, preserving_proto_field_name=True)``
gives, in the same key order (the set fields in field-number order): 64-bit integers as decimal
strings, 32-bit ones as numbers, the node type by name, bytes in base64, finite doubles as they
are.  A node it does not handle so (a float or a non-finite double, a type number without a name,
a list value of a kind other than integers, strings and bools) returns None: the caller takes
``json_format``.  Unknown fields are the caller's (:mod:`._unknown`).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import FieldDescriptor as F

from chakra_core.io._schema import AttributeProto, Node, NodeType

__all__ = ["node_dict"]

_TYPE_NAMES = {int(t): t.name for t in NodeType}
_WIDE = {F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_SINT64, F.TYPE_FIXED64, F.TYPE_SFIXED64}
_NARROW = {F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_SINT32, F.TYPE_FIXED32, F.TYPE_SFIXED32, F.TYPE_BOOL,
           F.TYPE_STRING}


class _Slow(Exception):
    """A value this module leaves to ``json_format``."""


def _double(v: float) -> float:
    if math.isinf(v) or math.isnan(v):
        raise _Slow
    return v


def _bytes(v: bytes) -> str:
    return base64.b64encode(v).decode("ascii")


def _list_of(kind: int) -> Callable[[Any], dict]:
    """The converter of a list message whose ``values`` are of field type ``kind``."""
    if kind in _WIDE:
        return lambda m: {"values": [str(x) for x in m.values]} if len(m.values) else {}
    if kind in _NARROW:
        return lambda m: {"values": list(m.values)} if len(m.values) else {}
    if kind == F.TYPE_BYTES:
        return lambda m: {"values": [_bytes(x) for x in m.values]} if len(m.values) else {}
    return lambda m: _fail()


def _fail() -> Any:
    raise _Slow


def _value_converter(fd: Any) -> Callable[[Any], Any]:
    """How ``json_format`` writes a value of attribute field ``fd``."""
    if fd.message_type is not None:
        return _list_of(fd.message_type.fields_by_name["values"].type)
    if fd.type in _WIDE:
        return str
    if fd.type in _NARROW:
        return lambda v: v
    if fd.type == F.TYPE_BYTES:
        return _bytes
    if fd.type == F.TYPE_DOUBLE:
        return _double
    return lambda v: _fail()


_ATTR_FIELDS = {fd.number: (fd.name, _value_converter(fd)) for fd in AttributeProto.DESCRIPTOR.fields}


def _attr(a: AttributeProto) -> dict:
    d = {}
    for fd, v in a.ListFields():
        name, conv = _ATTR_FIELDS[fd.number]
        d[name] = conv(v)
    return d


def _io(m: Any) -> dict:
    return {fd.name: v for fd, v in m.ListFields()}


def _type(v: int) -> str:
    name = _TYPE_NAMES.get(v)
    if name is None:
        raise _Slow
    return name


_NODE_FIELDS: dict[int, tuple[str, Callable[[Any], Any]]] = {
    1: ("id", str), 2: ("name", lambda v: v), 3: ("type", _type),
    4: ("ctrl_deps", lambda v: [str(x) for x in v]), 5: ("data_deps", lambda v: [str(x) for x in v]),
    6: ("start_time_micros", str), 7: ("duration_micros", str), 8: ("inputs", _io), 9: ("outputs", _io),
    10: ("attr", lambda v: [_attr(a) for a in v]),
}


def node_dict(n: Node) -> dict | None:
    """``n`` as ``json_format.MessageToDict`` writes it (proto field names), or None (see the
    module docstring)."""
    d = {}
    try:
        for fd, v in n.ListFields():
            name, conv = _NODE_FIELDS[fd.number]
            d[name] = conv(v)
    except _Slow:
        return None
    return d
