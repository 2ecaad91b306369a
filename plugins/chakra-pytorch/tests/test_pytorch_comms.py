"""gloo communication on real 2-rank traces (recording/record_collectives.py, record_ddp.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from chakra_core import CommType, NodeType, get_int, get_str, validate
from chakra_pytorch import convert_rank, find_rank_files, open_pytorch

DATA = Path(__file__).resolve().parent / "data"
F32 = 4
WORLD = 2
# elements per call, as in recording/record_collectives.py (SIZES)
N = {
    "all_reduce": 1000, "broadcast": 200, "all_gather": 30, "all_gather_into_tensor": 40,
    "reduce_scatter": 50, "reduce_scatter_tensor": 60, "all_to_all": 70, "all_to_all_single": 80,
    "reduce": 90, "gather": 100, "scatter": 110, "send": 120, "isend": 130, "batch": 140,
    "group_all_reduce": 150,
}


def _comm_nodes(name: str, rank: int):
    rfs, _ = find_rank_files([str(DATA / name)])
    g = convert_rank(rfs[rank])
    return g, [n.to_node() for n in g.nodes if n.type in (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE,
                                                          NodeType.COMM_RECV_NODE)]


@pytest.mark.parametrize("rank", [0, 1])
def test_every_collective_kind_and_size(rank):
    _, comms = _comm_nodes("collectives", rank)
    colls = [(CommType(get_int(n, "comm_type")).name, get_int(n, "comm_size"))
             for n in comms if n.type == NodeType.COMM_COLL_NODE]
    assert colls == [
        ("ALL_REDUCE", N["all_reduce"] * F32),
        ("BROADCAST", N["broadcast"] * F32),
        ("ALL_GATHER", N["all_gather"] * F32),  # the per-rank shard
        ("ALL_GATHER", N["all_gather_into_tensor"] * F32),
        ("REDUCE_SCATTER", N["reduce_scatter"] * WORLD * F32),  # the full input
        ("REDUCE_SCATTER", N["reduce_scatter_tensor"] * WORLD * F32),
        ("ALL_TO_ALL", N["all_to_all"] * WORLD * F32),  # the whole send buffer
        ("ALL_TO_ALL", N["all_to_all_single"] * WORLD * F32),
        ("REDUCE", N["reduce"] * F32),
        ("GATHER", N["gather"] * F32),  # what each rank contributes
        ("SCATTER", N["scatter"] * F32),  # what each rank receives
        ("BARRIER", 0),
        ("ALL_REDUCE", N["group_all_reduce"] * F32),
    ]
    roots = {CommType(get_int(n, "comm_type")).name: get_int(n, "root") for n in comms
             if n.type == NodeType.COMM_COLL_NODE and get_int(n, "root") is not None}
    assert roots == {"BROADCAST": 0, "REDUCE": 0, "GATHER": 0, "SCATTER": 0}


@pytest.mark.parametrize("rank", [0, 1])
def test_point_to_point_peers_and_tags(rank):
    _, comms = _comm_nodes("collectives", rank)
    p2p = [("send" if n.type == NodeType.COMM_SEND_NODE else "recv", get_int(n, "comm_src"),
            get_int(n, "comm_dst"), get_int(n, "comm_tag"), get_int(n, "comm_size"))
           for n in comms if n.type != NodeType.COMM_COLL_NODE]
    if rank == 0:
        expect = [("send", 0, 1, 7, N["send"] * F32), ("recv", 1, 0, 9, N["isend"] * F32),
                  ("send", 0, 1, 11, N["batch"] * F32), ("recv", 1, 0, 11, N["batch"] * F32)]
    else:
        expect = [("recv", 0, 1, 7, N["send"] * F32), ("send", 1, 0, 9, N["isend"] * F32),
                  ("send", 1, 0, 11, N["batch"] * F32), ("recv", 0, 1, 11, N["batch"] * F32)]
    assert p2p == expect


def test_groups_from_pg_init_and_distributed_info():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(DATA / "collectives")])
    # new_group([0, 1]) is process group "1"; "0" is the default (world) group
    assert ts.process_groups == {"1": [0, 1]}
    g, comms = _comm_nodes("collectives", 0)
    assert g.groups == {"0": [0, 1], "1": [0, 1]}
    assert {get_str(n, "pg_name") for n in comms} == {"0"}  # gloo names no group: the default one
    meta = next(n for n in g.nodes if n.type == NodeType.METADATA_NODE).to_node()
    assert meta.name == "## process_group:init ##"
    assert '"pg_name":"1","ranks":[0,1]' in meta.inputs.values


def test_blocking_collectives_are_waited_for_by_the_next_host_op():
    g, _ = _comm_nodes("collectives", 0)
    by_id = {n.id: n for n in g.nodes}
    comm_ids = [n.id for n in g.nodes if n.type != NodeType.COMP_NODE and n.type != NodeType.METADATA_NODE]
    waited = {d for n in g.nodes if n.type == NodeType.COMP_NODE for d in n.ctrl if d in comm_ids}
    # every call of the script is blocking (async_op=False, or wait() right after)
    assert waited == set(comm_ids)
    def deps(n):
        """n's dependencies, through the [idle] node of its hand-off to a gloo worker."""
        out = []
        for d in n.ctrl:
            out += by_id[d].ctrl if by_id[d].name == "[idle]" and by_id[d].cpu is False else [d]
        return out

    # issue order: each collective depends on the previous collective of the thread
    colls = [by_id[i] for i in comm_ids if by_id[i].type == NodeType.COMM_COLL_NODE]
    for prev, n in zip(colls, colls[1:]):
        assert prev.id in deps(n)
    # batch_isend_irecv: the send and the receive run side by side after the same host op
    batch = [by_id[i] for i in comm_ids if get_int(by_id[i].to_node(), "comm_tag") == 11]
    assert len(batch) == 2 and deps(batch[0]) == deps(batch[1])
    assert by_id[deps(batch[0])[0]].type == NodeType.COMP_NODE


def _param_bytes() -> int:
    # recording/record_ddp.py: Linear(16, 32) -> ReLU -> Linear(32, 4), float32
    return (16 * 32 + 32 + 32 * 4 + 4) * F32


@pytest.mark.parametrize("rank", [0, 1])
def test_ddp_one_bucket_all_reduce_of_all_gradients(rank):
    g, comms = _comm_nodes("ddp", rank)
    ar = [n for n in comms if get_int(n, "comm_type") == CommType.ALL_REDUCE]
    assert [get_int(n, "comm_size") for n in ar] == [_param_bytes()] == [2704]
    # DDP's async all-reduce: not waited for by the next op, but by the first op after it ended
    node = next(n for n in g.nodes if n.id == ar[0].id)
    waiter = next(n for n in g.nodes if node.id in n.ctrl and n.type == NodeType.COMP_NODE)
    assert waiter.start >= node.end
    assert waiter.name in ("aten::as_strided", "aten::copy_", "[idle]")


@pytest.mark.parametrize("name", ["collectives", "ddp"])
def test_sets_validate_across_ranks(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(DATA / name)])
    assert ts.ranks == [0, 1]
    assert [str(f) for f in validate(ts)] == []


@pytest.mark.parametrize("rank", [0, 1])
def test_ddp_small_buckets_split_the_gradients(rank):
    # recording/record_ddp_buckets.py: 3 layers, bucket_cap_mb=0.002
    params = (16 * 32 + 32 + 32 * 32 + 32 + 32 * 4 + 4) * F32
    g, comms = _comm_nodes("ddp_buckets", rank)
    sizes = [get_int(n, "comm_size") for n in comms if get_int(n, "comm_type") == CommType.ALL_REDUCE]
    assert len(sizes) >= 2 and sum(sizes) == params == 6928
    reduces = [n for n in g.nodes if n.type == NodeType.COMM_COLL_NODE
               and get_int(n.to_node(), "comm_type") == CommType.ALL_REDUCE]
    by_id = {m.id: m for m in g.nodes}

    def ancestors(m) -> set[int]:
        seen, pending = set(), list(m.ctrl)
        while pending:
            d = pending.pop()
            if d not in seen:
                seen.add(d)
                pending += by_id[d].ctrl
        return seen

    for prev, n in zip(reduces, reduces[1:]):
        # issue order: after the previous all-reduce, or, where gloo ran both at once (the
        # previous one still running when this one was issued), after the host op that issued it
        assert prev.id in n.ctrl or (prev.start < n.start and prev.ctrl[0] in ancestors(n))
    for n in reduces:
        # an async all-reduce is waited for by a host node that started after it ended
        waiters = [m for m in g.nodes if n.id in m.ctrl and m.type == NodeType.COMP_NODE]
        assert waiters and all(m.start >= n.end for m in waiters)


def test_ddp_small_buckets_validate():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(DATA / "ddp_buckets")])
    assert [str(f) for f in validate(ts)] == []
