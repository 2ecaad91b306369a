"""Attributes: written in exactly the spec's slots, read from any integer slot."""

from __future__ import annotations

import pytest

from chakra_core._attrs import CONVENTIONAL_SLOTS, get_bool, get_int, get_str, make_attr, set_attr
from chakra_core._schema import Node

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
