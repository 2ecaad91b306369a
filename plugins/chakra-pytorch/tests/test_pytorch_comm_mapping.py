"""Mapping of communication nodes: c10d operands and record_param_comms attributes."""

from __future__ import annotations

import json
import warnings

import pytest

from chakra_core import CommType, NodeType, get_int, get_str
from chakra_pytorch import convert_rank, find_rank_files
from chakra_pytorch.comms import comm_from_c10d, comm_from_param_comms


def _pc(name: str, nin: int, nout: int, dtype: str = "Float", pg: str = "3") -> dict:
    return {"collective_name": name, "dtype": dtype, "in_msg_nelems": nin, "out_msg_nelems": nout,
            "pg_name": pg, "pg_size": 4, "global_rank_start": 0, "global_rank_stride": 2}


# (collective_name as NCCL's ProcessGroup records it, in, out elements) -> (kind, bytes)
@pytest.mark.parametrize("name, nin, nout, kind, size", [
    ("allreduce", 100, 100, "all_reduce", 400),
    ("broadcast", 100, 100, "broadcast", 400),
    ("_allgather_base", 100, 400, "all_gather", 400),  # the shard
    ("allgather_into_tensor_coalesced", 100, 400, "all_gather", 400),
    ("_reduce_scatter_base", 400, 100, "reduce_scatter", 1600),  # the full input
    ("reduce_scatter_tensor_coalesced", 400, 100, "reduce_scatter", 1600),
    ("all_to_all", 400, 400, "all_to_all", 1600),
    ("all_to_allv", 400, 400, "all_to_all", 1600),
    ("reduce", 100, 100, "reduce", 400),
    ("gather", 100, 400, "gather", 400),
    ("scatter", 400, 100, "scatter", 400),  # what each rank receives
    ("barrier", 1, 1, "barrier", 0),
    ("send", 100, 100, "send", 400),
    ("recv", 100, 100, "recv", 400),
])
def test_record_param_comms(name, nin, nout, kind, size):
    info = comm_from_param_comms(_pc(name, nin, nout), [])
    assert (info.kind, info.size_bytes, info.pg_name, info.rank_stride) == (kind, size, "3", 2)


def test_group_ranks_from_start_and_stride():
    info = comm_from_param_comms(_pc("send", 10, 10), [])  # start 0, stride 2, size 4
    assert list(info.group_ranks()) == [0, 2, 4, 6]
    assert comm_from_c10d("c10d::send", [[], "<Object>", 1, 0]).group_ranks() is None


def test_record_param_comms_dtype_sizes():
    assert comm_from_param_comms(_pc("allreduce", 10, 10, "BFloat16"), []).size_bytes == 20
    assert comm_from_param_comms(_pc("allreduce", 10, 10, "Double"), []).size_bytes == 80
    # an unknown dtype: the element size of the first tensor of the inputs
    assert comm_from_param_comms(_pc("allreduce", 10, 10, "Mystery"), [[1, 2, 0, 10, 8, "cuda:0"]]).size_bytes == 80
    assert comm_from_param_comms(_pc("no_such_collective", 1, 1), []) is None


def test_record_param_comms_without_attributes():
    # older traces: only the inputs (input tensors, output tensors, ..., collective name, ...)
    t_in, t_out = [[1, 2, 0, 64, 2, "cuda:0"]], [[3, 4, 0, 256, 2, "cuda:0"]]
    info = comm_from_param_comms({}, [t_in, t_out, 7, False, "0", 1, "_allgather_base", [], [], 0, 1, 4])
    assert (info.kind, info.size_bytes) == ("all_gather", 128)  # the input shard
    info = comm_from_param_comms({}, [t_out, t_in, "scatter"])
    assert (info.kind, info.size_bytes) == ("scatter", 128)  # the output chunk
    assert comm_from_param_comms({}, [t_in, t_out, "no_such"]) is None
    # PyTorch 2.0's macro: inputs (input tensors, seq, pg, rank, name, splits), the output
    # tensors as the node's outputs; scatter's size used to be read from the sequence number (0)
    info = comm_from_param_comms({}, [t_out, 12, 0, 1, "scatter", [], []], [t_in])
    assert (info.kind, info.size_bytes) == ("scatter", 128)
    info = comm_from_param_comms({}, [t_in, 13, 0, 1, "recv", [], []], [t_in])
    assert (info.kind, info.size_bytes) == ("recv", 128)


def test_c10d_send_peer_and_tag():
    info = comm_from_c10d("c10d::send", [[[1, 2, 0, 10, 4, "cpu"]], "<Object>", 3, 42])
    assert (info.kind, info.size_bytes, info.peer, info.tag) == ("send", 40, 3, 42)
    assert comm_from_c10d("c10d::no_such_op", []) is None


def test_standalone_record_param_comms_is_a_node(tmp_path):
    # hand-made: a record_param_comms node that no c10d op encloses (older NCCL code paths call it
    # directly from a record_function scope); it becomes the communication node itself
    def attrs(rf, schema=""):
        return [{"name": "rf_id", "type": "uint64", "value": rf}, {"name": "tid", "type": "uint64", "value": 1},
                {"name": "op_schema", "type": "string", "value": schema}]
    pc = [{"name": k, "type": "string" if isinstance(v, str) else "uint64", "value": v}
          for k, v in _pc("allreduce", 256, 256, "Half", "0").items()]
    empty = {"values": [], "shapes": [], "types": []}
    nodes = [
        {"id": 5, "name": "aten::mul", "ctrl_deps": 4, "inputs": empty, "outputs": empty,
         "attrs": attrs(2, "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor")},
        {"id": 7, "name": "record_param_comms", "ctrl_deps": 6, "inputs": empty, "outputs": empty,
         "attrs": attrs(4) + pc},
        {"id": 6, "name": "DDP.reduce_bucket", "ctrl_deps": 4, "inputs": empty, "outputs": empty,
         "attrs": attrs(3)},
        {"id": 4, "name": "ProfilerStep#0", "ctrl_deps": 2, "inputs": empty, "outputs": empty, "attrs": attrs(1)},
        {"id": 2, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1, "inputs": empty,
         "outputs": empty, "attrs": attrs(0)},
        {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1, "inputs": empty,
         "outputs": empty, "attrs": attrs(0)},
    ]
    p = tmp_path / "et.0.json"
    p.write_text(json.dumps({"schema": "1.1.1-chakra.1.0.0", "pid": 1, "nodes": nodes}))
    (rf,), _ = find_rank_files([str(p)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = convert_rank(rf, world=2)
    comm = next(n for n in g.nodes if n.name == "record_param_comms").to_node()
    assert comm.type == NodeType.COMM_COLL_NODE
    assert (get_int(comm, "comm_type"), get_int(comm, "comm_size"), get_str(comm, "pg_name")) == (
        CommType.ALL_REDUCE, 512, "0")
    assert [n.name for n in g.nodes if n.type == NodeType.COMP_NODE] == ["aten::mul"]


def test_c10d_recv_any_source_has_a_tag_and_no_peer():
    # recv_any_source_(Tensor[] tensors, ProcessGroup process_group, int tag): the third operand
    # is the tag (it used to be taken for the peer rank)
    info = comm_from_c10d("c10d::recv_any_source_", [[[1, 2, 0, 10, 4, "cpu"]], "<Object>", 5])
    assert (info.kind, info.size_bytes, info.peer, info.tag) == ("recv", 40, None, 5)


@pytest.mark.parametrize("values, words", [
    ([[[1, 2, 0, 10, 4, "cpu"]], "<Object>", 1, 2**40], "tag 1099511627776"),
    ([[[1, 2, 0, 10, 4, "cpu"]], "<Object>", 2**41, 3], "peer rank 2199023255552"),
    ([[[1, 2, 0, 10, 4, "cpu"]], "<Object>", -2, 3], "peer rank -2"),
])
def test_c10d_peer_and_tag_must_fit_their_slots(values, words):
    # comm_src/comm_dst/comm_tag are int32 slots: such values used to crash the writer
    with pytest.raises(ValueError, match=words):
        comm_from_c10d("c10d::send", values)


def test_record_param_comms_group_beyond_the_ranks_is_not_used():
    attrs = {"collective_name": "send", "dtype": "Float", "in_msg_nelems": 1, "out_msg_nelems": 1,
             "pg_name": "3", "pg_size": 4, "global_rank_start": 2**40, "global_rank_stride": 1}
    assert comm_from_param_comms(attrs, []).group_ranks() is None


def test_sizes_beyond_int64_are_refused():
    # comm_size is an int64 slot: 2**62 elements of 8 bytes used to crash the writer
    with pytest.raises(ValueError, match="size in bytes 36893488147419103232"):
        comm_from_c10d("c10d::allreduce_", [[[1, 2, 0, 2**62, 8, "cpu"]], "<Object>", "<Object>", None, False, -1])
    with pytest.raises(ValueError, match="size in bytes 36893488147419103232"):
        comm_from_param_comms(_pc("allreduce", 2**63, 2**63), [])


@pytest.mark.parametrize("tensor", [[1, 2, 0, "x", 2, "cpu"], [1, 2, 0, 1000, "two", "cpu"], [1, 2, 0, 1000, True, "cpu"]])
def test_a_tensor_whose_numel_or_element_size_is_not_an_integer_is_an_error(tensor):
    # such a tensor was skipped: the collective's comm_size summed the others, 0 alone, silently
    values = [[tensor, [3, 4, 0, 1000, 2, "cpu"]], "<Object>", "<Object>", None, False, -1]
    with pytest.raises(ValueError, match="must be integers"):
        comm_from_c10d("c10d::allreduce_", values)
