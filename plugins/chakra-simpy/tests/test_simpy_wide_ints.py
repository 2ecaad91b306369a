"""Integers past int64 (a ``uint64_val`` of 2**63 or more) in what the simulator reads, run
without validation: a size it cannot time is a one-line error naming the file and the node
(exit 2); a tag, which it only compares, simulates."""

from __future__ import annotations

import pytest

from chakra_core import CommType, GlobalMetadata, MemoryRank, Node, NodeType, TraceSet, make_attr

WIDE = 1 << 63


def _node(i, kind, **attrs):
    """A node of ``kind`` whose integer attributes are written as ``uint64_val`` where past int64."""
    n = Node(id=i, name=f"n{i}", type=kind)
    n.attr.extend(make_attr(k, v, "uint64_val" if v >= WIDE else "int64_val") for k, v in attrs.items())
    return n


def _coll(size):
    return _node(1, NodeType.COMM_COLL_NODE, comm_type=int(CommType.ALL_REDUCE), comm_size=size)


def _message(send, size=64, tag=0, size_key="comm_size"):
    peer = {"comm_dst": 1} if send else {"comm_src": 0}
    return _node(1, NodeType.COMM_SEND_NODE if send else NodeType.COMM_RECV_NODE, **peer, comm_tag=tag,
                 **{size_key: size})


def _simulate(chakra_cli, tmp_path, per_rank):
    TraceSet([MemoryRank(r, GlobalMetadata(), nodes) for r, nodes in enumerate(per_rank)]).write(tmp_path / "t")
    return chakra_cli("-q", "simulate", tmp_path, "--backend", "simpy", "--no-validate")


@pytest.mark.parametrize("per_rank, key", [
    ([[_coll(WIDE)], [_coll(WIDE)]], "comm_size"),
    ([[_message(True, WIDE)], [_message(False, WIDE)]], "comm_size"),
    ([[_message(True, WIDE, size_key="tensor_size")], [_message(False, WIDE, size_key="tensor_size")]],
     "tensor_size"),
    ([[_node(1, NodeType.MEM_LOAD_NODE, tensor_size=WIDE)], [_node(1, NodeType.COMP_NODE)]], "tensor_size"),
], ids=["collective", "message", "message-tensor", "memory"])
def test_a_size_past_int64_is_one_line_naming_the_file_and_node(chakra_cli, tmp_path, per_rank, key):
    status, out, err = _simulate(chakra_cli, tmp_path, per_rank)
    assert status == 2 and out == "", err
    assert err == f"chakra simulate: error: {tmp_path / 't.0.et'}:node 1: {key} = {WIDE} bytes does not fit int64\n"


def test_a_tag_past_int64_simulates(chakra_cli, tmp_path):
    tag = (1 << 64) - 1
    status, out, err = _simulate(chakra_cli, tmp_path, [[_message(True, tag=tag)], [_message(False, tag=tag)]])
    assert status == 0, err
    assert "rank 1: finished at" in out
