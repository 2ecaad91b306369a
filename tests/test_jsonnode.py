"""``node_dict`` against protobuf's own ``json_format.MessageToDict``: the same dicts, keys in the
same order, on recorded traces and on nodes holding every attribute kind."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from google.protobuf import json_format

from chakra_core.io._etio import EtReader
from chakra_core.io._jsonnode import node_dict
from chakra_core.io._schema import AttributeProto, IOInfo, Node
from chakra_core.pipeline._pipeline import load_traces

ROOT = Path(__file__).resolve().parents[1]


def _reference(n: Node) -> str:
    return json.dumps(json_format.MessageToDict(n, preserving_proto_field_name=True))


def test_golden_trace():
    nodes = [n for batch in EtReader(str(ROOT / "tests" / "data" / "golden.0.et")).batches() for n in batch]
    assert nodes
    for n in nodes:
        d = node_dict(n)
        if d is not None:
            assert json.dumps(d) == _reference(n)


def test_recorded_pytorch_traces():
    pytest.importorskip("chakra_pytorch")
    traces = load_traces([str(ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp")], "pytorch")
    seen = 0
    for rt in traces:
        for n in rt.nodes():
            d = node_dict(n)
            if d is not None:
                seen += 1
                assert json.dumps(d) == _reference(n)
    assert seen > 100


def test_every_attribute_kind():
    n = Node(id=(1 << 64) - 1, name="x", type=7, start_time_micros=5, duration_micros=0, data_deps=[1, 2],
             ctrl_deps=[3], inputs=IOInfo(values="[1]", shapes="[[2]]", types="['int']"))
    n.attr.extend([
        AttributeProto(name="a", int64_val=-5), AttributeProto(name="b", uint64_val=1 << 63),
        AttributeProto(name="c", int32_val=0), AttributeProto(name="d", bool_val=False),
        AttributeProto(name="e", string_val="é"), AttributeProto(name="f", bytes_val=b"\x00\xff"),
        AttributeProto(name="g", double_val=0.1), AttributeProto(name="h", doc_string="doc"),
        AttributeProto(name="i", sint64_val=-(1 << 62)), AttributeProto(name="j", fixed32_val=7),
    ])
    n.attr.add(name="k").int64_list.values.extend([1, -2])
    n.attr.add(name="l").string_list.values.extend(["p", "q"])
    n.attr.add(name="m").bool_list.SetInParent()
    assert json.dumps(node_dict(n)) == _reference(n)


@pytest.mark.parametrize("attr", [AttributeProto(name="f", float_val=0.1), AttributeProto(name="d", double_val=math.inf)])
def test_left_to_json_format(attr):
    n = Node(id=1)
    n.attr.append(attr)
    assert node_dict(n) is None
    assert node_dict(Node(id=1, type=99)) is None
