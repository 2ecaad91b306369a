"""Symmetry by role: ranks equal up to relabelled groups and peers are simulated once, with the
same per-rank results as when every rank is simulated.

Inputs: a hybrid-parallel text workload converted by chakra-text (model-parallel groups of 4
across data-parallel replicas, where every rank names its own groups), and hand-built
pipeline sets (no framework here writes pipeline-parallel traces with send/recv between
stages: built in memory, each stage sending its activations to the next).
"""

from __future__ import annotations

import pytest

from chakra_core import MemoryRank, role_key

HYBRID = """HYBRID_TRANSFORMER model_parallel_NPU_group: 4
4
l0 -1 1000 ALLREDUCE 1048576 1100 ALLREDUCE 2097152 1200 ALLREDUCE 4194304 0
l1 -1 2000 ALLGATHER 524288 2100 REDUCESCATTER 1048576 2200 ALLREDUCE 1048576 0
l2 -1 3000 NONE 0 3100 ALLREDUCE 262144 3200 ALLREDUCE 8388608 0
l3 -1 400 ALLTOALL 65536 4100 NONE 0 4200 ALLREDUCE 1048576 0
"""


def _rows(res):
    return [{k: v for k, v in r.items() if k != "simulated_as"} for r in res.ranks]


def _same_collectives(on, off):
    """The rows of ``summary.collectives`` with symmetry on are those of every group, as
    without it (they listed the groups of the simulated ranks alone: a sweep's collective
    totals changed with symmetry, 953 collectives against 3,040 of the same job)."""
    assert on.summary["collectives"] == off.summary["collectives"]
    assert len({r["group"] for r in off.summary["collectives"]}) > 1


def _hybrid(tmp_path, npus):
    pytest.importorskip("chakra_text")
    from chakra_core import load_traces

    src = tmp_path / "hybrid.txt"
    src.write_text(HYBRID)
    return load_traces([str(src)], "text", {"npus": npus, "passes": 2})


def test_hybrid_ranks_differ_only_in_their_groups(tmp_path):
    ts = _hybrid(tmp_path, 16)
    keys = [role_key(rt) for rt in ts]
    assert len({k.digest for k in keys}) == 1  # one role: relabelled, all traces are equal
    assert len({k.groups for k in keys}) == 16  # each rank names its own model/data groups
    for r, k in enumerate(keys):
        assert all(r in ts.process_groups[g] for g in k.groups)


@pytest.mark.parametrize("dims", [
    [("FullyConnected", 4, 200, 100), ("Switch", 4, 25, 1000)],
    [("Ring", 4, 100, 200), ("Ring", 4, 50, 500)],
])
def test_hybrid_set_is_one_class_with_the_same_results(kit, tmp_path, dims):
    ts = _hybrid(tmp_path, 16)
    sysd = kit.system(dims, collective_optimization="localBWAware")
    on = kit.run(ts, sysd, tmp_path)
    off = kit.run(ts, sysd, tmp_path, symmetry=False)
    assert on.summary["symmetry"] == {"enabled": True, "classes": 1, "simulated_ranks": 1,
                                      "largest_class": 16, "by": "role"}
    assert off.summary["symmetry"]["classes"] == 16
    assert _rows(on) == _rows(off)
    _same_collectives(on, off)
    assert len({r["finish_ns"] for r in off.ranks}) == 1 and off.ranks[0]["finish_ns"] > 0


def test_congestion_aware_merges_identical_traces_only(kit, tmp_path):
    ts = _hybrid(tmp_path, 16)
    sysd = kit.system([("Ring", 4, 100, 200), ("Ring", 4, 50, 500)])
    on = kit.run(ts, sysd, tmp_path, congestion="aware")
    assert on.summary["symmetry"]["classes"] == 16 and on.summary["symmetry"]["by"] == "identical traces"
    assert any("symmetry by identical traces only" in n for n in on.notes)


def _pipeline(kit, stages, replicas, size=1 << 20):
    """Rank = stage + stages * replica: compute, send to the next stage, receive from the
    previous one, an all-reduce with the same stage of the other replicas."""
    per = {}
    groups = {f"dp{s}": [s + stages * k for k in range(replicas)] for s in range(stages)}
    for k in range(replicas):
        for s in range(stages):
            r = s + stages * k
            nodes = []
            last = []
            if s > 0:
                nodes.append(kit.p2p(1, False, r - 1, size, tag=7))
                last = [1]
            nodes.append(kit.comp(2, 10 * (s + 1), deps=last))
            if s + 1 < stages:
                nodes.append(kit.p2p(3, True, r + 1, size, tag=7, deps=[2]))
            nodes.append(kit.coll(4, 4 << 20, pg=f"dp{s}", deps=[2]))
            per[r] = nodes
    return kit.traces(per, groups)


def test_pipeline_stages_across_replicas_are_classes(kit, tmp_path):
    ts = _pipeline(kit, 4, 4)
    sysd = kit.system([("FullyConnected", 4, 100, 100), ("Ring", 4, 50, 500)])
    on = kit.run(ts, sysd, tmp_path)
    off = kit.run(ts, sysd, tmp_path, symmetry=False)
    assert on.summary["symmetry"]["classes"] == 4  # one per stage, stood for by replica 0
    assert [r["simulated_as"] for r in on.ranks] == [r % 4 for r in range(16)]
    assert _rows(on) == _rows(off)
    _same_collectives(on, off)
    assert len({r["finish_ns"] for r in off.ranks}) == 4


def test_unclosed_classes_are_dissolved(kit, tmp_path):
    """Every rank of a p2p ring has one role, but its peers are not its class's
    representative: the class cannot stand for them and every rank is simulated."""
    per = {r: [kit.p2p(1, True, (r + 1) % 4, 1 << 16), kit.p2p(2, False, (r - 1) % 4, 1 << 16),
               kit.comp(3, 5, deps=[2])] for r in range(4)}
    ts = kit.traces(per)
    assert len({role_key(rt).digest for rt in ts}) == 1
    sysd = kit.system([("Ring", 4, 50, 500)])
    on = kit.run(ts, sysd, tmp_path)
    assert on.summary["symmetry"]["classes"] == 4
    assert _rows(on) == _rows(kit.run(ts, sysd, tmp_path, symmetry=False))


def test_groups_timed_differently_are_not_merged(kit, tmp_path):
    """Two groups of the same size whose rings run on different dimensions (2 hops through a
    switch against 1 inside a node) time differently: their members are not one class."""
    groups = {"near": [0, 1], "far": [2, 6]}
    per = {r: [kit.coll(1, 1 << 20, pg=("near" if r < 2 else "far"))] for r in (0, 1, 2, 6)}
    per.update({r: [kit.comp(1, 1)] for r in (3, 4, 5, 7)})
    ts = kit.traces(per, groups)
    sysd = kit.system([("FullyConnected", 4, 100, 100), ("Switch", 2, 25, 1000)])
    on = kit.run(ts, sysd, tmp_path)
    off = kit.run(ts, sysd, tmp_path, symmetry=False)
    assert _rows(on) == _rows(off)
    assert on.ranks[0]["finish_ns"] != on.ranks[2]["finish_ns"]
    assert on.summary["symmetry"]["classes"] == 3  # {0, 1}, {2, 6}, the idle ranks
    assert isinstance(ts[0], MemoryRank)


def test_groups_of_consecutive_ranks_on_a_ring_are_classes_by_place(kit, tmp_path):
    """Model-parallel groups of 4 consecutive ranks on a Ring of 16: each group's ring has three
    1-hop links and a 3-hop one closing it, the same from the member at one place of every
    group (data-parallel groups {r, r+4, r+8, r+12} are uniform): 4 classes, stood for by the
    first group (16 before)."""
    ts = _hybrid(tmp_path, 16)
    sysd = kit.system([("Ring", 16, 50, 500)], collective_optimization="localBWAware")
    on = kit.run(ts, sysd, tmp_path)
    off = kit.run(ts, sysd, tmp_path, symmetry=False)
    assert on.summary["symmetry"]["classes"] == 4 and off.summary["symmetry"]["classes"] == 16
    assert [r["simulated_as"] for r in on.ranks] == [r % 4 for r in range(16)]
    assert not any("symmetry turned off" in n for n in on.notes)
    assert _rows(on) == _rows(off)
    _same_collectives(on, off)
    aware = kit.run(ts, sysd, tmp_path, congestion="aware")  # links shared: no classes by place
    assert aware.summary["symmetry"]["classes"] == 16


def test_groups_whose_rings_differ_are_not_classes_by_place(kit, tmp_path):
    """Two groups of 4 on a Ring of 10 (the simulator orders a group's ring by rank): [0, 1, 2,
    3] has links of 3, 1, 1 and 1 hops, [4, 5, 6, 8] of 4, 1, 1 and 2; no member of one is
    timed as a member of the other.  [4, 5, 6, 7] is the first ring 4 places on: each place is
    a class."""
    def run(b):
        per = {r: [kit.comp(0, 5), kit.coll(1, 1 << 20, pg="a" if r < 4 else "b", deps=[0]), kit.comp(2, 7, deps=[1])]
               for r in (0, 1, 2, 3, *b)}
        per.update({r: [kit.comp(0, 5)] for r in range(10) if r not in per})
        ts = kit.traces(per, {"a": [0, 1, 2, 3], "b": b})
        sysd = kit.system([("Ring", 10, 50, 500)])
        on = kit.run(ts, sysd, tmp_path)
        assert _rows(on) == _rows(kit.run(ts, sysd, tmp_path, symmetry=False))
        return on

    on = run([4, 5, 6, 8])
    assert on.summary["symmetry"]["classes"] == 9  # 4 places of each group, the idle ranks 7 and 9
    assert {r["finish_ns"] for r in on.ranks[:4]}.isdisjoint({on.ranks[r]["finish_ns"] for r in (4, 5, 6, 8)})
    on = run([4, 5, 6, 7])
    assert on.summary["symmetry"]["classes"] == 5
    assert [r["simulated_as"] for r in on.ranks[:8]] == [0, 1, 2, 3, 0, 1, 2, 3]


def test_a_class_is_split_where_its_groups_hold_other_classes(kit, tmp_path):
    """Groups of 2 on a switch: rank 1 and rank 5 compute 500 us, the others 5 us.  Ranks 0, 2,
    3 and 4 have one role, but only 0 and 4 wait for a slow partner: ranks 2 and 3 (a group
    with none) are a class of their own.  Before, all four were simulated as rank 0 and ranks 2
    and 3 finished at rank 0's time."""
    groups = {"g0": [0, 1], "g1": [2, 3], "g2": [4, 5]}
    per = {r: [kit.comp(0, 500 if r in (1, 5) else 5), kit.coll(1, 1 << 20, pg=f"g{r // 2}", deps=[0]),
               kit.comp(2, 7, deps=[1])] for r in range(6)}
    ts = kit.traces(per, groups)
    sysd = kit.system([("Switch", 6, 50, 500)])
    on = kit.run(ts, sysd, tmp_path)
    assert [r["simulated_as"] for r in on.ranks] == [0, 1, 2, 2, 0, 1]
    assert _rows(on) == _rows(kit.run(ts, sysd, tmp_path, symmetry=False))
    assert on.ranks[2]["finish_ns"] + 400_000 < on.ranks[0]["finish_ns"]  # no slow partner to wait for


def test_a_class_is_split_where_its_groups_play_other_parts(kit, tmp_path):
    """A 2 x 2 grid of groups (rows and columns) on a switch; every rank all-reduces on one
    group, computes 100 us, all-reduces on the other, but rank 3 takes its column first where
    the others take their row: one role, yet its partners wait for it at other times.  The
    classes must hold the label each member gives a group (a reviewer's case: before, all four
    ranks were one class and finished at 206,400 ns)."""
    names = {0: ("row0", "col0"), 1: ("row0", "col1"), 2: ("row1", "col0"), 3: ("col1", "row1")}
    per = {r: [kit.comp(1, 1), kit.coll(2, 1 << 20, deps=[1], pg=a), kit.comp(3, 100, deps=[2]),
               kit.coll(4, 1 << 20, deps=[3], pg=b)] for r, (a, b) in names.items()}
    ts = kit.traces(per, {"row0": [0, 1], "row1": [2, 3], "col0": [0, 2], "col1": [1, 3]})
    sysd = kit.system([("Switch", 4, 50, 100)])
    on = kit.run(ts, sysd, tmp_path)
    assert on.summary["symmetry"]["classes"] == 4
    assert _rows(on) == _rows(kit.run(ts, sysd, tmp_path, symmetry=False))
    assert len({r["finish_ns"] for r in on.ranks}) > 1


def test_classes_split_along_chains_of_groups(kit, tmp_path):
    """Two chains of 12 ranks on a switch, each rank all-reducing with the rank before it in its
    chain, then with the one after it (groups of 2).  The inner ranks of a chain have one role;
    only the chain's ends tell them apart, one more rank a round from each end: 12 classes, each
    rank stood for by the same place of the first chain (the refinement looks again only at
    the ranks beside those that changed class)."""
    m = 12
    groups = {f"c{k}": [k, k + 1] for k in range(2 * m - 1) if (k + 1) % m}
    per = {}
    for r in range(2 * m):
        names = [g for g in (f"c{r - 1}", f"c{r}") if g in groups and r in groups[g]]
        per[r] = [kit.comp(1, 3)] + [kit.coll(2 + i, 1 << 16, deps=[1 + i], pg=g) for i, g in enumerate(names)]
    ts = kit.traces(per, groups)
    sysd = kit.system([("Switch", 2 * m, 50, 500)])
    on = kit.run(ts, sysd, tmp_path)
    assert on.summary["symmetry"]["classes"] == m
    assert [r["simulated_as"] for r in on.ranks] == [r % m for r in range(2 * m)]
    assert _rows(on) == _rows(kit.run(ts, sysd, tmp_path, symmetry=False))
    assert len({r["finish_ns"] for r in on.ranks}) == m


@pytest.mark.parametrize("case", ["groups", "peers"])
def test_a_deadlock_is_found_with_symmetry_on(kit, tmp_path, case):
    """Sets that deadlock (a group one member never issues on; a receive whose sender sends
    elsewhere) must not run to the end because their ranks were merged (a reviewer's cases)."""
    if case == "groups":
        per = {r: [kit.comp(1, 1), kit.coll(2, 1 << 20, deps=[1], pg=g)] for r, g in enumerate("AABH")}
        ts = kit.traces(per, {"A": [0, 1], "B": [2, 3], "H": [1, 3]})
        nranks, match = 4, "never issue it"
    else:
        m = 1 << 16
        per = {0: [kit.p2p(1, False, 2, m)], 1: [kit.p2p(1, False, 3, m)], 4: [kit.p2p(1, False, 3, m)],
               2: [kit.p2p(1, True, 0, m)], 3: [kit.p2p(1, True, 4, m)], 5: [kit.comp(1, 1)]}
        ts = kit.traces(per)
        nranks, match = 6, "waits for a send from rank 3"
    from chakra_core import ChakraError

    with pytest.raises(ChakraError, match=match):
        kit.run(ts, kit.system([("Switch", nranks, 50, 100)]), tmp_path)


@pytest.mark.parametrize("symmetry", [True, False])
@pytest.mark.parametrize(("group", "match"), [([-5, 0], "names rank -5 but there are ranks 0 to 3"),
                                              ([0, 0, 1, 2], "lists rank 0 twice")])
def test_a_group_naming_a_rank_twice_or_below_0_is_an_error(kit, tmp_path, symmetry, group, match):
    """Trace-set groups that validation would report (pg-bad-rank), run without it: a one-line
    error, not an internal one (a reviewer's cases: an IndexError in the symmetry classes, a
    KeyError in the engine, or -5 silently read as rank -5 % 4)."""
    from chakra_core import ConfigError

    per = {r: [kit.comp(1, 1), kit.coll(2, 1 << 20, deps=[1], pg="B" if r < 2 else "C")] for r in range(4)}
    ts = kit.traces(per, {"A": group, "B": [0, 1], "C": [2, 3]})
    with pytest.raises(ConfigError, match=match):
        kit.run(ts, kit.system([("Ring", 4, 50, 100)]), tmp_path, symmetry=symmetry)


@pytest.mark.parametrize("congestion", ["unaware", "aware"])
@pytest.mark.parametrize("symmetry", [True, False])
def test_a_collective_in_a_group_of_one_rank_sends_nothing(kit, tmp_path, congestion, symmetry):
    # each rank alone in its group (as torch.distributed.new_group([rank]) makes): 5 us, the
    # group's all-reduce, 7 us; it once stopped the symmetry classes with "a message to oneself"
    ts = kit.traces({r: [kit.comp(0, 5), kit.coll(1, 4096, pg=f"g{r}", deps=[0]), kit.comp(2, 7, deps=[1])]
                     for r in range(2)}, {"g0": [0], "g1": [1]})
    res = kit.run(ts, kit.system([("Ring", 2, 50, 500)]), tmp_path, congestion=congestion, symmetry=symmetry)
    assert [r["finish_ns"] for r in res.ranks] == [12_000, 12_000]


def test_congestion_aware_members_of_a_smaller_group_are_simulated_each(kit, tmp_path):
    """Groups of two on a 4 x 2 network of switches, each rank one 1 MiB reduce-scatter on its
    group (hand-built: no framework here writes chosen group layouts). Ranks 0 and 6 have equal
    traces and share a group, but send over different links, which the other pairs load
    differently: they were merged, and 6 and 7 were given 0's and 1's shorter time."""
    pairs = [[2, 3], [0, 6], [1, 7], [4, 5]]
    groups = {f"g{k}": p for k, p in enumerate(pairs)}
    per = {r: [kit.coll(1, 1 << 20, kit.CommType.REDUCE_SCATTER, pg=g)] for g, p in groups.items() for r in p}
    ts = kit.traces(per, groups)
    sysd = kit.system([("Switch", 4, 50, 100), ("Switch", 2, 1, 0)])
    on = kit.run(ts, sysd, tmp_path, congestion="aware")
    off = kit.run(ts, sysd, tmp_path, congestion="aware", symmetry=False)
    assert [r["simulated_as"] for r in on.ranks] == list(range(8))
    assert _rows(on) == _rows(off)
    finish = [r["finish_ns"] for r in off.ranks]
    assert finish[6] > finish[0] and finish[7] > finish[1]


@pytest.mark.parametrize("congestion", ["unaware", "aware"])
@pytest.mark.parametrize("memory", [{"memory-type": "MEMORY_POOL"},
                                    {"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-nodes": 1,
                                     "num-npus-per-node": 4}])
def test_ranks_split_off_for_a_shared_memory_are_served_in_rank_order(kit, tmp_path, congestion, memory):
    """Four ranks load 1 MiB from one shared memory at 0 ns, then compute 5 us (ranks 0, 2) or
    7 us (1, 3): served first come first served in rank order, rank r's load ends at
    (r + 1) x floor(2**20 / 50) ns, with or without symmetry (with it, the members split off
    their classes were served in class order, 0, 2, 1, 3)."""
    per = {r: [kit.mem(1, 1 << 20), kit.comp(2, 5 if r % 2 == 0 else 7, deps=[1])] for r in range(4)}
    sysd = kit.system([("Ring", 4, 50, 500)],
                      remote_memory={**memory, "remote-mem-latency": 0, "remote-mem-bw": 50})
    load = (1 << 20) // 50
    want = [(r + 1) * load + (5000 if r % 2 == 0 else 7000) for r in range(4)]
    for symmetry in (True, False):
        res = kit.run(kit.traces(per), sysd, tmp_path, congestion=congestion, symmetry=symmetry)
        assert [r["finish_ns"] for r in res.ranks] == want
