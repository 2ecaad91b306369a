"""Attributes: written in exactly the spec's slots, read from any integer slot."""

from __future__ import annotations

import pytest

from chakra_core import NodeAttrs, add_attr, get_attr
from chakra_core.io._schema import Node
from chakra_core.trace._attrs import CONVENTIONAL_SLOTS, get_bool, get_int, get_str, make_attr, set_attr

SPEC_SLOTS = {  # shared/spec/chakra-et.md, "Attribute conventions"
    "is_cpu_op": "bool_val", "num_ops": "int64_val", "tensor_size": "uint64_val", "comm_type": "int64_val",
    "comm_size": "int64_val", "comm_priority": "int32_val", "comm_src": "int32_val", "comm_dst": "int32_val",
    "comm_tag": "int32_val", "pg_name": "string_val", "involved_dim": "bool_list", "rf_id": "int64_val",
    "fw_parent": "int64_val", "seq_id": "int64_val", "scope": "int64_val", "tid": "int64_val",
    "fw_tid": "int64_val", "stream": "int64_val", "op_schema": "string_val",
}


def test_conventional_slots_match_spec():
    assert CONVENTIONAL_SLOTS == SPEC_SLOTS


@pytest.mark.parametrize("name", sorted(SPEC_SLOTS))
def test_set_attr_writes_spec_slot(name):
    n = Node(id=1)
    value = {"bool_val": True, "string_val": "3", "bool_list": [True]}.get(SPEC_SLOTS[name], 5)
    set_attr(n, name, value)
    assert n.attr[0].WhichOneof("value") == SPEC_SLOTS[name]


@pytest.mark.parametrize("slot", ["int32_val", "int64_val", "uint32_val", "uint64_val", "sint32_val",
                                  "sint64_val", "fixed32_val", "fixed64_val", "sfixed32_val", "sfixed64_val"])
def test_get_int_reads_any_integer_slot(slot):
    n = Node(id=1)
    n.attr.append(make_attr("comm_size", 1234, slot=slot))
    assert get_int(n, "comm_size") == 1234


def test_float_and_missing_are_not_integers():
    n = Node(id=1)
    n.attr.append(make_attr("num_ops", 2.5, slot="double_val"))
    assert get_int(n, "num_ops") is None
    assert get_int(n, "absent", 7) == 7


def test_set_attr_replaces_and_reads_back():
    n = Node(id=1)
    set_attr(n, "comm_size", 10)
    set_attr(n, "comm_size", 20)
    assert len(n.attr) == 1 and get_int(n, "comm_size") == 20
    set_attr(n, "pg_name", "2")
    set_attr(n, "is_cpu_op", False)
    assert get_str(n, "pg_name") == "2" and get_bool(n, "is_cpu_op") is False


def _mixed_node() -> Node:
    """A node as producers write them: integers in several slots, a repeated name, a string."""
    n = Node(id=1)
    n.attr.extend([make_attr("comm_size", 7, slot="uint32_val"), make_attr("comm_size", 9),
                   make_attr("pg_name", "2"), make_attr("comm_src", 3, slot="sfixed64_val"),
                   make_attr("is_cpu_op", False), make_attr("num_ops", 2.5, slot="double_val"),
                   make_attr("involved_dim", [True, False])])
    return n


@pytest.mark.parametrize("name", ["comm_size", "pg_name", "comm_src", "is_cpu_op", "num_ops", "involved_dim", "absent"])
def test_node_attrs_reads_as_the_module_functions(name):
    n = _mixed_node()
    ix = NodeAttrs(n)
    assert ix.get_int(name, -1) == get_int(n, name, -1)
    assert ix.get_str(name, "-") == get_str(n, name, "-")
    assert ix.get_bool(name) == get_bool(n, name)
    assert ix.get(name, "-") == get_attr(n, name, "-")
    assert (name in ix) == (name != "absent")


def test_node_attrs_values():
    ix = NodeAttrs(_mixed_node())
    assert ix.get_int("comm_size") == 7  # the first of a repeated name, as get_int
    assert ix.get_str("comm_src") == "3" and ix.get_int("pg_name") is None
    assert ix.get("involved_dim") == [True, False] and ix.get_bool("is_cpu_op") is False
    assert ix.get_int("num_ops", 0) == 0


def test_add_attr_appends_in_the_conventional_slot():
    n = Node(id=1)
    add_attr(n, "comm_src", 4)
    add_attr(n, "involved_dim", [False, True])
    assert [a.WhichOneof("value") for a in n.attr] == ["int32_val", "bool_list"]
    assert get_int(n, "comm_src") == 4 and get_attr(n, "involved_dim") == [False, True]
