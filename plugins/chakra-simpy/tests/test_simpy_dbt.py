"""doubleBinaryTree all-reduce: results written out from the formulas of docs/simulator.md.

Every expected value comes from the documented closed form, computed here independently of the
implementation: the depth of an offset in the max tree (root P-1, in-order numbering of a
complete tree over 0..P-2) is 0 for P-1 and k - tz(o+1) otherwise (tz: trailing zero bits); in
the min tree (the max tree shifted by one) 0 for offset 0 and k - tz(o) otherwise.  With equal
starts a member at depth i finishes at F_i; a chunk phase started where the previous tree phase
of the same dimension left the members (the next chunk, or the next all-reduce) finishes
F_{k-1} later than a fresh start would.
"""

from __future__ import annotations

import pytest

MIB = 1 << 20
E = 10
TOPOS = {"Ring": (500, 50), "FullyConnected": (300, 100), "Switch": (700, 25)}


def _tz(x):
    return (x & -x).bit_length() - 1


def depth(o, p, root_max=True):
    """Depth of offset ``o`` in the max (or min) tree of ``p`` NPUs."""
    k = p.bit_length() - 1
    if root_max:
        return 0 if o == p - 1 else k - _tz(o + 1)
    return 0 if o == 0 else k - _tz(o)


def hops(topo, p, dist):
    return {"Ring": min(dist, p - dist), "FullyConnected": 1, "Switch": 2}[topo]


def finish_by_depth(kit, topo, p, d, e=E):
    """[F_0, ..., F_k] of one chunk phase of ``d`` bytes with equal starts."""
    lat, bw = TOPOS[topo]
    k = p.bit_length() - 1
    n = [kit.net(d, hops(topo, p, p >> i), lat, bw) for i in range(1, k + 1)]  # n[i-1]: edge into depth i
    r, s = kit.red(d), sum(n)
    f0 = (k + 1) * e + k * r + s
    out = [f0] + [f0 + sum(n[:i]) + i * (e + r) for i in range(1, k)]
    return out + [f0 + s + (k - 1) * (e + r) + e]


def dbt(kit, dims, **keys):
    impl = keys.pop("impl", None) or ["doubleBinaryTree"] * len(dims)
    return kit.system([(t, p, TOPOS[t][1], TOPOS[t][0]) for t, p in dims], all_reduce_implementation=impl, **keys)


def finishes(kit, tmp_path, sysd, n, size, **opts):
    res = kit.run(kit.same(n, lambda: [kit.coll(1, size)]), sysd, tmp_path, **opts)
    return [r["finish_ns"] for r in res.ranks], res


def test_trees_as_documented():
    from chakra_simpy.algorithms.double_binary_tree import depths, tree

    assert tree(8, True) == [1, 3, 1, 7, 5, 3, 5, -1]  # root 7 -> 3 -> {1, 5} -> {0, 2}, {4, 6}
    assert tree(8, False) == [-1, 2, 4, 2, 0, 6, 4, 6]  # root 0 -> 4 -> {2, 6} -> {1, 3}, {5, 7}
    assert tree(2, True) == [1, -1] and tree(2, False) == [-1, 0]
    for p in (2, 4, 8, 16, 32):
        for root_max in (True, False):
            par = tree(p, root_max)
            assert depths(par) == [depth(o, p, root_max) for o in range(p)]
            # the edge into depth i spans p / 2^i offsets
            assert all(abs(q - o) == p >> depth(o, p, root_max) for o, q in enumerate(par) if q >= 0)


@pytest.mark.parametrize("topo", sorted(TOPOS))
@pytest.mark.parametrize("p", [2, 4, 8, 16])
def test_one_chunk_every_topology(kit, tmp_path, topo, p):
    for size in (3 * 4096 + 7, MIB):
        got, res = finishes(kit, tmp_path, dbt(kit, [(topo, p)], preferred_dataset_splits=1), p, size)
        f = finish_by_depth(kit, topo, p, size)
        assert got == [f[depth(o, p)] for o in range(p)]
        assert res.summary["symmetry"]["enabled"] is False
        assert any("doubleBinaryTree" in n for n in res.notes)
    # the slowest member in numbers: P = 8 on the 50 GB/s, 500 ns ring, 1 MiB
    if (topo, p) == ("Ring", 8):
        n1, n2, n3 = (kit.net(MIB, h, 500, 50) for h in (4, 2, 1))
        assert (n1, n2, n3, kit.red(MIB)) == (21531, 20531, 20031, 62913)
        assert max(got) == 7 * E + 5 * 62913 + 2 * (n1 + n2 + n3) == 438821
        assert got == [438821, 418780, 438821, 335326, 438821, 418780, 438821, 250872]


@pytest.mark.parametrize("topo", ["Ring", "Switch"])
@pytest.mark.parametrize("p,splits", [(4, 2), (8, 3), (8, 4), (16, 5)])
def test_chunks_pipeline_and_alternate_trees(kit, tmp_path, topo, p, splits):
    got, res = finishes(kit, tmp_path, dbt(kit, [(topo, p)], preferred_dataset_splits=splits), p, MIB)
    chunk = MIB // splits
    c = -(-MIB // chunk)
    assert res.summary["collectives"][0]["chunks"] == c
    f = finish_by_depth(kit, topo, p, chunk)
    k = p.bit_length() - 1
    last_max = (c - 1) % 2 == 0  # chunk c-1 takes the max tree when c-1 is even
    assert got == [(c - 1) * f[k - 1] + f[depth(o, p, last_max)] for o in range(p)]


def test_active_chunks_run_both_trees_at_once(kit, tmp_path):
    sysd = dbt(kit, [("FullyConnected", 8)], preferred_dataset_splits=2, active_chunks_per_dimension=2)
    got, _ = finishes(kit, tmp_path, sysd, 8, MIB)
    # both chunks start at 0; every rank is a leaf of one of the two trees
    assert got == [finish_by_depth(kit, "FullyConnected", 8, MIB // 2)[3]] * 8


def test_consecutive_all_reduces_take_the_other_tree(kit, tmp_path):
    sysd = dbt(kit, [("Ring", 8)], preferred_dataset_splits=1)
    ts = kit.same(8, lambda: [kit.coll(1, MIB), kit.coll(2, MIB, deps=[1])])
    res = kit.run(ts, sysd, tmp_path)
    f = finish_by_depth(kit, "Ring", 8, MIB)
    assert [r["finish_ns"] for r in res.ranks] == [f[2] + f[depth(o, 8, False)] for o in range(8)]


def test_two_dims_baseline(kit, tmp_path):
    # a slow ring all-reduce on dim 0 (2 NPUs), a tree on dim 1 (4 NPUs): rank r = (r % 2, r // 2)
    slow = ("Ring", 2, 1, 5000)
    for splits in (1, 3):
        sysd = kit.system([slow, ("Switch", 4, 25, 700)], all_reduce_implementation=["ring", "doubleBinaryTree"],
                          preferred_dataset_splits=splits)
        got, _ = finishes(kit, tmp_path, sysd, 8, MIB)
        chunk = MIB // splits
        c = -(-MIB // chunk)
        t_ring = 3 * E + 2 * kit.net(chunk // 2, 1, 5000, 1) + kit.red(chunk // 2)
        f = finish_by_depth(kit, "Switch", 4, chunk)
        assert t_ring >= f[-1]  # each chunk's tree phase starts afresh when its ring phase ends
        assert got == [c * t_ring + f[depth(r // 2, 4, (c - 1) % 2 == 0)] for r in range(8)]
    # the tree first, then the ring (its two members share the tree depth, so start together)
    sysd = kit.system([("Switch", 4, 25, 700), slow], all_reduce_implementation=["doubleBinaryTree", "ring"],
                      preferred_dataset_splits=1)
    got, _ = finishes(kit, tmp_path, sysd, 8, MIB)
    t_ring = 3 * E + 2 * kit.net(MIB // 2, 1, 5000, 1) + kit.red(MIB // 2)
    f = finish_by_depth(kit, "Switch", 4, MIB)
    assert got == [f[depth(r % 4, 4)] + t_ring for r in range(8)]


def test_local_bw_aware_visits_the_tree_dimension_twice_with_full_data(kit, tmp_path):
    sysd = kit.system([("FullyConnected", 4, 100, 300), ("Ring", 2, 50, 500)],
                      all_reduce_implementation=["doubleBinaryTree", "ring"], preferred_dataset_splits=1,
                      collective_optimization="localBWAware")
    got, res = finishes(kit, tmp_path, sysd, 8, MIB)
    # tree all-reduce (max tree) of the whole chunk, ring all-reduce of the whole chunk on dim 1,
    # tree all-reduce again (min tree), started where the first one left each member
    f = finish_by_depth(kit, "FullyConnected", 4, MIB)
    t_ring = 3 * E + 2 * kit.net(MIB // 2, 1, 500, 50) + kit.red(MIB // 2)
    assert got == [t_ring + f[1] + f[depth(r % 4, 4, False)] for r in range(8)]
    assert res.summary["collectives"][0]["phases"] == [
        "all-reduce on dim 0 (doubleBinaryTree, in place of reduce-scatter)", "all-reduce on dim 1 (ring)",
        "all-reduce on dim 0 (doubleBinaryTree, in place of all-gather)"]


def test_late_members(kit, tmp_path):
    # P = 2, max tree: rank 0 is the leaf, rank 1 the root; X ns of compute before the all-reduce
    sysd = dbt(kit, [("Ring", 2)], preferred_dataset_splits=1)
    n, r, x = kit.net(MIB, 1, 500, 50), kit.red(MIB), 1_000_000
    for late in (0, 1):
        ts = kit.traces([[kit.comp(1, x // 1000), kit.coll(2, MIB, deps=[1])] if rank == late
                         else [kit.coll(2, MIB)] for rank in range(2)])
        got = [row["finish_ns"] for row in kit.run(ts, sysd, tmp_path).ranks]
        if late == 0:  # the leaf sends late: everything shifts by X
            assert got == [x + 3 * E + r + 2 * n, x + 2 * E + r + n]
        else:  # the root posts its receive late: the leaf's message is already there
            assert got == [x + E + r + n + E, x + E + r]


def test_too_large_for_per_rank_timing_is_the_slowest_member_in_lockstep(kit, tmp_path):
    sysd = dbt(kit, [("Ring", 8)], preferred_dataset_splits=2)
    got, res = finishes(kit, tmp_path, sysd, 8, MIB, stagger_limit=10)
    assert got == [2 * finish_by_depth(kit, "Ring", 8, MIB // 2)[3]] * 8
    assert any("too large for stagger_limit" in n for n in res.notes)


def test_deterministic(kit, tmp_path):
    sysd = dbt(kit, [("Ring", 4), ("Switch", 4)], preferred_dataset_splits=3, active_chunks_per_dimension=2)
    ts = kit.same(16, lambda: [kit.coll(1, MIB), kit.comp(2, 5, deps=[1]), kit.coll(3, 12345, deps=[2])])
    a = kit.run(ts, sysd, tmp_path)
    b = kit.run(ts, sysd, tmp_path)
    assert a.ranks == b.ranks
    assert len({r["finish_ns"] for r in a.ranks}) > 1
    drop = ("wall_s", "events_per_s")
    assert {k: v for k, v in a.summary.items() if k not in drop} == {k: v for k, v in b.summary.items() if k not in drop}


def test_refused_where_astra_sim_crashes(kit, tmp_path):
    from chakra_core import ConfigError

    sysd = kit.system([("Ring", 4, 50, 500), ("Ring", 2, 50, 500)], all_reduce_implementation=["doubleBinaryTree"])
    with pytest.raises(ConfigError, match="shorter than the network"):
        kit.run(kit.same(8, lambda: [kit.coll(1, MIB)]), sysd, tmp_path)
    sysd = kit.system([("Ring", 12, 50, 500)], all_reduce_implementation=["doubleBinaryTree"])
    with pytest.raises(ConfigError, match="power-of-two"):
        kit.run(kit.same(12, lambda: [kit.coll(1, MIB)]), sysd, tmp_path)


def test_congestion_aware_trees_on_fully_connected_are_the_closed_form(kit, tmp_path):
    """Message by message on FullyConnected every tree edge has a link of its own each way and
    one link per message, floor(L + d/b) = net(d): each member's closed-form time."""
    sysd = dbt(kit, [("FullyConnected", 8)], preferred_dataset_splits=1)
    got, res = finishes(kit, tmp_path, sysd, 8, MIB, congestion="aware")
    f = finish_by_depth(kit, "FullyConnected", 8, MIB)
    assert got == [f[depth(o, 8)] for o in range(8)]
    assert any("1 collective(s) ran message by message" in n for n in res.notes)
