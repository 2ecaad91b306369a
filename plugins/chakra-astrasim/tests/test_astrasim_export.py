"""Exports of trace sets built in memory, covering every node type and collective kind.

Fixtures here are hand-made on purpose: they exercise each rule of the exporter (kinds no
framework on this machine records, such as REDUCE_SCATTER_BLOCK, or broken inputs).  Expected
values are computed in the tests from the rules of docs/astrasim.md and the spec.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from chakra_astrasim import export_astrasim
from chakra_core import (
    CommType,
    ConfigError,
    EtReader,
    GlobalMetadata,
    MemoryRank,
    Node,
    NodeType,
    TraceFormatError,
    TraceFormatWarning,
    TraceSet,
    decode_varint,
    get_attr,
    get_int,
    get_str,
    read_et,
    set_attr,
)

T = NodeType
C = CommType


def node(nid, ntype, name=None, deps=(), ctrl=(), dur=0, **attrs) -> Node:
    n = Node(id=nid, name=name or f"n{nid}", type=ntype, duration_micros=dur)
    n.data_deps.extend(deps)
    n.ctrl_deps.extend(ctrl)
    for k, v in attrs.items():
        set_attr(n, k, v)
    return n


def comp(nid, deps=(), dur=1, cpu=False, **kw) -> Node:
    return node(nid, T.COMP_NODE, deps=deps, dur=dur, is_cpu_op=cpu, **kw)


def coll(nid, kind, size, deps=(), pg=None, **kw) -> Node:
    extra = {"pg_name": pg} if pg is not None else {}
    return node(nid, T.COMM_COLL_NODE, deps=deps, comm_type=int(kind), comm_size=size, **extra, **kw)


def tset(per_rank, groups=None) -> TraceSet:
    return TraceSet([MemoryRank(r, GlobalMetadata(), ns) for r, ns in per_rank.items()], groups)


def export(ts, out: Path, **opts):
    res = export_astrasim(ts, out, opts)
    n = res.summary["ranks"]
    files = {r: read_et(out / "workload" / f"trace.{r}.et")[1] for r in range(n)}
    return res, {r: list(nodes) for r, nodes in files.items()}


def by_id(nodes):
    return {n.id: n for n in nodes}


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


EVERY_KIND = [C.ALL_REDUCE, C.REDUCE, C.ALL_GATHER, C.GATHER, C.SCATTER, C.BROADCAST, C.ALL_TO_ALL,
              C.REDUCE_SCATTER, C.REDUCE_SCATTER_BLOCK, C.BARRIER]


def every_type_rank(r: int, p: int) -> list[Node]:
    """One rank using every node type, every collective kind and a send/recv ring."""
    ns = [node(1, T.METADATA_NODE, "meta"),
          node(2, T.INVALID_NODE, "invalid", deps=[1]),
          comp(3, deps=[2], dur=0, cpu=True),          # bookkeeping: dropped
          comp(4, deps=[3], dur=7, cpu=True),          # real CPU op: kept
          comp(5, deps=[4], dur=11),
          node(6, T.MEM_LOAD_NODE, deps=[5], tensor_size=4096),
          node(7, T.MEM_STORE_NODE, deps=[6], tensor_size=4096)]
    prev = 7
    for i, kind in enumerate(EVERY_KIND):
        ns.append(coll(10 + i, kind, 1000 * (i + 1), deps=[prev]))
        prev = 10 + i
    ns.append(node(30, T.COMM_SEND_NODE, deps=[prev], comm_dst=(r + 1) % p, comm_size=64, comm_tag=3))
    ns.append(node(31, T.COMM_RECV_NODE, deps=[prev], comm_src=(r - 1) % p, comm_size=64, comm_tag=3))
    ns.append(comp(32, deps=[30, 31], dur=2))
    return ns


def expected_collectives(p: int, barrier: int = 4) -> list[tuple[int, int]]:
    """The rules of docs/astrasim.md applied by hand to every_type_rank's collectives."""
    out = []
    for i, kind in enumerate(EVERY_KIND):
        s = 1000 * (i + 1)
        out += {C.ALL_REDUCE: [(0, s)], C.REDUCE: [(0, s)], C.ALL_GATHER: [(2, s)], C.GATHER: [(2, s)],
                C.SCATTER: [(2, s)], C.BROADCAST: [(2, -(-s // p))] * 2, C.ALL_TO_ALL: [(6, s)],
                C.REDUCE_SCATTER: [(7, s)], C.REDUCE_SCATTER_BLOCK: [(7, s)],
                C.BARRIER: [(0, barrier)]}[kind]
    return out


def test_every_node_type_and_collective_kind(tmp_path, astrasim_check):
    p = 4
    ts = tset({r: every_type_rank(r, p) for r in range(p)})
    res, files = export(ts, tmp_path)
    astrasim_check(tmp_path)
    rep = res.summary["report"]
    assert rep["removed"] == {"METADATA_NODE": p, "INVALID_NODE": p, "cpu_op_zero_duration": p,
                              "memory_node_without_remote_memory": 2 * p}
    assert rep["rewritten"] == {"BARRIER->ALL_REDUCE": p, "BROADCAST->ALL_GATHER+ALL_GATHER": p,
                                "GATHER->ALL_GATHER": p, "REDUCE->ALL_REDUCE": p,
                                "REDUCE_SCATTER_BLOCK->REDUCE_SCATTER": p, "SCATTER->ALL_GATHER": p}
    for r, nodes in files.items():
        colls = [(get_int(n, "comm_type"), get_int(n, "comm_size")) for n in nodes
                 if n.type == T.COMM_COLL_NODE]
        assert colls == expected_collectives(p)
        # the rank is renumbered 1..N in original id order (ASTRA-sim issues ready nodes by id),
        # the node inserted for the BROADCAST just before it
        named = {n.name: n for n in nodes}
        assert sorted(n.id for n in nodes) == list(range(1, len(nodes) + 1))
        order = [n.name for n in sorted(nodes, key=lambda n: n.id)]
        assert order == ["n4", "n5"] + [f"n{10 + i}" for i in range(5)] + ["n15#0", "n15"] + [
            f"n{16 + i}" for i in range(4)] + ["n30", "n31", "n32"]
        # the CPU op 4 depended on 1 <- 2 <- 3, all removed: it is now a root
        assert list(named["n4"].data_deps) == [] and get_attr(named["n4"], "is_cpu_op") is True
        # the first collective depended on the dropped memory store 7 <- 6 <- 5: now on 5
        assert list(named["n10"].data_deps) == [named["n5"].id]
        send, recv = named["n30"], named["n31"]
        assert (get_int(send, "comm_src"), get_int(send, "comm_dst"), get_int(send, "comm_tag")) == (r, (r + 1) % p, 3)
        assert (get_int(recv, "comm_src"), get_int(recv, "comm_dst")) == ((r - 1) % p, r)
        # a broadcast became two all-gathers in sequence
        first, second = named["n15#0"], named["n15"]
        assert list(second.data_deps) == [first.id] and list(first.data_deps) == [named["n14"].id]
        assert list(named["n16"].data_deps) == [second.id]
    assert rep["changed"]["ranks_renumbered_for_inserted_nodes"] == p
    report_file = json.loads((tmp_path / "report.json").read_text())
    assert report_file["report"] == rep and "BROADCAST" in report_file["rules"]


def test_dependencies_through_removed_nodes(tmp_path, astrasim_check):
    nodes = [comp(1), node(2, T.METADATA_NODE, deps=[1]), node(3, T.INVALID_NODE, ctrl=[2]),
             comp(4, deps=[3, 999, 4]), comp(5, ctrl=[2], deps=[1])]
    res, files = export(tset({0: nodes, 1: [comp(1)]}), tmp_path)
    astrasim_check(tmp_path)
    ids = by_id(files[0])
    assert sorted(ids) == [1, 4, 5]
    assert list(ids[4].data_deps) == [1] and list(ids[4].ctrl_deps) == []
    # 5 had data dep 1 and ctrl dep 2 -> 1: one edge remains
    assert list(ids[5].data_deps) == [1] and list(ids[5].ctrl_deps) == []
    dep = res.summary["report"]["dependencies"]
    assert dep["dangling_dropped"] == 1 and dep["self_dropped"] == 1


def test_join_node_bounds_edges(tmp_path, astrasim_check):
    parents = [comp(i) for i in range(1, 21)]
    meta = node(50, T.METADATA_NODE, deps=range(1, 21))
    kids = [comp(60, deps=[50]), comp(61, deps=[50])]
    ts = tset({0: parents + [meta] + kids, 1: [comp(1)]})
    res, files = export(ts, tmp_path / "a")
    astrasim_check(tmp_path / "a")
    ids = by_id(files[0])
    assert ids[50].name.startswith("join:") and get_attr(ids[50], "is_cpu_op") is True
    assert ids[50].type == T.COMP_NODE and ids[50].duration_micros == 0
    assert sorted(ids[50].data_deps) == list(range(1, 21))
    assert list(ids[60].data_deps) == [50] and list(ids[61].data_deps) == [50]
    assert res.summary["report"]["dependencies"]["join_nodes_added"] == 1
    res, files = export(ts, tmp_path / "b", join_limit=32)
    ids = by_id(files[0])
    assert 50 not in ids and sorted(ids[60].data_deps) == list(range(1, 21))


def test_nodes_written_in_topological_order(tmp_path, astrasim_check):
    nodes = [comp(3, deps=[2]), comp(2, deps=[1]), comp(1)]
    _, files = export(tset({0: nodes, 1: [comp(1)]}), tmp_path)
    astrasim_check(tmp_path)
    assert [n.id for n in files[0]] == [1, 2, 3]


def uint64_size(n: Node, size: int) -> Node:
    """``n`` with a ``comm_size`` in the uint64 slot (what a reader of any integer slot sees)."""
    set_attr(n, "comm_size", size, slot="uint64_val")
    return n


@pytest.mark.parametrize("nodes, message", [
    ([comp(1, deps=[2]), comp(2, deps=[1])], "cycle"),
    ([node(1, T.COMM_COLL_NODE, comm_size=8)], "comm_type"),
    ([coll(1, C.ALL_REDUCE, 8, pg="42")], "process group '42'"),
    ([comp(1), comp(1)], "appears twice"),
    # sizes beyond the int64 slot ASTRA-sim reads (a uint64 in the input) used to raise a bare
    # ValueError from protobuf
    ([uint64_size(coll(1, C.ALL_REDUCE, 0), 1 << 63)], "comm_size 9223372036854775808 does not fit"),
    ([uint64_size(node(1, T.COMM_SEND_NODE, comm_dst=1, comm_tag=0), (1 << 64) - 1)], "does not fit the int64"),
])
def test_bad_input_names_node(tmp_path, nodes, message):
    with pytest.raises(TraceFormatError) as e:
        export_astrasim(tset({0: nodes, 1: [comp(1)]}), tmp_path, {})
    assert message in str(e.value) and "node" in str(e.value)


def int64_size(n: Node, key: str, size: int) -> Node:
    """``n`` with ``key`` in the int64 slot (tensor_size's conventional slot is uint64)."""
    set_attr(n, key, size, slot="int64_val")
    return n


@pytest.mark.parametrize("bad, message", [
    (coll(3, C.ALL_REDUCE, -4096, deps=[2]), "comm_size -4096 is negative (a size in bytes)"),
    (node(3, T.COMM_SEND_NODE, deps=[2], comm_dst=1, comm_tag=0, comm_size=-8), "comm_size -8 is negative"),
    (int64_size(node(3, T.COMM_RECV_NODE, deps=[2], comm_src=1, comm_tag=0), "tensor_size", -8),
     "tensor_size -8 is negative"),
])
def test_negative_size_is_refused_like_validate(tmp_path, bad, message):
    # chakra validate calls a negative size bad-size; the exporter used to write 1 byte (or 0)
    from chakra_core import validate

    ts = tset({0: [comp(1), coll(2, C.ALL_REDUCE, 64, deps=[1]), bad], 1: [comp(1)]})
    assert [(f.rule, f.node_id) for f in validate(ts) if f.rule == "bad-size"] == [("bad-size", 3)]
    with pytest.raises(TraceFormatError) as e:
        export_astrasim(ts, tmp_path, {})
    assert message in str(e.value) and "node 3" in str(e.value) and "\n" not in str(e.value)


def test_zero_size_is_raised_to_one_byte(tmp_path):
    res, files = export(tset({r: [coll(1, C.ALL_REDUCE, 0)] for r in range(2)}), tmp_path)
    assert [get_int(n, "comm_size") for n in files[0]] == [1]
    assert res.summary["report"]["changed"]["comm_size_raised_to_1"] == 2


def test_groups_numbered_from_one(tmp_path, astrasim_check):
    groups = {"3": [1], "5": [0, 1], "7": [2, 3], "9": [0, 1, 2, 3]}
    per = {}
    for r in range(4):
        mine = "5" if r < 2 else "7"
        per[r] = [coll(1, C.ALL_REDUCE, 64, pg=mine), coll(2, C.ALL_GATHER, 8, deps=[1], pg="9"),
                  coll(3, C.ALL_REDUCE, 16, deps=[2], pg="0")]
        if r == 1:
            per[r].append(coll(4, C.ALL_REDUCE, 16, deps=[3], pg="3"))
    res, files = export(tset(per, groups), tmp_path)
    astrasim_check(tmp_path)
    assert json.loads((tmp_path / "groups.json").read_text()) == {"1": [0, 1], "2": [2, 3]}
    for r, nodes in files.items():
        ids = by_id(nodes)
        assert get_str(ids[1], "pg_name") == ("1" if r < 2 else "2")
        assert get_str(ids[2], "pg_name") is None and get_str(ids[3], "pg_name") is None
        assert 4 not in ids
    assert res.summary["report"]["removed"] == {"collective_on_one_rank": 1}
    assert res.summary["report"]["groups"] == {"3": "(one rank: not written)", "5": "1", "7": "2", "9": ""}
    assert "--comm-group-configuration=groups.json" in (tmp_path / "run.sh").read_text()


def test_user_comm_groups_and_larger_network(tmp_path, astrasim_check):
    net = write(tmp_path / "net.yml", "topology: [ Ring, Switch ]\nnpus_count: [ 2, 4 ]\n"
                                      "bandwidth: [ 100, 25 ]\nlatency: [ 100, 1000 ]\n")
    cg = write(tmp_path / "cg.json", '{"1": [0, 2]}')
    per = {r: [coll(1, C.ALL_REDUCE, 1 << 20), coll(2, C.ALL_TO_ALL, 4096, deps=[1], pg="1")]
           for r in (0, 2)}
    per.update({r: [coll(1, C.ALL_REDUCE, 1 << 20)] for r in (1, 3)})
    out = tmp_path / "out"
    res, files = export(tset(per), out, network=net, comm_groups=cg)
    astrasim_check(out)
    assert res.summary["ranks"] == 8 and res.summary["report"]["ranks"]["padded_with_idle_node"] == 4
    # all-rank collectives go to a group of the trace's 4 ranks, not to the idle ones
    assert json.loads((out / "groups.json").read_text()) == {"1": [0, 2], "2": [0, 1, 2, 3]}
    assert get_str(by_id(files[0])[1], "pg_name") == "2" and get_str(by_id(files[0])[2], "pg_name") == "1"
    assert [n.name for n in files[7]] == ["astrasim_idle_rank7"]
    run = (out / "run.sh").read_text()
    assert "Congestion_Aware}" not in run and "1-D networks only" in run
    assert res.summary["commands"]["congestion_aware"] is None
    sysj = json.loads((out / "system.json").read_text())
    assert sysj["all-reduce-implementation"] == ["ring", "ring"]


def test_single_rank_gets_default_network_of_two(tmp_path, astrasim_check):
    res, files = export(tset({0: [comp(1, dur=3)]}), tmp_path)
    astrasim_check(tmp_path)
    assert "npus_count: [ 2 ]" in (tmp_path / "network.yml").read_text()
    assert len(files[1]) == 1 and res.summary["report"]["ranks"]["padded_with_idle_node"] == 1


def test_ring_of_two_is_written_as_a_fully_connected_pair(tmp_path, astrasim_check):
    """ASTRA-sim's congestion-aware Ring of 2 aborts (Device::connect); a FullyConnected pair
    times the same: the spec's ring all-reduce of 1 MiB on 2 NPUs (50 GB/s, 500 ns, splits 4):
    chunk 262144, m = 131072, net = floor(500 + m / (50 * 2**30 / 1e9)) = 2941,
    red = 3 * floor(m / 50) = 7863, one chunk = 3 * 10 + 2 * 2941 + 7863, four in turn."""
    per = {r: [coll(1, CommType.ALL_REDUCE, 1 << 20)] for r in range(2)}
    res, _ = export(tset(per), tmp_path / "o")
    astrasim_check(tmp_path / "o")
    net = (tmp_path / "o" / "network.yml").read_text()
    assert "topology: [ FullyConnected ]" in net and "npus_count: [ 2 ]" in net
    assert any("Ring of 2 NPUs is written as FullyConnected" in c for c in res.summary["report"]["configs"])
    assert res.summary["commands"]["congestion_aware"] is not None
    ring = write(tmp_path / "ring.yml", "topology: [ Ring ]\nnpus_count: [ 2 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    export(tset(per), tmp_path / "r", network=ring)
    assert "FullyConnected" in (tmp_path / "r" / "network.yml").read_text()
    pytest.importorskip("chakra_simpy")
    from chakra_simpy import SimpyBackend

    expect = 4 * (3 * 10 + 2 * 2941 + 7863)
    for opts in ({"network": ring}, {"network": str(tmp_path / "o" / "network.yml")}, {}):
        b = SimpyBackend()
        got = b.run(tset(per), b.check_options(opts), None).ranks
        assert [r["finish_ns"] for r in got] == [expect, expect]


def test_network_too_small_is_refused(tmp_path):
    net = write(tmp_path / "n.yml", "topology: [ Ring ]\nnpus_count: [ 2 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    with pytest.raises(ConfigError, match="2 NPUs"):
        export_astrasim(tset({r: [comp(1)] for r in range(3)}), tmp_path / "o", {"network": net})


def test_point_to_point_rules(tmp_path, astrasim_check):
    per = {0: [node(1, T.COMM_SEND_NODE, comm_dst=1, comm_size=10),          # no tag: 0
               node(2, T.COMM_SEND_NODE, comm_size=10),                      # no peer: dropped
               node(3, T.COMM_SEND_NODE, comm_dst=1, tensor_size=5, comm_tag=1)],
           1: [node(1, T.COMM_RECV_NODE, comm_src=0, comm_size=10, comm_tag=0),
               node(3, T.COMM_RECV_NODE, comm_src=0, comm_size=5, comm_tag=1)]}
    res, files = export(tset(per), tmp_path)
    astrasim_check(tmp_path)
    rep = res.summary["report"]
    assert rep["removed"] == {"send_without_peer": 1} and rep["changed"]["p2p_tag_filled_0"] == 1
    assert get_int(by_id(files[0])[3], "comm_size") == 5 and rep["warnings"] == []
    with pytest.raises(TraceFormatError, match="without a peer"):
        export_astrasim(tset(per), tmp_path / "e", {"incomplete_p2p": "error"})
    per[1].pop()
    res = export_astrasim(tset(per), tmp_path / "w", {})
    assert res.summary["report"]["warnings"] == ["1 send(s) without a recv: 0 -> 1, tag 1, 5 B"]


def test_unsupported_policies(tmp_path, astrasim_check):
    per = {r: [coll(1, C.GATHER, 100), coll(2, C.BROADCAST, 100, deps=[1], dur=9)] for r in range(2)}
    with pytest.raises(TraceFormatError, match="GATHER"):
        export_astrasim(tset(per), tmp_path / "e", {"unsupported": "error"})
    res, files = export(tset(per), tmp_path / "d", unsupported="drop", replay_broadcast=False)
    astrasim_check(tmp_path / "d")
    assert res.summary["report"]["removed"] == {"collective_GATHER": 2, "collective_BROADCAST": 2}
    assert [n.name for n in files[0]] == ["astrasim_idle_rank0"]
    # by default a BROADCAST with a duration is kept (ASTRA-sim replays it): not an unsupported kind
    res, files = export(tset(per), tmp_path / "k", unsupported="drop")
    assert res.summary["report"]["removed"] == {"collective_GATHER": 2}
    (b,) = files[0]
    assert get_int(b, "comm_type") == C.BROADCAST and b.duration_micros == 9 and list(b.data_deps) == []
    res, files = export(tset(per), tmp_path / "r", replay_broadcast=True)
    astrasim_check(tmp_path / "r")
    b = by_id(files[0])[2]
    assert get_int(b, "comm_type") == C.BROADCAST and b.duration_micros == 9 and list(b.data_deps) == [1]


def test_broadcast_default_replays_a_duration_and_rewrites_none(tmp_path):
    # the rule the simpy backend follows too: both time such a set alike by default
    per = {r: [coll(1, C.BROADCAST, 1000, dur=9), coll(2, C.BROADCAST, 1000, deps=[1])] for r in range(4)}
    res, files = export(tset(per), tmp_path)
    assert res.summary["report"]["rewritten"] == {"BROADCAST->ALL_GATHER+ALL_GATHER": 4}
    kinds = [(get_int(n, "comm_type"), get_int(n, "comm_size"), n.duration_micros) for n in files[0]]
    assert kinds == [(C.BROADCAST, 1000, 9), (C.ALL_GATHER, 250, 0), (C.ALL_GATHER, 250, 0)]
    res, files = export(tset(per), tmp_path / "f", replay_broadcast=False)
    assert res.summary["report"]["rewritten"] == {"BROADCAST->ALL_GATHER+ALL_GATHER": 8}
    res, files = export(tset(per), tmp_path / "t", replay_broadcast=True)
    assert res.summary["report"]["rewritten"] == {}
    assert [get_int(n, "comm_type") for n in files[0]] == [C.BROADCAST, C.BROADCAST]


def test_durations_round_to_nearest_microsecond(tmp_path, astrasim_check):
    ns = [1499, 1500, 400, 0, 7000]
    per = {r: [comp(i + 1, dur=99, duration_ns=v) for i, v in enumerate(ns)] for r in range(2)}
    res, files = export(tset(per), tmp_path)
    astrasim_check(tmp_path)
    assert [n.duration_micros for n in files[0]] == [1, 2, 0, 0, 7]
    ch = res.summary["report"]["changed"]
    assert ch["duration_rounded_to_us"] == 6 and ch["rounding_error_ns_total"] == 2 * (499 + 500 + 400)
    _, files = export(tset(per), tmp_path / "x", duration_attr="")
    assert [n.duration_micros for n in files[0]] == [99] * 5


def astra_roofline_ns(num_ops: int, tensor_size: int, mem_bw_gbs: float, peak_tflops: float) -> int:
    """ASTRA-sim's roofline compute time (spec): num_ops / min(bw * ops/size, peak), truncated."""
    perf = min(mem_bw_gbs * 1e9 * (num_ops / tensor_size), peak_tflops * 1e12)
    return int(num_ops / perf * 1e9)


def test_durations_encoded_as_roofline_are_exact(tmp_path, astrasim_check):
    ns = [0, 1, 7, 999, 1001, 123457, 10**9 + 3]
    per = {r: [comp(i + 1, duration_ns=v) for i, v in enumerate(ns)] + [comp(50, cpu=True, dur=3)]
           for r in range(2)}
    res, files = export(tset(per), tmp_path, durations="roofline")
    astrasim_check(tmp_path)
    sysj = json.loads((tmp_path / "system.json").read_text())
    assert sysj["roofline-enabled"] == 1 and sysj["peak-perf"] == 1.0
    got = [astra_roofline_ns(get_int(n, "num_ops"), get_int(n, "tensor_size"), sysj["local-mem-bw"],
                             sysj["peak-perf"]) for n in files[0] if not get_attr(n, "is_cpu_op")]
    assert got == [max(v, 1) for v in ns]  # a 0-ns event aborts ASTRA-sim; its replay gives 1 ns
    assert get_attr(by_id(files[0])[50], "num_ops") is None  # CPU ops are replayed
    ch = res.summary["report"]["changed"]
    assert ch["duration_encoded_as_roofline"] == 2 * len(ns)
    assert ch["roofline_zero_time_raised_to_1ns"] == 2


def test_system_roofline_keeps_real_num_ops(tmp_path, astrasim_check):
    sysf = write(tmp_path / "s.yaml", "compute: {model: roofline, peak-perf: 100}\nlocal-mem-bw: 1000\n")
    per = {r: [comp(1, num_ops=10**9, tensor_size=10**6), comp(2, deps=[1], dur=5),
               comp(3, deps=[2], tensor_size=100)] for r in range(2)}
    set_attr(per[0][2], "num_ops", 2.6e6, slot="double_val")
    set_attr(per[1][2], "num_ops", 2.6e6, slot="double_val")
    res, files = export(tset(per), tmp_path / "o", system=sysf)
    astrasim_check(tmp_path / "o")
    ids = by_id(files[0])
    assert (get_int(ids[1], "num_ops"), get_int(ids[1], "tensor_size")) == (10**9, 10**6)
    assert astra_roofline_ns(get_int(ids[2], "num_ops"), 1, 1000, 100) == 5000
    assert (get_int(ids[3], "num_ops"), get_int(ids[3], "tensor_size")) == (2600000, 100)
    ch = res.summary["report"]["changed"]
    assert ch["num_ops_float_to_int"] == 2 and ch["roofline_filled_from_duration"] == 2
    # a NaN num_ops or one beyond int64 is filled from the duration too (used to be a traceback)
    per = {r: [comp(1, dur=5, tensor_size=100), comp(2, deps=[1], dur=7, tensor_size=100)] for r in range(2)}
    for r in range(2):
        set_attr(per[r][0], "num_ops", float("nan"), slot="double_val")
        set_attr(per[r][1], "num_ops", (1 << 64) - 1, slot="uint64_val")
    res, files = export(tset(per), tmp_path / "o2", system=sysf)
    astrasim_check(tmp_path / "o2")
    ids = by_id(files[0])
    assert astra_roofline_ns(get_int(ids[1], "num_ops"), 1, 1000, 100) == 5000
    assert astra_roofline_ns(get_int(ids[2], "num_ops"), 1, 1000, 100) == 7000
    ch = res.summary["report"]["changed"]
    assert ch["roofline_filled_from_duration"] == 4 and "num_ops_float_to_int" not in ch


def test_memory_nodes_kept_with_remote_memory(tmp_path, astrasim_check):
    mem = write(tmp_path / "m.json", '{"memory-type": "MEMORY_POOL", "remote-mem-latency": 100, '
                                     '"remote-mem-bw": 50}')
    per = {r: [node(1, T.MEM_LOAD_NODE, tensor_size=1 << 20), comp(2, deps=[1])] for r in range(2)}
    res, files = export(tset(per), tmp_path / "o", memory=mem)
    astrasim_check(tmp_path / "o")
    assert get_int(files[0][0], "tensor_size") == 1 << 20
    assert json.loads((tmp_path / "o" / "memory.json").read_text()) == {
        "memory-type": "MEMORY_POOL", "remote-mem-latency": 100.0, "remote-mem-bw": 50.0}
    with pytest.raises(ConfigError, match="NO_MEMORY_EXPANSION"):
        export_astrasim(tset(per), tmp_path / "x", {"memory_nodes": "keep"})


def test_cpu_op_policies(tmp_path):
    per = {r: [comp(1, cpu=True, dur=0), comp(2, cpu=True, dur=4, deps=[1]), comp(3, deps=[2])]
           for r in range(2)}
    got = {}
    for policy in ("keep", "drop_zero", "drop"):
        _, files = export(tset(per), tmp_path / policy, cpu_ops=policy)
        got[policy] = [n.id for n in files[0]]
    assert got == {"keep": [1, 2, 3], "drop_zero": [2, 3], "drop": [3]}


def test_astrasim_config_files_and_short_lists(tmp_path, astrasim_check):
    ex = Path(__file__).resolve().parents[3] / "examples" / "system" / "astra"
    sysf = write(tmp_path / "system.json", json.dumps({
        "scheduling-policy": "FIFO", "endpoint-delay": 5, "preferred-dataset-splits": 2,
        "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
        "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["direct"],
        "collective-optimization": "baseline", "local-mem-bw": 50}))
    net = write(tmp_path / "network.yml", "topology: [ FullyConnected, Ring ]\nnpus_count: [ 4, 2 ]\n"
                                          "bandwidth: [ 100, 50 ]\nlatency: [ 10, 500 ]\n")
    per = {r: [coll(1, C.ALL_REDUCE, 1 << 20, pg="1" if r < 4 else "2")] for r in range(8)}
    res, _ = export(tset(per), tmp_path / "o", system=sysf, network=net,
                    comm_groups=str(ex / "groups.json"), memory=str(ex / "memory.json"))
    astrasim_check(tmp_path / "o")
    sysj = json.loads((tmp_path / "o" / "system.json").read_text())
    assert sysj["all-to-all-implementation"] == ["direct", "direct"]
    assert (sysj["scheduling-policy"], sysj["endpoint-delay"], sysj["preferred-dataset-splits"],
            sysj["collective-optimization"]) == ("FIFO", 5, 2, "baseline")
    assert any("extended with 'direct'" in c for c in res.summary["report"]["configs"])
    assert json.loads((tmp_path / "o" / "groups.json").read_text()) == {"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]}


def test_trees_and_halving_doubling_need_power_of_two_dimensions(tmp_path, astrasim_check):
    # ASTRA-sim builds power-of-two trees and crashes on the other NPUs of a 6-NPU dimension
    per = {r: [coll(1, C.ALL_REDUCE, 1 << 20)] for r in range(6)}
    dbt = write(tmp_path / "dbt.yaml", "all-reduce-implementation: doubleBinaryTree\n")
    with pytest.raises(ConfigError, match="doubleBinaryTree on dimension 0 of 6 NPUs"):
        export(tset(per), tmp_path / "o", system=dbt)
    hd = write(tmp_path / "hd.yaml", "all-reduce-implementation: halvingDoubling\n")
    res, _ = export(tset(per), tmp_path / "o2", system=hd)
    astrasim_check(tmp_path / "o2")
    assert any("halvingDoubling on dimension 0 of 6 NPUs" in c for c in res.summary["report"]["configs"])
    res, _ = export(tset({r: [coll(1, C.ALL_REDUCE, 1 << 20)] for r in range(8)}), tmp_path / "o3", system=dbt)
    astrasim_check(tmp_path / "o3")


def test_differing_collective_order_is_reported(tmp_path):
    per = {0: [coll(1, C.ALL_REDUCE, 64), coll(2, C.ALL_GATHER, 8, deps=[1])],
           1: [coll(1, C.ALL_GATHER, 8), coll(2, C.ALL_REDUCE, 64, deps=[1])]}
    res = export_astrasim(tset(per), tmp_path, {})
    (w,) = res.summary["report"]["warnings"]
    assert "first difference at collective #1" in w and "ALL_GATHER 8 B vs ALL_REDUCE 64 B" in w


def test_collectives_are_numbered_from_one_like_validate(tmp_path):
    # rank 5's third all-reduce has another size: validate, simpy and the exporter all say #3
    from chakra_core import validate

    def rank(r):
        sizes = [1 << 20, 1 << 21, (1 << 22) + (8 if r == 5 else 0)]
        return [coll(i + 1, C.ALL_REDUCE, s, deps=[i] if i else ()) for i, s in enumerate(sizes)]

    ts = tset({r: rank(r) for r in range(8)})
    (finding,) = [f for f in validate(ts) if f.rule == "coll-order"]
    assert "collective #3 " in finding.message
    (w,) = export_astrasim(ts, tmp_path, {}).summary["report"]["warnings"]
    assert "rank 5 issues 3 collectives, rank 0 3; first difference at collective #3 " in w
    assert f"(ALL_REDUCE {(1 << 22) + 8} B vs ALL_REDUCE {1 << 22} B)" in w


def test_reexport_removes_stale_rank_files(tmp_path):
    export_astrasim(tset({r: [comp(1)] for r in range(4)}), tmp_path, {})
    export_astrasim(tset({r: [comp(1)] for r in range(2)}), tmp_path, {})
    assert sorted(p.name for p in (tmp_path / "workload").iterdir()) == ["trace.0.et", "trace.1.et"]


def test_reexport_with_another_prefix_leaves_one_trace_set(tmp_path):
    from chakra_core import open_traceset

    export_astrasim(tset({r: [comp(1)] for r in range(4)}), tmp_path, {})
    export_astrasim(tset({r: [comp(1, dur=3)] for r in range(2)}), tmp_path, {"prefix": "gpt"})
    assert sorted(p.name for p in (tmp_path / "workload").iterdir()) == ["gpt.0.et", "gpt.1.et"]
    ts = open_traceset(str(tmp_path / "workload"))
    assert ts.ranks == [0, 1]
    assert [n.duration_micros for n in ts[1].nodes()] == [3]


def test_tiny_all_gathers_are_raised_to_the_split_count(tmp_path, astrasim_check, astrasim_errors):
    # ASTRA-sim does not raise all-gather chunks to the NPU count: a shard below
    # preferred-dataset-splits makes a chunk of 0 bytes (division by zero)
    per = {r: [coll(1, C.ALL_GATHER, 3), coll(2, C.BROADCAST, 8, deps=[1]), coll(3, C.ALL_GATHER, 4, deps=[2])]
           for r in range(8)}
    res, files = export(tset(per), tmp_path / "o")
    astrasim_check(tmp_path / "o")
    sizes = [(get_int(n, "comm_type"), get_int(n, "comm_size")) for n in files[0]]
    # 3 -> 4; the broadcast's two all-gathers of ceil(8 / 8) = 1 byte -> 4; 4 stays
    assert sizes == [(2, 4), (2, 4), (2, 4), (2, 4)]
    assert res.summary["report"]["changed"]["all_gather_size_raised_to_splits"] == 3 * 8
    sysf = write(tmp_path / "s.yaml", "preferred-dataset-splits: 1\n")
    res, files = export(tset(per), tmp_path / "o2", system=sysf)
    assert [get_int(n, "comm_size") for n in files[0]] == [3, 1, 1, 4]
    assert "all_gather_size_raised_to_splits" not in res.summary["report"]["changed"]
    # the checker knows the rule
    sysj = json.loads((tmp_path / "o2" / "system.json").read_text())
    sysj["preferred-dataset-splits"] = 4
    (tmp_path / "o2" / "system.json").write_text(json.dumps(sysj))
    assert any("below preferred-dataset-splits" in e for e in astrasim_errors(tmp_path / "o2"))


def test_reexport_without_groups_removes_stale_groups_json(tmp_path, astrasim_check):
    per = {r: [coll(1, C.ALL_REDUCE, 64, pg="1" if r < 2 else "2")] for r in range(4)}
    export_astrasim(tset(per, {"1": [0, 1], "2": [2, 3]}), tmp_path, {})
    assert (tmp_path / "groups.json").exists()
    export_astrasim(tset({r: [coll(1, C.ALL_REDUCE, 64)] for r in range(4)}), tmp_path, {})
    assert not (tmp_path / "groups.json").exists()  # run.sh names none; a stale one misleads
    astrasim_check(tmp_path)


def test_checker_catches_broken_directories(tmp_path, astrasim_errors):
    export_astrasim(tset({r: [comp(1), coll(2, C.ALL_REDUCE, 8, deps=[1])] for r in range(2)}), tmp_path,
                    {"prefix": "w"})
    assert astrasim_errors(tmp_path, "w") == []
    (tmp_path / "groups.json").write_text('{"0": [0, 1]}')
    sysj = json.loads((tmp_path / "system.json").read_text())
    sysj["endpoint-delay"] = 0
    del sysj["preferred-dataset-splits"]
    (tmp_path / "system.json").write_text(json.dumps(sysj))
    from chakra_core import write_et

    bad = [node(1, T.METADATA_NODE), comp(2, deps=[7]), coll(3, C.REDUCE, 8, pg="4")]
    write_et(tmp_path / "workload" / "w.1.et", GlobalMetadata(), bad)
    errs = "\n".join(astrasim_errors(tmp_path, "w"))
    for expected in ("key '0'", "endpoint-delay", "preferred-dataset-splits", "type 1",
                     "dependency 7", "comm_type 1", "pg_name '4'", "--comm-group-configuration"):
        assert expected in errs


def test_ranks_differing_in_groups_only(tmp_path, astrasim_check):
    """Ranks 0-1 and 2-4 differ only in pg_name; the groups' sizes decide the BROADCAST pieces."""
    groups = {"a": [0, 1], "b": [2, 3, 4], "c": [0, 2], "d": [1, 3]}
    per = {}
    for r in range(5):
        pg = "a" if r < 2 else "b"
        per[r] = [comp(1), coll(2, C.BROADCAST, 600, deps=[1], pg=pg), coll(3, C.ALL_REDUCE, 8, deps=[2], pg=pg)]
        if r < 4:
            per[r].append(coll(4, C.ALL_GATHER, 16, deps=[3], pg="c" if r in (0, 2) else "d"))
    res, files = export(tset(per, groups), tmp_path)
    astrasim_check(tmp_path)
    assert json.loads((tmp_path / "groups.json").read_text()) == {
        "1": [0, 1], "2": [2, 3, 4], "3": [0, 2], "4": [1, 3]}
    for r, nodes in files.items():
        colls = [(get_int(n, "comm_size"), get_str(n, "pg_name")) for n in nodes if n.type == T.COMM_COLL_NODE]
        piece, g = (300, "1") if r < 2 else (200, "2")
        want = [(piece, g), (piece, g), (8, g)]
        if r < 4:
            want.append((16, "3" if r in (0, 2) else "4"))
        assert colls == want
    # rank 1 comes from rank 0's template; rank 3 does not fit it (group of 3) and is converted in full
    assert res.summary["report"]["ranks"]["converted_from_template"] == 1


def test_reference_run_through_the_export(tmp_path, astrasim_check):
    """The spec's reference (1 MiB all-reduce, Ring of 8, 50 GB/s, 500 ns, endpoint delay 10,
    local-mem-bw 50, splits 4, active chunks 1: 117,780 cycles), exported from ASTRA-sim's own
    configuration files and simulated from the exported directory by simpy, which reproduces
    ASTRA-sim's analytical model: the configuration survives the round trip."""
    pytest.importorskip("chakra_simpy")
    from chakra_core import get_host, open_traceset

    astra = Path(__file__).resolve().parents[3] / "examples" / "system" / "astra"
    per = {r: [node(1, T.METADATA_NODE), coll(2, C.ALL_REDUCE, 1 << 20, deps=[1])] for r in range(8)}
    export_astrasim(tset(per), tmp_path, {"system": str(astra / "system.json"),
                                          "network": str(astra / "network.yml")})
    astrasim_check(tmp_path)
    sim = get_host().registry.get("backend", "simpy")
    o = sim.check_options({k: str(tmp_path / f) for k, f in (
        ("system", "system.json"), ("network", "network.yml"), ("memory", "memory.json"))})
    res = sim.run(open_traceset(str(tmp_path / "workload")), o, None)
    assert [r["finish_ns"] for r in res.ranks] == [117780] * 8


def test_member_without_collectives_is_reported(tmp_path):
    per = {0: [coll(1, C.ALL_REDUCE, 64, pg="1")], 1: [comp(1)], 2: [coll(1, C.ALL_REDUCE, 64, pg="1")]}
    res = export_astrasim(tset(per, {"1": [0, 1, 2]}), tmp_path / "out", {"network": write(
        tmp_path / "n.yml", "topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")})
    assert res.summary["report"]["warnings"] == [
        "group 1: rank 1 issues 0 collectives, rank 0 1; first difference at collective #1 "
        "(none vs ALL_REDUCE 64 B) - ASTRA-sim matches them by order"]


def test_edge_count_stays_linear(tmp_path):
    """Layers of 100 kept nodes joined by one removed node: rewiring every dependent to every
    ancestor would give 100 x 100 edges per layer; join nodes keep the input's edge count."""
    nodes, nid, prev = [], 1, None
    for _layer in range(5):
        layer = []
        for _ in range(100):
            nodes.append(comp(nid, deps=[prev] if prev else []))
            layer.append(nid)
            nid += 1
        nodes.append(node(nid, T.METADATA_NODE, deps=layer))
        prev = nid
        nid += 1
    edges_in = sum(len(n.data_deps) + len(n.ctrl_deps) for n in nodes)
    res, files = export(tset({0: nodes, 1: [comp(1)]}), tmp_path)
    edges_out = sum(len(n.data_deps) + len(n.ctrl_deps) for n in files[0])
    assert edges_out <= edges_in and res.summary["report"]["dependencies"]["join_nodes_added"] == 4
    # the last METADATA node has no dependents: simply removed
    assert res.summary["report"]["removed"] == {"METADATA_NODE": 1}


def test_custom_collective_files_are_copied_and_named(tmp_path, astrasim_check):
    """``all-reduce-implementation-chakra`` names one ET per rank (hand-made here: two ranks
    sending each other their half); the export copies them and points the key at the copies,
    in the spelling asked for (the old one here, ``custom_keys=chakra``)."""
    per = {r: [node(1, T.COMM_SEND_NODE, comm_dst=1 - r, comm_size=512, comm_tag=0),
               node(2, T.COMM_RECV_NODE, comm_src=1 - r, comm_size=512, comm_tag=0)] for r in range(2)}
    tset(per).write(tmp_path / "custom" / "ar")
    sysf = write(tmp_path / "s.yaml", "all-reduce-implementation-chakra: custom/ar\n")
    work = {r: [coll(1, CommType.ALL_REDUCE, 1024)] for r in range(2)}
    res, _ = export(tset(work), tmp_path / "o", system=sysf, custom_keys="chakra")
    astrasim_check(tmp_path / "o")
    sysj = json.loads((tmp_path / "o" / "system.json").read_text())
    assert sysj["all-reduce-implementation-chakra"] == ["custom/all-reduce"]
    for r in range(2):
        assert (tmp_path / "o" / "custom" / f"all-reduce.{r}.et").read_bytes() == \
            (tmp_path / "custom" / f"ar.{r}.et").read_bytes()
    assert any("custom all-reduce" in c for c in res.summary["report"]["configs"])
    net = write(tmp_path / "n.yml", "topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    with pytest.raises(ConfigError, match="no ET for rank 2"):
        export(tset(work), tmp_path / "o4", system=sysf, network=net)
    assert not (tmp_path / "o4").exists()


def test_custom_collective_files_without_metadata_are_copied_with_it(tmp_path):
    """A custom collective's ETs whose first message is a node (Chakra's 2023 converters wrote
    no GlobalMetadata; made here by leaving the metadata message out of written files) are read
    with empty metadata; the export writes them with a metadata message before the same node
    bytes, since ASTRA-sim reads the first message as metadata."""
    per = {r: [node(1, T.COMM_SEND_NODE, comm_dst=1 - r, comm_size=512, comm_tag=0),
               node(2, T.COMM_RECV_NODE, comm_src=1 - r, comm_size=512, comm_tag=0)] for r in range(2)}
    tset(per).write(tmp_path / "full" / "ar")
    (tmp_path / "custom").mkdir()
    for r in range(2):
        data = (tmp_path / "full" / f"ar.{r}.et").read_bytes()
        ln, at = decode_varint(data)
        (tmp_path / "custom" / f"ar.{r}.et").write_bytes(data[at + ln:])  # the node frames alone
    sysf = write(tmp_path / "s.yaml", "all-reduce-implementation-custom: custom/ar\n")
    work = {r: [coll(1, CommType.ALL_REDUCE, 1024)] for r in range(2)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export(tset(work), tmp_path / "o", system=sysf)
    assert any(issubclass(w.category, TraceFormatWarning) for w in caught)
    for r in range(2):
        out = (tmp_path / "o" / "custom" / f"all-reduce.{r}.et").read_bytes()
        ln, at = decode_varint(out)
        assert GlobalMetadata.FromString(out[at:at + ln]) == GlobalMetadata()
        assert out[at + ln:] == (tmp_path / "custom" / f"ar.{r}.et").read_bytes()
        assert EtReader(tmp_path / "o" / "custom" / f"all-reduce.{r}.et").has_metadata


def test_a_free_network_dimension_is_sized_to_the_set(tmp_path, astrasim_check):
    """A node of 2 NPUs inside a Switch of ``npus_count: auto`` nodes, for 6 ranks: 3 nodes."""
    net = write(tmp_path / "net.yaml", "network:\n"
                "  - {topology: FullyConnected, npus_count: 2, bandwidth: 100, latency: 100}\n"
                "  - {topology: Switch, npus_count: auto, bandwidth: 25, latency: 1000}\n")
    res, files = export(tset({r: [coll(1, C.ALL_REDUCE, 1 << 20)] for r in range(6)}), tmp_path / "o", network=net)
    astrasim_check(tmp_path / "o")
    assert "npus_count: [ 2, 3 ]" in (tmp_path / "o" / "network.yml").read_text() and len(files) == 6
    assert "network dimension 1 (Switch, npus_count: auto) sized to 3 NPUs for the trace set" in \
        res.summary["report"]["configs"]


def test_groups_written_under_another_name_are_said(tmp_path, astrasim_check):
    """ASTRA-sim's ids are integers from 1: a group 'abc' becomes 1, and the output says so."""
    per = {r: [coll(1, C.ALL_REDUCE, 64, pg="abc" if r < 2 else "xy")] for r in range(4)}
    res, _ = export(tset(per, {"abc": [0, 1], "xy": [2, 3]}), tmp_path)
    astrasim_check(tmp_path)
    assert "groups (ASTRA-sim numbers them from 1; report.json: groups): 'abc' -> 1, 'xy' -> 2" in res.notes
    assert json.loads((tmp_path / "report.json").read_text())["report"]["groups"] == {"abc": "1", "xy": "2"}


def test_groups_keeping_their_names_are_not_listed(tmp_path):
    per = {r: [coll(1, C.ALL_REDUCE, 64, pg="1" if r < 2 else "2")] for r in range(4)}
    res, _ = export(tset(per, {"1": [0, 1], "2": [2, 3]}), tmp_path)
    assert not [n for n in res.notes if n.startswith("groups")]
