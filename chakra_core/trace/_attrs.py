"""Typed access to node attributes.

Writers in the wild disagree on which ``oneof`` slot an attribute lives in.  We WRITE each
conventional attribute in exactly the slot of the spec (see ``CONVENTIONAL_SLOTS``) and READ
an integer from any integer slot, so traces from every known producer work.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, overload

from chakra_core.base._errors import TraceFormatError
from chakra_core.io._schema import AttributeProto, Node

__all__ = [
    "CONVENTIONAL_SLOTS",
    "INT_SLOTS",
    "get_attr",
    "get_int",
    "int_value",
    "get_str",
    "str_value",
    "get_bool",
    "set_attr",
    "attr_value",
    "attr_dict",
    "make_attr",
    "add_attr",
    "NodeAttrs",
]

#: name -> the ``oneof`` slot to write it in.
CONVENTIONAL_SLOTS: dict[str, str] = {
    "is_cpu_op": "bool_val",
    "num_ops": "int64_val",
    "tensor_size": "uint64_val",
    "comm_type": "int64_val",
    "comm_size": "int64_val",
    "comm_priority": "int32_val",
    "comm_src": "int32_val",
    "comm_dst": "int32_val",
    "comm_tag": "int32_val",
    "pg_name": "string_val",
    "involved_dim": "bool_list",
    "rf_id": "int64_val",
    "fw_parent": "int64_val",
    "seq_id": "int64_val",
    "scope": "int64_val",
    "tid": "int64_val",
    "fw_tid": "int64_val",
    "stream": "int64_val",
    "op_schema": "string_val",
}

#: every scalar slot that holds an integer.
INT_SLOTS = frozenset(
    {
        "int32_val", "int64_val", "uint32_val", "uint64_val", "sint32_val", "sint64_val",
        "fixed32_val", "fixed64_val", "sfixed32_val", "sfixed64_val",
    }
)
_LIST_SLOTS = frozenset(
    {
        "double_list", "float_list", "int32_list", "int64_list", "uint32_list", "uint64_list",
        "sint32_list", "sint64_list", "fixed32_list", "fixed64_list", "sfixed32_list",
        "sfixed64_list", "bool_list", "string_list", "bytes_list",
    }
)


def attr_value(attr: AttributeProto) -> tuple[str | None, Any]:
    """Return ``(slot, value)`` of one attribute; lists come back as Python lists."""
    slot = attr.WhichOneof("value")
    if slot is None:
        return None, None
    value = getattr(attr, slot)
    if slot in _LIST_SLOTS:
        value = list(value.values)
    return slot, value


def _find(node: Node, name: str) -> AttributeProto | None:
    """The first attribute of ``node`` named ``name``."""
    for a in node.attr:
        if a.name == name:
            return a
    return None


def get_attr(node: Node, name: str, default: Any = None) -> Any:
    """Value of attribute ``name`` of ``node`` (any slot), or ``default``."""
    a = _find(node, name)
    return default if a is None else attr_value(a)[1]


def int_value(attr: AttributeProto, default: Any = None) -> Any:
    """The integer in ``attr`` from any integer slot (a bool as 0/1), else ``default``."""
    slot = attr.WhichOneof("value")
    if slot in INT_SLOTS:
        return getattr(attr, slot)
    if slot == "bool_val":
        return int(attr.bool_val)
    return default


def str_value(attr: AttributeProto, default: Any = None) -> Any:
    """The string in ``attr`` (an integer slot in decimal form), else ``default``."""
    slot = attr.WhichOneof("value")
    if slot == "string_val":
        return attr.string_val
    if slot in INT_SLOTS:
        return str(getattr(attr, slot))
    return default


@overload
def get_int(node: Node, name: str, default: int) -> int: ...
@overload
def get_int(node: Node, name: str, default: None = None) -> int | None: ...
def get_int(node: Node, name: str, default: int | None = None) -> int | None:
    """Integer attribute from any integer slot (bool counts as 0/1); ``default`` if absent.

    A value stored in a floating or string slot is not an integer and gives ``default``.
    """
    a = _find(node, name)
    return default if a is None else int_value(a, default)


@overload
def get_str(node: Node, name: str, default: str) -> str: ...
@overload
def get_str(node: Node, name: str, default: None = None) -> str | None: ...
def get_str(node: Node, name: str, default: str | None = None) -> str | None:
    """String attribute ``name``; integers are converted to their decimal form."""
    a = _find(node, name)
    return default if a is None else str_value(a, default)


def get_bool(node: Node, name: str, default: bool | None = None) -> bool | None:
    """Boolean attribute ``name`` (``bool_val`` or any integer slot)."""
    a = _find(node, name)
    v = None if a is None else int_value(a)
    return default if v is None else bool(v)


class NodeAttrs:
    """The attributes of one node indexed by name, for reading several of them.

    ``get_*`` of the module scan the node's attribute list on every call; this indexes it once
    (the first attribute of a repeated name wins, as there) and reads in O(1)::

        ix = NodeAttrs(node)
        size, pg = ix.get_int("comm_size", 0), ix.get_str("pg_name", "")
    """

    __slots__ = ("_by_name",)

    def __init__(self, node: Node):
        self._by_name = {a.name: a for a in reversed(node.attr)}

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def get(self, name: str, default: Any = None) -> Any:
        """Value of attribute ``name`` (any slot; lists as lists), or ``default``."""
        a = self._by_name.get(name)
        return default if a is None else attr_value(a)[1]

    def get_int(self, name: str, default: Any = None) -> Any:
        """As :func:`get_int`: any integer slot (bool as 0/1), else ``default``."""
        a = self._by_name.get(name)
        return default if a is None else int_value(a, default)

    def get_str(self, name: str, default: Any = None) -> Any:
        """As :func:`get_str`: the string (integers in decimal), else ``default``."""
        a = self._by_name.get(name)
        return default if a is None else str_value(a, default)

    def get_bool(self, name: str, default: bool | None = None) -> bool | None:
        """As :func:`get_bool`: ``bool_val`` or any integer slot, else ``default``."""
        a = self._by_name.get(name)
        v = None if a is None else int_value(a)
        return default if v is None else bool(v)


def _slot_for(name: str, value: Any) -> str:
    slot = CONVENTIONAL_SLOTS.get(name)
    if slot:
        return slot
    if isinstance(value, bool):
        return "bool_val"
    if isinstance(value, int):
        return "int64_val"
    if isinstance(value, float):
        return "double_val"
    if isinstance(value, str):
        return "string_val"
    if isinstance(value, bytes):
        return "bytes_val"
    if isinstance(value, (list, tuple)):
        items = list(value)
        if items and all(isinstance(v, bool) for v in items):
            return "bool_list"
        if all(isinstance(v, int) and not isinstance(v, bool) for v in items):
            return "int64_list"
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
            return "double_list"
        if all(isinstance(v, str) for v in items):
            return "string_list"
    raise TypeError(f"attribute {name!r}: cannot store a value of type {type(value).__name__}")


_RANGES = {"int32": "-2**31 to 2**31-1", "uint32": "0 to 2**32-1", "int64": "-2**63 to 2**63-1",
           "uint64": "0 to 2**64-1", "sint32": "-2**31 to 2**31-1", "sint64": "-2**63 to 2**63-1"}


def make_attr(name: str, value: Any, slot: str | None = None) -> AttributeProto:
    """Build an AttributeProto in the conventional slot (or ``slot`` when given)."""
    a = AttributeProto(name=name)
    _fill(a, value, slot or _slot_for(name, value))
    return a


class AttributeRangeError(TraceFormatError, ValueError):
    """A value that does not fit its attribute's protobuf field (a number past int64, say): bad
    input or options (exit 2), and still the ValueError protobuf raises for it."""


def _fill(a: AttributeProto, value: Any, slot: str) -> None:
    try:
        if slot in _LIST_SLOTS:
            getattr(a, slot).values.extend(value)
        else:
            setattr(a, slot, value)
    except ValueError as e:
        if "out of range" not in str(e):
            raise
        shown = value if isinstance(value, (int, float)) else "a value"
        raise AttributeRangeError(f"attribute {a.name!r}: {shown} does not fit its field {slot} "
                                  f"({_RANGES.get(slot.split('_')[0], 'a fixed-size number')})") from None


def add_attr(node: Node, name: str, value: Any, slot: str | None = None) -> None:
    """Append attribute ``name`` to a node that does not have it yet (no search, no copy)."""
    _fill(node.attr.add(name=name), value, slot or _slot_for(name, value))


def set_attr(node: Node, name: str, value: Any, slot: str | None = None) -> None:
    """Set attribute ``name`` on ``node`` in its conventional slot, replacing any old value."""
    slot = slot or _slot_for(name, value)
    for a in node.attr:
        if a.name == name:
            a.ClearField("value") if a.WhichOneof("value") else None
            _fill(a, value, slot)
            return
    _fill(node.attr.add(name=name), value, slot)


def attr_dict(attrs: Iterable[AttributeProto]) -> dict[str, Any]:
    """All attributes as ``{name: value}`` (the last one wins on a repeated name)."""
    return {a.name: attr_value(a)[1] for a in attrs}
