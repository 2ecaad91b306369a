"""Typed access to node attributes.

Writers in the wild disagree on which ``oneof`` slot an attribute lives in.  We WRITE each
conventional attribute in exactly the slot of the spec (see ``CONVENTIONAL_SLOTS``) and READ
an integer from any integer slot, so traces from every known producer work.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._schema import AttributeProto

__all__ = [
    "CONVENTIONAL_SLOTS",
    "INT_SLOTS",
    "get_attr",
    "get_int",
    "int_value",
    "get_str",
    "get_bool",
    "set_attr",
    "attr_value",
    "attr_dict",
    "make_attr",
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
_MISSING = object()


def attr_value(attr: AttributeProto) -> tuple[str | None, Any]:
    """Return ``(slot, value)`` of one attribute; lists come back as Python lists."""
    slot = attr.WhichOneof("value")
    if slot is None:
        return None, None
    value = getattr(attr, slot)
    if slot in _LIST_SLOTS:
        value = list(value.values)
    return slot, value


def get_attr(node, name: str, default: Any = None) -> Any:
    """Value of attribute ``name`` of ``node`` (any slot), or ``default``."""
    for a in node.attr:
        if a.name == name:
            return attr_value(a)[1]
    return default


def int_value(attr: AttributeProto, default: Any = None) -> Any:
    """The integer in ``attr`` from any integer slot (a bool as 0/1), else ``default``."""
    slot = attr.WhichOneof("value")
    if slot in INT_SLOTS:
        return getattr(attr, slot)
    if slot == "bool_val":
        return int(attr.bool_val)
    return default


def get_int(node, name: str, default: int | None = None) -> int | None:
    """Integer attribute from any integer slot (bool counts as 0/1); ``default`` if absent.

    A value stored in a floating or string slot is not an integer and gives ``default``.
    """
    for a in node.attr:
        if a.name == name:
            return int_value(a, default)
    return default


def get_str(node, name: str, default: str | None = None) -> str | None:
    """String attribute ``name``; integers are converted to their decimal form."""
    for a in node.attr:
        if a.name == name:
            slot = a.WhichOneof("value")
            if slot == "string_val":
                return a.string_val
            if slot in INT_SLOTS:
                return str(getattr(a, slot))
            return default
    return default


def get_bool(node, name: str, default: bool | None = None) -> bool | None:
    """Boolean attribute ``name`` (``bool_val`` or any integer slot)."""
    v = get_int(node, name, _MISSING)  # type: ignore[arg-type]
    return default if v is _MISSING else bool(v)


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


def make_attr(name: str, value: Any, slot: str | None = None) -> AttributeProto:
    """Build an AttributeProto in the conventional slot (or ``slot`` when given)."""
    a = AttributeProto(name=name)
    _fill(a, value, slot or _slot_for(name, value))
    return a


def _fill(a: AttributeProto, value: Any, slot: str) -> None:
    if slot in _LIST_SLOTS:
        getattr(a, slot).values.extend(value)
    else:
        setattr(a, slot, value)


def set_attr(node, name: str, value: Any, slot: str | None = None) -> None:
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
