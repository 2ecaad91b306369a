"""The fast JSON node decoder agrees with protobuf's ParseDict on every value it accepts."""

from __future__ import annotations

import math

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
