"""The fast JSON node decoder agrees with protobuf's ParseDict on every value it accepts."""

from __future__ import annotations

import math

import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st

from chakra_core.io._jsonfast import node_from_dict
from chakra_core.io._schema import AttributeProto, Node

_RANGES = {
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1), "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1), "sint32": (-(2**31), 2**31 - 1), "sint64": (-(2**63), 2**63 - 1),
    "fixed32": (0, 2**32 - 1), "fixed64": (0, 2**64 - 1), "sfixed32": (-(2**31), 2**31 - 1),
    "sfixed64": (-(2**63), 2**63 - 1),
}
_floats32 = st.floats(width=32, allow_nan=True, allow_infinity=True).filter(lambda x: abs(x) < 3.4e38 or math.isinf(x))
_VALUES = {
    **{k: st.integers(*r) for k, r in _RANGES.items()},
    "double": st.floats(allow_nan=True, allow_infinity=True),
    "float": _floats32,
    "bool": st.booleans(),
    "string": st.text(max_size=8),
    "bytes": st.binary(max_size=8),
}


@st.composite
def attrs(draw):
    kind = draw(st.sampled_from(sorted(_VALUES)))
    a = AttributeProto(name=draw(st.text(max_size=5)), doc_string=draw(st.text(max_size=3)))
    if draw(st.booleans()):
        setattr(a, f"{kind}_val", draw(_VALUES[kind]))
    else:
        getattr(a, f"{kind}_list").values.extend(draw(st.lists(_VALUES[kind], max_size=4)))
    return a


@st.composite
def nodes(draw):
    u64 = st.integers(0, 2**64 - 1)
    n = Node(id=draw(u64), name=draw(st.text(max_size=10)), type=draw(st.integers(0, 7)),
             start_time_micros=draw(u64), duration_micros=draw(u64))
    n.data_deps.extend(draw(st.lists(u64, max_size=3)))
    n.ctrl_deps.extend(draw(st.lists(u64, max_size=3)))
    if draw(st.booleans()):
        n.inputs.values = draw(st.text(max_size=10))
        n.outputs.SetInParent()
    n.attr.extend(draw(st.lists(attrs(), max_size=4)))
    return n


@settings(max_examples=400, deadline=None)
@given(nodes())
def test_fast_decoder_matches_parsedict(node):
    d = json_format.MessageToDict(node, preserving_proto_field_name=True)
    fast = node_from_dict(d)
    assert fast is not None
    assert fast.SerializeToString() == json_format.ParseDict(d, Node()).SerializeToString()


def test_unknown_shapes_fall_back():
    assert node_from_dict({"id": "1", "bogus": 2}) is None
    assert node_from_dict({"id": 1.5}) is None
    assert node_from_dict({"attr": [{"name": "x", "int64_val": True}]}) is None
    assert node_from_dict([1]) is None


@pytest.mark.parametrize("attr", [{"name": "x", "int64_val": "7", "bool_val": True},
                                  {"name": "x", "bool_val": True, "int64_val": "7"},
                                  {"name": "y", "float_val": 1e39},
                                  {"name": "z", "float_list": {"values": [1.0, -1e39]}}])
def test_what_parsedict_refuses_is_left_to_it(attr):
    # two members of the value oneof (one would be lost), a float past float32's range (it would
    # be stored as infinity): the fast path leaves them to ParseDict, which words the error
    d = {"id": "1", "attr": [attr]}
    assert node_from_dict(d) is None
    with pytest.raises(json_format.ParseError):
        json_format.ParseDict(d, Node())


def test_the_largest_float32_as_jsonize_writes_it_is_taken():
    # its shortest repr, 3.4028235e38, is a double just past the float32 maximum, which ParseDict refuses
    got = node_from_dict({"id": "1", "attr": [{"name": "m", "float_val": 3.4028235e38},
                                              {"name": "l", "float_list": {"values": [-3.4028235e38]}}]})
    assert got is not None
    assert got.attr[0].float_val == 3.4028234663852886e38 and got.attr[1].float_list.values[0] == -3.4028234663852886e38
