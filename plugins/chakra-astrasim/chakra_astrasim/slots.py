"""Attribute access for the conversion: read any integer slot, write the conventional one.

Faster than :mod:`chakra_core._attrs` for this use: a node's attributes are indexed once by
name, and new attributes are added in place (no intermediate message copy).
"""

from __future__ import annotations

from chakra_core._attrs import CONVENTIONAL_SLOTS, INT_SLOTS, attr_value, int_value
from chakra_core._schema import Node

__all__ = ["put_attr", "int_attr", "value_attr", "str_attr"]


def put_attr(node: Node, name: str, value) -> None:
    """Append attribute ``name`` in its conventional slot (no intermediate message copy)."""
    slot = CONVENTIONAL_SLOTS[name]
    a = node.attr.add(name=name)
    if slot == "bool_list":
        a.bool_list.values.extend(value)
    else:
        setattr(a, slot, value)


def int_attr(ix: dict, name: str, default=None):
    """Integer attribute from any integer slot (bool as 0/1), else ``default``."""
    a = ix.get(name)
    return default if a is None else int_value(a, default)


def value_attr(ix: dict, name: str):
    """Value of attribute ``name`` in whatever slot it is (lists as lists), or None."""
    a = ix.get(name)
    return None if a is None else attr_value(a)[1]


def str_attr(ix: dict, name: str) -> str:
    """String attribute (integers in decimal), "" when absent."""
    a = ix.get(name)
    if a is None:
        return ""
    slot = a.WhichOneof("value")
    if slot == "string_val":
        return a.string_val
    return str(getattr(a, slot)) if slot in INT_SLOTS else ""
