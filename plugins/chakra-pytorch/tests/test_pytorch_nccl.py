"""The NCCL form, on the hand-made 2-rank fixture tests/data/nccl (see tests/data/README.md)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from chakra_core import CommType, NodeType, get_bool, get_int, get_str, validate
from chakra_pytorch import convert_rank, find_rank_files, open_pytorch
from chakra_pytorch.comms import kind_of_kernel

DATA = Path(__file__).resolve().parent / "data" / "nccl"


def _graph(rank: int, kineto: bool = True):
    files = [str(DATA / f"pytorch_et.{rank}.json")]
    if kineto:
        files.append(str(DATA / f"kineto.{rank}.json"))
    (rf,), _ = find_rank_files(files)
    rf.rank = rank
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convert_rank(rf, world=2)


def _by_name(g):
    return {n.name: n for n in g.nodes}


@pytest.mark.parametrize("rank", [0, 1])
def test_nccl_kernels_are_the_communication_nodes(rank):
    g = _graph(rank)
    n = _by_name(g)
    ar = n["ncclDevKernel_AllReduce_Sum_f32_RING_LL"].to_node()
    assert ar.type == NodeType.COMM_COLL_NODE and not get_bool(ar, "is_cpu_op")
    assert (get_int(ar, "comm_type"), get_int(ar, "comm_size"), get_str(ar, "pg_name")) == (
        CommType.ALL_REDUCE, 1024 * 4, "1")  # record_param_comms: 1024 Float on group "1"
    ag = n["ncclDevKernel_AllGather_RING_LL"].to_node()
    assert (get_int(ag, "comm_type"), get_int(ag, "comm_size"), get_str(ag, "pg_name")) == (
        CommType.ALL_GATHER, 256 * 2, "0")  # the per-rank shard: 256 BFloat16
    p2p = n["ncclDevKernel_SendRecv"].to_node()
    assert p2p.type == (NodeType.COMM_SEND_NODE if rank == 0 else NodeType.COMM_RECV_NODE)
    assert (get_int(p2p, "comm_src"), get_int(p2p, "comm_dst"), get_int(p2p, "comm_tag"),
            get_int(p2p, "comm_size")) == (0, 1, 3, 400)
    # the c10d ops stay on the host thread as the CPU time of the launch
    for name in ("c10d::allreduce_", "c10d::_allgather_base_"):
        assert n[name].type == NodeType.COMP_NODE


def test_cpu_to_gpu_launch_and_stream_order():
    g = _graph(0)
    n = _by_name(g)
    gemm = n["sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8"]
    add_kernel = next(v for k, v in n.items() if k.startswith("void at::native::vectorized"))
    assert n["aten::mm"].id in gemm.ctrl
    assert n["aten::add_"].id in add_kernel.ctrl and gemm.id in add_kernel.ctrl  # stream 7 order
    ag, ar = n["ncclDevKernel_AllGather_RING_LL"], n["ncclDevKernel_AllReduce_Sum_f32_RING_LL"]
    assert ar.id in ag.ctrl and n["c10d::_allgather_base_"].id in ag.ctrl  # stream 20 order + launch
    assert (gemm.start, gemm.dur) == (40, 200)  # Kineto times from the ProfilerStep start


def test_gpu_to_cpu_synchronisation():
    g = _graph(0)
    n = _by_name(g)
    memcpy = n["Memcpy DtoH (Device -> Pageable)"]
    add_kernel = next(v for k, v in n.items() if k.startswith("void at::native::vectorized"))
    # aten::item: a stream sync on stream 7; the memcpy it launched itself is inside it
    item = n["aten::item"]
    assert add_kernel.id in item.ctrl and memcpy.id not in item.ctrl
    assert n["ncclDevKernel_AllReduce_Sum_f32_RING_LL"].id not in item.ctrl  # other stream
    # aten::zero_: a device sync waits for the last work launched on every stream
    zero = n["aten::zero_"]
    for k in (memcpy, n["ncclDevKernel_AllGather_RING_LL"], n["ncclDevKernel_SendRecv"]):
        assert k.id in zero.ctrl


def test_stream_waits_for_another_stream():
    g = _graph(0)
    n = _by_name(g)
    # the NCCL stream waits (cudaStreamWaitEvent) for the event recorded on the compute stream
    # after the gemm was launched: the all-reduce kernel depends on the gemm
    gemm = n["sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8"]
    assert gemm.id in n["ncclDevKernel_AllReduce_Sum_f32_RING_LL"].ctrl
    assert gemm.id not in n["ncclDevKernel_AllGather_RING_LL"].ctrl  # only the next kernel


def test_without_kineto_the_c10d_ops_carry_the_communication():
    g = _graph(0, kineto=False)
    n = _by_name(g)
    ar = n["c10d::allreduce_"].to_node()
    assert ar.type == NodeType.COMM_COLL_NODE
    assert (get_int(ar, "comm_size"), get_str(ar, "pg_name")) == (4096, "1")
    send = n["c10d::send"].to_node()
    assert send.type == NodeType.COMM_SEND_NODE and get_int(send, "comm_dst") == 1
    assert not any(x.name.startswith("ncclDevKernel") for x in g.nodes)


def test_nccl_set_validates_and_carries_groups():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(DATA)])
    assert ts.ranks == [0, 1]
    assert ts.process_groups == {"1": [0, 1]}
    assert [str(f) for f in validate(ts)] == []


@pytest.mark.parametrize("name, kind", [
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "all_reduce"),
    ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "reduce_scatter"),
    ("ncclDevKernel_AllGather_RING_LL", "all_gather"),
    ("ncclDevKernel_Broadcast_RING_LL", "broadcast"),
    ("ncclDevKernel_Reduce_Sum_f32_RING_LL", "reduce"),
    ("ncclDevKernel_SendRecv", "sendrecv"),
    ("ncclKernel_AllToAll_f32", "all_to_all"),
    ("sm90_xmma_gemm", None),
])
def test_kernel_names(name, kind):
    assert kind_of_kernel(name) == kind
