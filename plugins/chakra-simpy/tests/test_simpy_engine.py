"""Behaviour of the simulator: resources, dependencies, p2p, memory, roofline, symmetry,
determinism, deadlocks and the result's numbers."""

from __future__ import annotations

import json

import pytest

from chakra_core import ChakraError

MIB = 1 << 20
AR_1MIB = 117780  # the reference all-reduce on the reference ring (see test_simpy_formulas)


def ring8(kit, **keys):
    return kit.system([("Ring", 8, 50, 500)], **keys)


def test_compute_overlaps_communication(kit, tmp_path):
    # 100 us of compute independent of a 1 MiB all-reduce: they run side by side
    res = kit.run(kit.same(8, lambda: [kit.comp(1, 100), kit.coll(2, MIB)]), ring8(kit), tmp_path)
    r = res.ranks[0]
    assert r["finish_ns"] == max(100_000, AR_1MIB)
    assert r["compute_ns"] == 100_000 and r["comm_ns"] == AR_1MIB
    assert r["overlap_ns"] == 100_000
    assert r["exposed_comm_ns"] == AR_1MIB - 100_000
    assert r["idle_ns"] == 0


def test_dependencies_serialize_and_one_comm_op_at_a_time(kit, tmp_path):
    # compute -> all-reduce (data dep); two independent all-reduces run one after the other
    res = kit.run(kit.same(8, lambda: [kit.comp(1, 100), kit.coll(2, MIB, deps=[1]), kit.coll(3, MIB)]),
                  ring8(kit), tmp_path)
    # node 3 (ready at 0) takes the comm slot first; node 2 waits for compute and the slot
    assert res.ranks[0]["finish_ns"] == 2 * AR_1MIB
    ctrl = kit.run(kit.same(8, lambda: [kit.comp(1, 100), kit.coll(2, MIB, ctrl=[1])]), ring8(kit), tmp_path)
    assert ctrl.ranks[0]["finish_ns"] == 100_000 + AR_1MIB


def test_ready_nodes_issue_in_id_order_on_one_resource(kit, tmp_path):
    res = kit.run(kit.same(2, lambda: [kit.comp(5, 3), kit.comp(2, 7)]), kit.system([("Ring", 2, 50, 500)]),
                  tmp_path, critical_path_nodes=10)
    path = res.summary["critical_path"]["nodes"]
    assert [n["id"] for n in path] == [2, 5]
    assert [n["end_ns"] for n in path] == [7000, 10000]


def test_cpu_and_accelerator_ops_run_at_once_and_zero_duration_is_one_ns(kit, tmp_path):
    res = kit.run(kit.same(2, lambda: [kit.comp(1, 10, cpu=True), kit.comp(2, 4), kit.comp(3, 0)]),
                  kit.system([("Ring", 2, 50, 500)]), tmp_path)
    r = res.ranks[0]
    assert r["finish_ns"] == 10_000 and r["cpu_ns"] == 10_000 and r["accelerator_ns"] == 4_001
    assert r["compute_ns"] == 10_000  # CPU and accelerator compute together


def test_streams_option_allows_concurrent_collectives(kit, tmp_path):
    res = kit.run(kit.same(8, lambda: [kit.coll(1, MIB), kit.coll(2, MIB)]), ring8(kit), tmp_path, streams=2)
    # each collective has its own queue: both finish at the stand-alone time
    assert res.ranks[0]["finish_ns"] == AR_1MIB


def test_send_recv_eager_matching(kit, tmp_path):
    sysd = kit.system([("Ring", 4, 50, 500)])
    net02 = kit.net(MIB, 2, 500, 50)  # rank 0 -> rank 2 is two hops on a 4-ring
    ts = kit.traces({0: [kit.p2p(1, True, 2, MIB, tag=7)],
                     1: [kit.comp(1, 1)],
                     2: [kit.comp(1, 10), kit.p2p(2, False, 0, MIB, tag=7, deps=[1])],
                     3: [kit.comp(1, 1)]})
    res = kit.run(ts, sysd, tmp_path)
    f = {r["rank"]: r["finish_ns"] for r in res.ranks}
    assert f[0] == net02  # eager: the send completes when delivered, whoever waits
    assert f[2] == max(10_000, net02)
    # a receive posted first waits for the arrival
    ts = kit.traces({0: [kit.comp(1, 50), kit.p2p(2, True, 1, 4096, tag=1, deps=[1])],
                     1: [kit.p2p(1, False, 0, 4096, tag=1)], 2: [kit.comp(1, 1)], 3: [kit.comp(1, 1)]})
    res = kit.run(ts, sysd, tmp_path)
    assert res.ranks[1]["finish_ns"] == 50_000 + kit.net(4096, 1, 500, 50)
    path = res.summary["critical_path"]["nodes"]
    # the path crosses from the receive to the send that completed it; the receiver waited from 0
    # while rank 0 computed: that compute is skew (waiting for a slower peer)
    assert [(n["rank"], n["kind"]) for n in path] == [(0, "compute"), (0, "send")]
    assert res.summary["critical_path"]["ns_by_category"] == {
        "compute_ns": 0, "exposed_comm_ns": kit.net(4096, 1, 500, 50), "exposed_mem_ns": 0, "skew_ns": 50_000,
        "idle_ns": 0}


def test_sends_match_by_tag_size_and_sequence(kit, tmp_path):
    sysd = kit.system([("Switch", 2, 50, 500)])
    ts = kit.traces({0: [kit.p2p(1, True, 1, 100, tag=1), kit.p2p(2, True, 1, 200, tag=2, deps=[1]),
                         kit.p2p(3, True, 1, 100, tag=1, deps=[2])],
                     1: [kit.p2p(1, False, 0, 100, tag=1), kit.p2p(2, False, 0, 100, tag=1, deps=[1]),
                         kit.p2p(3, False, 0, 200, tag=2, deps=[2])]})
    res = kit.run(ts, sysd, tmp_path)
    n100, n200 = kit.net(100, 2, 500, 50), kit.net(200, 2, 500, 50)
    assert res.ranks[0]["finish_ns"] == 2 * n100 + n200
    assert res.ranks[1]["finish_ns"] == 2 * n100 + n200


def test_roofline_compute(kit, tmp_path):
    sysd = kit.system([("Ring", 2, 50, 500)], compute={"model": "roofline", "peak-perf": 10, "local-mem-bw": 100})
    # memory bound: 1e9 ops on 1e9 bytes -> perf = min(100e9 * 1, 10e12) -> 10 ms
    # compute bound: 1e9 ops on 1e3 bytes -> perf = 10e12 -> 100 us
    ts = kit.same(2, lambda: [kit.comp(1, 1, num_ops=10**9, tensor_size=10**9),
                              kit.comp(2, 1, num_ops=10**9, tensor_size=1000, deps=[1]),
                              kit.comp(3, 5, cpu=True, num_ops=10**12, deps=[2])])
    res = kit.run(ts, sysd, tmp_path)
    assert res.ranks[0]["finish_ns"] == 10_000_000 + 100_000 + 5_000  # CPU ops replay their duration
    ts = kit.same(2, lambda: [kit.comp(1, 7)])
    res = kit.run(ts, sysd, tmp_path)
    assert res.ranks[0]["finish_ns"] == 7_000 and "replayed their duration" in " ".join(res.notes)
    # ASTRA-sim's floating-point order: intensity = ops / size first, perf = bw * 1e9 * intensity,
    # time = ops / perf * 1e9 truncated; (bw * 1e9 * ops) / size instead loses one ns here
    ops, size, bw, peak = 676497965, 6672999, 3.35, 989.5
    astra = int(ops / min(bw * 1e9 * (ops / size), peak * 1e12) * 1e9)
    assert astra == 1991940 and int(ops / min(bw * 1e9 * ops / size, peak * 1e12) * 1e9) == 1991939
    sysd = kit.system([("Ring", 2, 50, 500)], compute={"model": "roofline", "peak-perf": peak, "local-mem-bw": bw})
    res = kit.run(kit.same(2, lambda: [kit.comp(1, 1, num_ops=ops, tensor_size=size)]), sysd, tmp_path)
    assert res.ranks[0]["finish_ns"] == astra


def test_remote_memory_models(kit, tmp_path):
    for mtype, expect in (("PER_NPU_MEMORY_EXPANSION", [1100, 1100]), ("MEMORY_POOL", [1100, 2200])):
        sysd = kit.system([("Ring", 2, 50, 500)],
                          remote_memory={"memory-type": mtype, "remote-mem-latency": 100, "remote-mem-bw": 10})
        res = kit.run(kit.same(2, lambda: [kit.mem(1, 10_000)]), sysd, tmp_path)
        assert sorted(r["finish_ns"] for r in res.ranks) == expect  # 100 ns + 10000 B / 10 GB/s
        assert res.summary["symmetry"]["classes"] == (1 if mtype.startswith("PER_NPU") else 2)


def test_symmetry_gives_the_same_numbers(kit, tmp_path):
    def make():
        return [kit.comp(1, 30), kit.coll(2, MIB, deps=[1]), kit.comp(3, 40, deps=[1]), kit.coll(4, 4 * MIB, deps=[3])]

    sysd = kit.system([("Ring", 4, 50, 500), ("Switch", 2, 25, 1000)], collective_optimization="localBWAware")
    on = kit.run(kit.same(8, make), sysd, tmp_path)
    off = kit.run(kit.same(8, make), sysd, tmp_path, symmetry=False)
    assert on.summary["symmetry"]["classes"] == 1 and off.summary["symmetry"]["classes"] == 8
    assert on.ranks == [dict(r, simulated_as=0) for r in off.ranks]
    assert on.summary["events"] < off.summary["events"]


def test_results_are_deterministic(kit, tmp_path):
    def make(r):
        return [kit.comp(1, 10 + r), kit.coll(2, MIB, deps=[1], pg="1" if r % 2 else "2"),
                kit.coll(3, MIB // 2, kit.CommType.ALL_GATHER)]

    groups = {"1": [1, 3, 5, 7], "2": [0, 2, 4, 6]}

    def once():
        res = kit.run(kit.traces([make(r) for r in range(8)], groups), ring8(kit), tmp_path,
                      timeline=str(tmp_path / "t.json"))
        d = res.to_dict()
        d["summary"].pop("wall_s"), d["summary"].pop("events_per_s")
        return d, (tmp_path / "t.json").read_text()

    assert once() == once()


def test_timeline_is_chrome_trace_json(kit, tmp_path):
    out = tmp_path / "tl.json"
    res = kit.run(kit.same(8, lambda: [kit.comp(1, 5), kit.coll(2, MIB, deps=[1])]), ring8(kit), tmp_path,
                  timeline=str(out))
    data = json.loads(out.read_text())
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    names = {e["name"] for e in spans}
    assert "comp1" in names and "all_reduce2" in names
    chunks = [e for e in spans if "chunk" in e["name"]]
    assert len(chunks) == 4 and chunks[-1]["ts"] + chunks[-1]["dur"] == pytest.approx((5000 + AR_1MIB) / 1000)
    assert res.timeline == str(out) and str(out) in res.files


def test_deadlock_names_ranks_nodes_and_groups(kit, tmp_path):
    ts = kit.traces({0: [kit.coll(1, MIB, pg="1")], 1: [kit.comp(1, 1)], 2: [kit.coll(1, MIB, pg="1")],
                     3: [kit.comp(1, 1)]}, {"1": [0, 1, 2, 3]})
    with pytest.raises(ChakraError) as e:
        kit.run(ts, kit.system([("Ring", 4, 50, 500)]), tmp_path)
    msg = str(e.value)
    assert "deadlock at 1000 ns: 2 rank(s) cannot finish" in msg and "group '1'" in msg and "rank(s) 1, 3 that never issue it" in msg
    assert "node 1" in msg
    ts = kit.traces({0: [kit.p2p(1, False, 1, 64, tag=9)], 1: [kit.comp(1, 1)]})
    with pytest.raises(ChakraError, match="rank 0 node 1 waits for a send from rank 1 .tag 9, 64 bytes"):
        kit.run(ts, kit.system([("Ring", 2, 50, 500)]), tmp_path)


def test_dependency_cycle_is_reported(kit, tmp_path):
    ts = kit.same(2, lambda: [kit.comp(1, 1, deps=[2]), kit.comp(2, 1, deps=[1])])
    with pytest.raises(ChakraError, match="nodes 1, 2 never became ready"):
        kit.run(ts, kit.system([("Ring", 2, 50, 500)]), tmp_path)


def test_collectives_issued_in_different_orders_are_refused(kit, tmp_path):
    ts = kit.traces({0: [kit.coll(1, MIB), kit.coll(2, 64, kit.CommType.ALL_GATHER, deps=[1])],
                     1: [kit.coll(1, 64, kit.CommType.ALL_GATHER), kit.coll(2, MIB, deps=[1])]})
    with pytest.raises(ChakraError, match="collective #1 of group 'all' differs across ranks"):
        kit.run(ts, kit.system([("Ring", 2, 50, 500)]), tmp_path)


def test_bad_input_is_a_one_line_error(kit, tmp_path):
    from chakra_core import ConfigError, TraceFormatError

    with pytest.raises(TraceFormatError, match="depends on node 9"):
        kit.run(kit.same(2, lambda: [kit.comp(1, 1, deps=[9])]), kit.system([("Ring", 2, 50, 500)]), tmp_path)
    with pytest.raises(ConfigError, match="network has 8 NPUs but the trace set has 2 ranks"):
        kit.run(kit.same(2, lambda: [kit.comp(1, 1)]), ring8(kit), tmp_path)
    sysd = kit.system([("Ring", 8, 50, 500)], all_reduce_implementation=["direct4"])
    with pytest.raises(ConfigError, match="is not modelled by the simpy backend") as e:
        kit.run(kit.same(8, lambda: [kit.coll(1, MIB)]), sysd, tmp_path)
    # named where the system gives it (the message named neither the file nor the key)
    assert str(e.value.where).endswith(".yaml") and e.value.location == "key 'all-reduce-implementation'"
    sysd = kit.system([("Ring", 6, 50, 500)], all_reduce_implementation=["doubleBinaryTree"])
    with pytest.raises(ConfigError, match="doubleBinaryTree needs a power-of-two NPU count"):
        kit.run(kit.same(6, lambda: [kit.coll(1, MIB)]), sysd, tmp_path)
    # a group neither the trace set nor a comm-group file defines is an error naming the node
    # (it used to be taken for all ranks, and ended in a deadlock report); the exporter agrees
    ts = kit.traces([[kit.coll(1, MIB, pg="7")] if r < 2 else [kit.comp(1, 1)] for r in range(4)],
                    {"1": [0, 1]})
    with pytest.raises(TraceFormatError, match="process group '7', which the trace set does not define") as e:
        kit.run(ts, kit.system([("Ring", 4, 50, 500)]), tmp_path)
    assert e.value.location == "node 1"
    # ranks 0, 1, 2, 5: ranks 3 and 4 have no trace (was an IndexError traceback)
    ts = kit.traces({r: [kit.comp(1, 1)] for r in (0, 1, 2, 5)})
    with pytest.raises(TraceFormatError, match="ranks up to 5 but no rank 3 .2 missing."):
        kit.run(ts, None, tmp_path)
    # a mistyped split count: 1 MiB // 10^11 = 0 < 8 NPUs, so each chunk is raised to 8 bytes and
    # the all-reduce would have 10^11 chunks (it used to exhaust memory)
    sysd = kit.system([("Ring", 8, 50, 500)], preferred_dataset_splits=2**31 - 1)
    with pytest.raises(ConfigError, match="splits into 2147483647 chunks") as e:
        kit.run(kit.same(8, lambda: [kit.coll(1, MIB)]), sysd, tmp_path)
    assert "preferred-dataset-splits" in e.value.location


def test_collectives_astra_sim_does_not_model(kit, tmp_path):
    sysd = ring8(kit)
    t_ar = kit.run(kit.same(8, lambda: [kit.coll(1, MIB)]), sysd, tmp_path).ranks[0]["finish_ns"]
    reduce = kit.run(kit.same(8, lambda: [kit.coll(1, MIB, kit.CommType.REDUCE)]), sysd, tmp_path)
    assert reduce.ranks[0]["finish_ns"] == t_ar and "REDUCE" in " ".join(reduce.notes)
    # GATHER / SCATTER: comm_size is the per-rank piece (what the PyTorch plugin writes), timed
    # as a ring all-gather of that shard: 4 chunks of 32768 bytes, each 8 endpoint delays and
    # 7 steps of net(32768) = floor(500 + 32768 / (50 * 2^30 / 1e9)) = 1110 ns
    shard_ag = 4 * (8 * 10 + 7 * kit.net(32768, 1, 500, 50))
    assert shard_ag == 31400
    for ct in (kit.CommType.ALL_GATHER, kit.CommType.GATHER, kit.CommType.SCATTER):
        res = kit.run(kit.same(8, lambda ct=ct: [kit.coll(1, MIB // 8, ct)]), sysd, tmp_path)
        assert [r["finish_ns"] for r in res.ranks] == [shard_ag] * 8
    # BROADCAST without a duration: a scatter then an all-gather of ceil(S/P) pieces, two
    # all-gathers in sequence (the exporter's rule); 1 MiB + 1 bytes: pieces of 131073 bytes,
    # 5 chunks of 32768 (the remainder chunk is full size) per all-gather
    res = kit.run(kit.same(8, lambda: [kit.coll(1, MIB + 1, kit.CommType.BROADCAST)]), sysd, tmp_path)
    assert [r["finish_ns"] for r in res.ranks] == [2 * 5 * (8 * 10 + 7 * 1110)] * 8
    bcast = kit.coll(1, MIB, kit.CommType.BROADCAST)
    bcast.duration_micros = 12
    res = kit.run(kit.same(8, lambda: [bcast]), sysd, tmp_path)
    assert res.ranks[0]["finish_ns"] == 12_000  # ASTRA-sim replays a broadcast's duration


def test_congestion_aware_shares_bandwidth(kit, tmp_path):
    sysd = kit.system([("FullyConnected", 8, 50, 500)], active_chunks_per_dimension=4)
    ts = kit.same(8, lambda: [kit.coll(1, MIB)])
    unaware = kit.run(ts, sysd, tmp_path).ranks[0]["finish_ns"]
    aware = kit.run(ts, sysd, tmp_path, congestion="aware")
    assert aware.ranks[0]["finish_ns"] > unaware  # four chunks' messages share each link
    assert any("congestion-aware" in n for n in aware.notes)


def test_comm_group_file_defines_the_groups(kit, tmp_path):
    from pathlib import Path

    astra = Path(__file__).resolve().parents[3] / "examples" / "system" / "astra"
    ts = kit.traces([[kit.coll(1, MIB, pg="1" if r < 4 else "2")] for r in range(8)])  # no groups in the traces
    res = kit.run(ts, None, tmp_path, system=str(astra / "system.json"), network=str(astra / "network.yml"),
                  comm_groups=str(astra / "groups.json"), symmetry=False)  # with it, 4-7 are stood for by 0-3
    assert {s["group"] for s in res.summary["collectives"]} == {"1", "2"}
    assert res.summary["collectives"][0]["phases"] == ["all-reduce ring over group"]
    # a group the file redefines is noted
    ts = kit.traces([[kit.coll(1, MIB, pg="1" if r < 4 else "2")] for r in range(8)],
                    {"1": [0, 1, 2, 3, 4, 5, 6, 7], "2": [4, 5, 6, 7]})
    res = kit.run(ts, None, tmp_path, system=str(astra / "system.json"), network=str(astra / "network.yml"),
                  comm_groups=str(astra / "groups.json"))
    assert any("redefines group(s) 1 of the trace set" in n for n in res.notes)
    # a rank issuing on a group it is not in is an error
    ts = kit.traces([[kit.coll(1, MIB, pg="1")] for r in range(8)])
    with pytest.raises(ChakraError, match="rank 4 node 1 issues a collective on group '1' but is not one of"):
        kit.run(ts, None, tmp_path, system=str(astra / "system.json"), network=str(astra / "network.yml"),
                comm_groups=str(astra / "groups.json"), symmetry=False)


def test_staggered_starts_have_no_barrier(kit, tmp_path):
    # 2-NPU ring, one chunk; rank 1 computes 50 us first.  Per the ring's message chain (no
    # barrier): rank 0 finishes at 50 us + 3e + N + R, rank 1 at 50 us + 3e + 2N + R = its start
    # plus the stand-alone time
    sysd = kit.system([("Ring", 2, 50, 500)], preferred_dataset_splits=1)
    ts = kit.traces({0: [kit.coll(1, MIB)], 1: [kit.comp(1, 50), kit.coll(2, MIB, deps=[1])]})
    res = kit.run(ts, sysd, tmp_path)
    m = MIB // 2
    n, r = kit.net(m, 1, 500, 50), kit.red(m)
    assert [x["finish_ns"] for x in res.ranks] == [50_000 + 30 + n + r, 50_000 + 30 + 2 * n + r]
    # with symmetry off the same
    off = kit.run(ts, sysd, tmp_path, symmetry=False)
    assert [x["finish_ns"] for x in off.ranks] == [x["finish_ns"] for x in res.ranks]


def test_symmetry_is_dropped_when_a_class_would_finish_apart(kit, tmp_path):
    sysd = kit.system([("Ring", 4, 50, 500)], preferred_dataset_splits=1)

    rs = kit.CommType.REDUCE_SCATTER

    def make(r):
        return [kit.coll(1, MIB, rs)] if r < 2 else [kit.comp(1, 50), kit.coll(2, MIB, rs, deps=[1])]

    on = kit.run(kit.traces([make(r) for r in range(4)]), sysd, tmp_path)
    off = kit.run(kit.traces([make(r) for r in range(4)]), sysd, tmp_path, symmetry=False)
    assert [r["finish_ns"] for r in on.ranks] == [r["finish_ns"] for r in off.ranks]
    assert len({r["finish_ns"] for r in on.ranks[:2]}) == 2  # ranks 0 and 1 have the same trace
    assert any(n.startswith("symmetry turned off") for n in on.notes)
    assert on.summary["symmetry"]["enabled"] is False


def test_per_rank_ring_timing_agrees_with_the_closed_forms(kit):
    # equal starts and equal links: the per-member chain gives the flow-shop closed form
    from chakra_simpy.member_timing import Phase, Step, plan_finish

    e, n1, r = 10, 1110, 1965
    pred = [(j - 1) % 8 for j in range(8)]
    ring8 = Phase(0, e, [Step(pred, [n1] * 8, e + (r if s < 7 else 0)) for s in range(14)])
    assert plan_finish([0] * 8, [ring8], 4, 1) == [4 * 29445] * 8
    assert plan_finish([0] * 8, [ring8], 4, 2) == [2 * 29445] * 8
    # two phases on two queues: chunk k leaves queue 0 at (k+1)*T0, queue 1 serves them in turn
    other = Phase(1, e, [Step(pred, [500] * 8, e + (100 if s < 7 else 0)) for s in range(14)])
    t0, t1 = 29445, 15 * e + 14 * 500 + 7 * 100
    f0 = f1 = 0
    for _ in range(3):
        f0 += t0
        f1 = max(f0, f1) + t1
    assert plan_finish([0] * 8, [ring8, other], 3, 1) == [f1] * 8


def test_a_plan_issued_later_with_the_same_skew_is_reused_shifted(kit):
    # the ring of the closed-form test above, issued at 0 and again 1,000 ns later: one plan kept
    from chakra_simpy.member_timing import FinishPlans, Phase, Step

    e, n1, r = 10, 1110, 1965
    pred = [(j - 1) % 8 for j in range(8)]
    ring8 = Phase(0, e, [Step(pred, [n1] * 8, e + (r if s < 7 else 0)) for s in range(14)])
    plans = FinishPlans()
    assert plans.finish([0] * 8, [ring8], 4, 1) == [4 * 29445] * 8
    assert plans.finish([1000] * 8, [ring8], 4, 1) == [1000 + 4 * 29445] * 8
    assert len(plans.known) == 1


@pytest.mark.parametrize("impl", ["ring", "direct", "halvingDoubling"])
@pytest.mark.parametrize("kind", ["AR", "RS", "AG", "A2A"])
@pytest.mark.parametrize("topo", ["Ring", "FullyConnected", "Switch"])
def test_per_member_chains_equal_the_phase_formulas(topo, kind, impl):
    # every algorithm, equal starts: the per-member chain of one phase = the closed form
    from chakra_core.system import Dimension
    from chakra_simpy.chunk_phases import build_phase, phase_cost
    from chakra_simpy.layouts import dim_layout
    from chakra_simpy.member_timing import plan_finish

    if impl == "halvingDoubling" and kind == "A2A":
        return
    dims = (Dimension(topo, 8, 50, 500), Dimension("Switch", 2, 25, 1000))
    d = MIB // 4
    ph = build_phase(kind, d, impl, dim_layout(dims, 0, 16), 0, 10, 50, False)
    want = phase_cost(kind, impl, dims[0], d, 10, 50).fixed
    assert plan_finish([0] * 16, [ph], 1, 1) == [want] * 16


def test_staggered_members_of_a_two_dimension_plan(kit, tmp_path):
    sysd = kit.system([("Ring", 4, 50, 500), ("Switch", 2, 25, 1000)], collective_optimization="localBWAware")
    alone = kit.run(kit.same(8, lambda: [kit.coll(1, MIB)]), sysd, tmp_path).ranks[0]["finish_ns"]

    def make(r):
        return [kit.coll(1, MIB)] if r != 5 else [kit.comp(1, 40), kit.coll(2, MIB, deps=[1])]

    res = kit.run(kit.traces([make(r) for r in range(8)]), sysd, tmp_path)
    off = kit.run(kit.traces([make(r) for r in range(8)]), sysd, tmp_path, symmetry=False)
    got = [r["finish_ns"] for r in res.ranks]
    assert got == [r["finish_ns"] for r in off.ranks]
    barrier = 40_000 + alone
    # the late rank takes its start plus the stand-alone time; everyone else, waiting on its
    # messages without a barrier, finishes earlier
    assert got[5] == barrier and all(t < barrier for r, t in enumerate(got) if r != 5)
    assert any("timed per rank" in n for n in res.notes)


def test_staggered_direct_and_halving_doubling(kit, tmp_path):
    # direct reduce-scatter, one chunk, rank 3 issues 40 us late: everyone else waits for its
    # message (40 us + e, then net, e and the reduction); rank 3 already has all the others'
    impl = {f"{k}_implementation": ["direct"] for k in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")}
    sysd = kit.system([("FullyConnected", 8, 50, 500)], preferred_dataset_splits=1, **impl)
    rs = kit.CommType.REDUCE_SCATTER

    def make(r):
        return [kit.coll(1, MIB, rs)] if r != 3 else [kit.comp(1, 40), kit.coll(2, MIB, rs, deps=[1])]

    res = kit.run(kit.traces([make(r) for r in range(8)]), sysd, tmp_path)
    m = MIB // 8
    n, r = kit.net(m, 1, 500, 50), kit.red(m)
    assert [x["finish_ns"] for x in res.ranks] == [40_000 + 20 + n + r] * 3 + [40_000 + 20 + r] + [40_000 + 20 + n + r] * 4
    # halvingDoubling all-reduce: the same with symmetry on and off, nobody later than the barrier
    impl = {f"{k}_implementation": ["halvingDoubling"] for k in ("all_reduce", "all_gather", "reduce_scatter")}
    sysd = kit.system([("Ring", 8, 50, 500)], **impl)
    alone = kit.run(kit.same(8, lambda: [kit.coll(1, MIB)]), sysd, tmp_path).ranks[0]["finish_ns"]

    def late(r):
        return [kit.coll(1, MIB)] if r != 6 else [kit.comp(1, 40), kit.coll(2, MIB, deps=[1])]

    on = kit.run(kit.traces([late(r) for r in range(8)]), sysd, tmp_path)
    off = kit.run(kit.traces([late(r) for r in range(8)]), sysd, tmp_path, symmetry=False)
    got = [x["finish_ns"] for x in on.ranks]
    assert got == [x["finish_ns"] for x in off.ranks]
    assert max(got) <= 40_000 + alone and min(got) < 40_000 + alone


def test_stagger_limit_zero_is_a_barrier(kit, tmp_path):
    sysd = kit.system([("Ring", 2, 50, 500)], preferred_dataset_splits=1)
    ts = kit.traces({0: [kit.coll(1, MIB)], 1: [kit.comp(1, 50), kit.coll(2, MIB, deps=[1])]})
    res = kit.run(ts, sysd, tmp_path, stagger_limit=0)
    m = MIB // 2
    alone = 3 * 10 + 2 * kit.net(m, 1, 500, 50) + kit.red(m)
    assert [x["finish_ns"] for x in res.ranks] == [50_000 + alone] * 2
    assert any("barrier" in n for n in res.notes)


def test_missing_local_mem_bw_names_file_and_key(kit, tmp_path):
    # examples/system/astra/system.json without local-mem-bw: ASTRA-sim's default 0 GB/s
    from pathlib import Path

    from chakra_core import ConfigError

    astra = Path(__file__).resolve().parents[3] / "examples" / "system" / "astra"
    cfg = json.loads((astra / "system.json").read_text())
    del cfg["local-mem-bw"]
    sysf = tmp_path / "system.json"
    sysf.write_text(json.dumps(cfg))
    opts = {"system": str(sysf), "network": str(astra / "network.yml")}
    # an all-gather reduces nothing: it runs (the 1 MiB ring all-gather of the spec's formulas)
    res = kit.run(kit.same(8, lambda: [kit.coll(1, MIB, kit.CommType.ALL_GATHER)]), None, tmp_path, **opts)
    assert res.ranks[0]["finish_ns"] > 0
    with pytest.raises(ConfigError) as e:
        kit.run(kit.same(8, lambda: [kit.coll(1, MIB)]), None, tmp_path, **opts)
    assert str(e.value) == (f"{sysf}:key 'local-mem-bw': a reduction needs 'local-mem-bw' > 0 GB/s "
                            "(ASTRA-sim divides by zero; its system.json default is 0): set it in the "
                            "system file")


def test_validation_before_simulate_uses_the_comm_group_file(kit):
    # the traces name groups "1" and "2" that only ASTRA-sim's groups.json defines: the set alone
    # has undefined groups, so the check before simulating must take the file's groups too
    from pathlib import Path

    import chakra_core

    astra = Path(__file__).resolve().parents[3] / "examples" / "system" / "astra"
    ts = kit.traces([[kit.coll(1, MIB, pg="1" if r < 4 else "2")] for r in range(8)])
    with pytest.raises(ChakraError, match="pg-undefined|undefined"):
        chakra_core.simulate(ts, system=str(astra / "system.json"), network=str(astra / "network.yml"))
    res = chakra_core.simulate(ts, system=str(astra / "system.json"), network=str(astra / "network.yml"),
                               comm_groups=str(astra / "groups.json"), options={"symmetry": False})
    assert {s["group"] for s in res.summary["collectives"]} == {"1", "2"}


def test_a_collective_of_an_unknown_comm_type_is_an_error(kit, tmp_path):
    from chakra_core import TraceFormatError, set_attr

    for value in (10, -1, 2**40):
        def nodes(value=value):
            n = kit.coll(1, MIB)
            set_attr(n, "comm_type", value)
            return [n]
        with pytest.raises(TraceFormatError, match=rf"collective without a valid comm_type \({value}\)") as e:
            kit.run(kit.same(2, nodes), kit.system([("Ring", 2, 50, 500)]), tmp_path)
        assert e.value.location == "node 1"
    barrier = kit.run(kit.same(2, lambda: [kit.coll(1, 0, kit.CommType.BARRIER)]), kit.system([("Ring", 2, 50, 500)]),
                      tmp_path)
    assert barrier.summary["collectives"][0]["collective"] == "BARRIER"


@pytest.mark.parametrize("ct", ["ALL_GATHER", "ALL_REDUCE"])
@pytest.mark.parametrize("symmetry", [False, True])
def test_the_parts_of_a_collective_on_fewer_dimensions_end_on_their_own(kit, tmp_path, ct, symmetry):
    """A 64 KiB collective of all 4 ranks on Ring 2 x Ring 2 whose implementation lists name the
    first dimension only (ASTRA-sim's rule: it runs there alone), ranks 0 and 1 issuing it at 0
    and ranks 2 and 3 after 50 us of compute: the parts {0, 1} and {2, 3} exchange nothing, so
    each starts when its own members issue it and ends on its own, as ASTRA-sim (which has no
    barrier) ends them: 0 and 1 exactly as when every member issues it at once, 2 and 3 exactly
    50 us later (less the 1 ns that the compute node of 0 us takes, as in ASTRA-sim). Until
    2026-12-07 0 and 1 were held until 2 and 3 issued it (a note), an internal error before."""
    def run(late_us):
        per = {r: [kit.comp(1, late_us if r >= 2 else 0), kit.coll(2, 1 << 16, kit.CommType[ct], deps=[1])] for r in range(4)}
        sysd = kit.system([("Ring", 2, 50, 500), ("Ring", 2, 50, 500)],
                          all_gather_implementation=["ring"], all_reduce_implementation=["ring"])
        return kit.run(kit.traces(per), sysd, tmp_path, symmetry=symmetry)

    together = [r["finish_ns"] for r in run(0).ranks]
    late = run(50)
    finish = [r["finish_ns"] for r in late.ranks]
    assert finish[:2] == together[:2] and finish[2] == finish[3]
    assert finish[2] - 50_000 == together[2] - 1
    if ct == "ALL_GATHER":  # 4 chunks of 16 KiB one after the other, a step of 2 endpoint delays each
        assert together[2] - 1 == 4 * (2 * 10 + 500 + int((1 << 14) / kit.bpns(50)))
    assert together[0] < 50_000 and not any("ended when it did" in n for n in late.notes)
    (row,) = late.summary["collectives"]
    # one collective, from its last issue to its last end; no member of a part waited for another
    assert (row["count"], row["total_ns"], row["sync_wait_ns"]) == (1, finish[2] - 50_000, 0)


@pytest.mark.parametrize("seed", range(6))
def test_a_set_whose_collectives_run_on_the_first_dimension_is_two_jobs(kit, tmp_path, seed):
    """4 ranks on Ring 2 x Ring 2, every collective of the set on the first dimension alone
    (``involved_dim`` [1, 0]), random compute before each (so members and parts issue at
    random times): the parts {0, 1} and {2, 3} exchange nothing, so each must finish exactly as
    the same two ranks simulated alone on one Ring 2 (where every collective is whole).
    Symmetry on and off."""
    import random

    rnd = random.Random(seed)
    kinds = [kit.CommType.ALL_REDUCE, kit.CommType.ALL_GATHER, kit.CommType.REDUCE_SCATTER, kit.CommType.ALL_TO_ALL]
    colls = [(rnd.choice(kinds), rnd.choice([1 << 10, 1 << 16, 3 << 12])) for _ in range(5)]
    waits = [[rnd.choice([0, 1, 7, 40]) for _ in colls] for _ in range(4)]

    def nodes(r, involved):
        out, last = [], []
        for k, (ct, size) in enumerate(colls):
            out.append(kit.comp(2 * k + 1, waits[r][k], deps=last))
            out.append(kit.coll(2 * k + 2, size, ct, deps=[2 * k + 1], involved=involved))
            last = [2 * k + 2]
        return out

    link = ("Ring", 2, 50, 500)
    for symmetry in (False, True):
        whole = kit.run(kit.traces({r: nodes(r, [1, 0]) for r in range(4)}), kit.system([link, link]), tmp_path,
                        symmetry=symmetry)
        for part in ((0, 1), (2, 3)):
            alone = kit.run(kit.traces({j: nodes(r, None) for j, r in enumerate(part)}), kit.system([link]),
                            tmp_path, symmetry=symmetry)
            assert [whole.ranks[r]["finish_ns"] for r in part] == [x["finish_ns"] for x in alone.ranks], (seed, part)
