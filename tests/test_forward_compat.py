"""Traces of a newer schema: node types and attribute kinds ours does not know.

Hand-made fixture (no framework here writes a newer schema): the upstream schema is adding node
types (storage, batch, checkpoint); here one node has type 9, an attribute carries a value in
oneof slot 33 (a varint) and slot 34 (bytes), and a node carries a field 11.  Each command must
keep them (convert, jsonize), report them (stats), warn (validate) or skip them with a note
(the simulator and the ASTRA-sim exporter).
"""

from __future__ import annotations

import json

import pytest

from chakra_core import (
    AttributeProto,
    EtReader,
    GlobalMetadata,
    Node,
    NodeType,
    compute_stats,
    convert,
    export,
    jsonize,
    make_attr,
    open_traceset,
    simulate,
    validate,
    write_et,
)

CKPT = 9  # a node type beyond COMM_COLL_NODE (7)
#: slot 33 = 5 (tag 33<<3|0 as a varint: 0x88 0x02), slot 34 = b"ab" (tag 0x8a 0x02, length 2)
NEW_ATTR_BYTES = bytes([0x88, 0x02, 0x05, 0x8A, 0x02, 0x02, 0x61, 0x62])
#: Node field 11 (a varint 7): tag 11<<3|0 = 0x58
NEW_NODE_BYTES = bytes([0x58, 0x07])


def _newer_attr(name: str) -> AttributeProto:
    a = AttributeProto(name=name)
    a.MergeFromString(NEW_ATTR_BYTES)
    return a


def _nodes() -> list[Node]:
    first = Node(id=1, name="fwd", type=NodeType.COMP_NODE, duration_micros=5)
    first.attr.append(make_attr("is_cpu_op", True))
    ckpt = Node(id=2, name="checkpoint", type=CKPT, duration_micros=7, ctrl_deps=[1])
    ckpt.MergeFromString(NEW_NODE_BYTES)
    last = Node(id=3, name="bwd", type=NodeType.COMP_NODE, duration_micros=3, ctrl_deps=[2])
    last.attr.extend([make_attr("is_cpu_op", True), _newer_attr("future")])
    coll = Node(id=4, name="allreduce", type=NodeType.COMM_COLL_NODE, ctrl_deps=[3])
    coll.attr.extend([make_attr("comm_type", 0), make_attr("comm_size", 4096), make_attr("pg_name", "0"),
                      _newer_attr("compression")])
    return [first, ckpt, last, coll]


@pytest.fixture
def newer(tmp_path):
    for r in (0, 1):
        write_et(tmp_path / f"new.{r}.et", GlobalMetadata(version="0.0.4"), _nodes())
    return tmp_path / "new"


def test_convert_and_jsonize_keep_what_they_do_not_know(newer, tmp_path):
    convert(str(newer), tmp_path / "conv")
    jsonize(str(newer), f"{tmp_path}/js/")
    convert(str(tmp_path / "js"), tmp_path / "back")
    for r in (0, 1):
        original = newer.with_name(f"new.{r}.et").read_bytes()
        assert (tmp_path / f"conv.{r}.et").read_bytes() == original
        assert (tmp_path / f"back.{r}.et").read_bytes() == original
    text = (tmp_path / "js" / "trace.0.json").read_text()
    assert '"type": 9' in text and '"unknown_fields"' in text
    nodes = list(EtReader(tmp_path / "back.0.et"))
    assert nodes[1].type == CKPT and nodes[2].attr[1].SerializeToString().endswith(NEW_ATTR_BYTES)


def test_stats_reports_unknown_types(newer):
    s = compute_stats(open_traceset(str(newer)))
    assert s["unknown_types"] == {"9": 2} and s["by_type"]["9"] == 2
    assert s["per_rank"][0]["longest_path_us"] == 5 + 7 + 3


def test_validate_warns_and_does_not_fail(newer):
    f = validate(open_traceset(str(newer)))
    assert {(x.rule, x.node_id, x.severity) for x in f} == {
        ("unknown-type", 2, "warning"), ("unknown-attr", 4, "warning")}
    assert "'compression'" in next(x.message for x in f if x.rule == "unknown-attr")


def test_simulator_skips_unknown_types_with_a_note(newer, tmp_path):
    pytest.importorskip("chakra_simpy")
    res = simulate(str(newer), "simpy")
    assert any("node types this schema does not know (9)" in n for n in res.notes)
    # the same set without the checkpoint node (bwd right after fwd) finishes at the same time
    plain = [n for n in _nodes() if n.type != CKPT]
    plain[1].ctrl_deps[:] = [1]
    for r in (0, 1):
        write_et(tmp_path / f"plain.{r}.et", GlobalMetadata(version="0.0.4"), plain)
    ref = simulate(str(tmp_path / "plain"), "simpy")
    assert [r["finish_ns"] for r in res.ranks] == [r["finish_ns"] for r in ref.ranks]
    assert res.ranks[0]["finish_ns"] > (5 + 3) * 1000


def test_exporter_skips_unknown_types_with_a_note(newer, tmp_path):
    pytest.importorskip("chakra_astrasim")
    export(str(newer), "astrasim", tmp_path / "ex")
    report = json.loads((tmp_path / "ex" / "report.json").read_text())["report"]
    assert report["removed"]["unknown_node_type"] == 2
    assert report["dependencies"]["rewired_through_removed"] >= 2
