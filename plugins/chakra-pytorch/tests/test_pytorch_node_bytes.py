"""A converted node's message as written: protobuf's own serialization of the same node, with the
attributes the node lists, whether its attribute entries come from the table or are made anew."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra_core import Node, get_attr
from chakra_pytorch import convert_rank, find_rank_files, outnode

DATA = Path(__file__).resolve().parent / "data"


def _nodes(name: str, rank: int = 0):
    rfs, _ = find_rank_files([str(DATA / name)])
    return convert_rank(rfs[rank]).nodes


@pytest.mark.parametrize("name", ["mlp", "collectives", "nccl", "pipeline_dp"])
def test_written_bytes_are_the_protobuf_serialization_with_the_listed_attributes(name):
    nodes = _nodes(name)
    assert len(nodes) > 10
    for n in nodes:
        data = n.to_bytes()
        msg = Node.FromString(data)
        assert msg.SerializeToString() == data  # protobuf's field order and encoding
        assert [(a.name, get_attr(msg, a.name)) for a in msg.attr] == list(n.attrs())
        assert (msg.id, msg.name, msg.type, msg.duration_micros) == (n.id, n.name, n.type, max(n.dur, 0))


def test_entries_made_anew_when_the_table_is_full(monkeypatch):
    nodes = _nodes("collectives", 1)
    written = [n.to_bytes() for n in nodes]
    monkeypatch.setattr(outnode, "_MAX_PIECES", 1)
    outnode._PIECES.clear()
    assert [n.to_bytes() for n in nodes] == written
    assert len(outnode._PIECES) == 1


def test_rf_ids_and_negative_integers_are_int64_varints():
    node = outnode.OutNode(7, "aten::mm", 4, host=(2**40, -1, -5, 0, 1, None, "s"))
    attrs = {a.name: a for a in Node.FromString(node.to_bytes()).attr}
    assert attrs["rf_id"].int64_val == 2**40 and attrs["fw_parent"].int64_val == -1
    assert attrs["seq_id"].int64_val == -5 and "fw_tid" not in attrs
    assert attrs["op_schema"].string_val == "s" and attrs["is_cpu_op"].bool_val is True
