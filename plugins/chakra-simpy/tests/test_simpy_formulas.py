"""Closed-form results of ASTRA-sim's analytical model, computed here from the spec's formulas.

Every expected value is written out from the formulas of spec/astra-sim.md (net, red, the
per-algorithm step counts, chunking, queues), independently of the implementation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

EX = Path(__file__).resolve().parents[3] / "examples" / "system"
MIB = 1 << 20
E = 10  # endpoint delay (ns)


def _one(kit, tmp_path, sysdesc, size, ct, n=8, **opts):
    ts = kit.same(n, lambda: [kit.coll(1, size, ct)])
    res = kit.run(ts, sysdesc, tmp_path, **opts)
    finishes = {r["finish_ns"] for r in res.ranks}
    assert len(finishes) == 1
    return finishes.pop(), res


def test_reference_value_117780(kit, tmp_path):
    for opts in ({"system": str(EX / "system.yaml")},
                 {"system": str(EX / "astra/system.json"), "network": str(EX / "astra/network.yml"),
                  "memory": str(EX / "astra/memory.json")}):
        res = kit.run(kit.same(8, lambda: [kit.coll(1, MIB)]), None, tmp_path, **opts)
        assert [r["finish_ns"] for r in res.ranks] == [117780] * 8
        assert [r["exposed_comm_ns"] for r in res.ranks] == [117780] * 8
    # the same number from the formulas: chunk 262144, m 32768
    m = (MIB // 4) // 8
    assert kit.net(m, 1, 500, 50) == 1110 and kit.red(m) == 1965
    assert 4 * (15 * E + 14 * 1110 + 7 * 1965) == 117780


def _ring_chunk(kit, kind, p, d, hops, lat, bw):
    if kind == "AR":
        m = d // p
        return (2 * p - 1) * E + 2 * (p - 1) * kit.net(m, hops, lat, bw) + (p - 1) * kit.red(m)
    if kind == "RS":
        m = d // p
        return p * E + (p - 1) * kit.net(m, hops, lat, bw) + (p - 1) * kit.red(m)
    if kind == "AG":
        return p * E + (p - 1) * kit.net(d, hops, lat, bw)
    m = d // p
    steps = p * (p - 1) // 2
    return (steps + 1) * E + steps * kit.net(m, hops, lat, bw)


def _direct_chunk(kit, kind, p, d, hops, lat, bw, ring=False):
    m = d if kind == "AG" else d // p
    if kind == "AR":
        # ASTRA-sim's AllToAll.cc: first-half messages to all peers at E; the k-th arrival is
        # reduced (E + red) into the packet for the peer k places on; none leaves before the last
        # arrival (then at the first ready time from it on); done E after the last arrival
        dist = [min(k, p - k) if ring else hops for k in range(1, p)]  # to the peer k places on
        arrivals = sorted(E + kit.net(m, h, lat, bw) for h in dist)
        ready = [t + E + kit.red(m) for t in arrivals]
        gate = min(t for t in ready if t >= arrivals[-1])
        return E + max(max(t, gate) + kit.net(m, h, lat, bw) for t, h in zip(ready, dist))
    return 2 * E + kit.net(m, hops, lat, bw) + (kit.red(m) if kind == "RS" else 0)


def _hd_chunk(kit, kind, p, d, hop_of, lat, bw):
    k = p.bit_length() - 1
    total, n_e = 0, k + 1
    if kind in ("AR", "RS"):
        s = d // 2
        for i in range(1, k + 1):
            total += kit.net(s, hop_of(2 ** (i - 1)), lat, bw) + (kit.red(s) if i >= 2 else 0)
            if i < k:
                s //= 2
        if kind == "AR":
            n_e = 2 * k + 1
            t = 2 * (s // 2)
            for j in range(1, k + 1):
                total += kit.net(t * 2 ** (j - 1), hop_of(p // 2 ** j), lat, bw)
    else:
        for i in range(1, k + 1):
            total += kit.net(d * 2 ** (i - 1), hop_of(p // 2 ** i), lat, bw)
    return n_e * E + total


KINDS = {"AR": "ALL_REDUCE", "RS": "REDUCE_SCATTER", "AG": "ALL_GATHER", "A2A": "ALL_TO_ALL"}
TOPOS = {"Ring": (1, 500, 50), "FullyConnected": (1, 300, 100), "Switch": (2, 700, 25)}


@pytest.mark.parametrize("topo", sorted(TOPOS))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_ring_every_kind_and_topology(kit, tmp_path, topo, kind):
    hops, lat, bw = TOPOS[topo]
    sysd = kit.system([(topo, 8, bw, lat)])
    got, res = _one(kit, tmp_path, sysd, MIB, getattr(kit.CommType, KINDS[kind]))
    chunk = MIB // 4  # 4 chunks; all-gather: the shard is split the same way
    assert got == 4 * _ring_chunk(kit, kind, 8, chunk, hops, lat, bw)
    assert res.summary["collectives"][0]["chunks"] == 4


@pytest.mark.parametrize("topo", sorted(TOPOS))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_direct_every_kind_and_topology(kit, tmp_path, topo, kind):
    hops, lat, bw = TOPOS[topo]
    far = 4 if topo == "Ring" else hops  # the farthest peer on an 8-ring is 4 hops away
    impl = {f"{k}_implementation": ["direct"] for k in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")}
    sysd = kit.system([(topo, 8, bw, lat)], **impl)
    got, _ = _one(kit, tmp_path, sysd, MIB, getattr(kit.CommType, KINDS[kind]))
    assert got == 4 * _direct_chunk(kit, kind, 8, MIB // 4, far, lat, bw, ring=topo == "Ring")


@pytest.mark.parametrize("topo", sorted(TOPOS))
@pytest.mark.parametrize("kind", ["AR", "RS", "AG"])
def test_halving_doubling_every_kind_and_topology(kit, tmp_path, topo, kind):
    hops, lat, bw = TOPOS[topo]

    def hop_of(dist):
        return min(dist, 8 - dist) if topo == "Ring" else hops

    impl = {f"{k}_implementation": ["halvingDoubling"] for k in ("all_reduce", "all_gather", "reduce_scatter")}
    sysd = kit.system([(topo, 8, bw, lat)], **impl)
    got, _ = _one(kit, tmp_path, sysd, MIB, getattr(kit.CommType, KINDS[kind]))
    assert got == 4 * _hd_chunk(kit, kind, 8, MIB // 4, hop_of, lat, bw)


def test_active_chunks_run_side_by_side(kit, tmp_path):
    sysd = kit.system([("Ring", 8, 50, 500)], active_chunks_per_dimension=2)
    got, _ = _one(kit, tmp_path, sysd, MIB, kit.CommType.ALL_REDUCE)
    assert got == 2 * 29445  # ceil(4 / 2) chunks in turn


def test_chunking_raises_small_chunks_and_keeps_the_remainder_full(kit, tmp_path):
    sysd = kit.system([("Ring", 8, 50, 500)])
    got, _ = _one(kit, tmp_path, sysd, 16, kit.CommType.ALL_REDUCE)
    # 16 // 4 = 4 < 8 NPUs: chunk raised to 8 bytes, 4 chunks, m = 1
    assert got == 4 * (15 * E + 14 * kit.net(1, 1, 500, 50) + 7 * kit.red(1))
    got, res = _one(kit, tmp_path, sysd, 1_000_003, kit.CommType.ALL_REDUCE)
    assert res.summary["collectives"][0]["chunks"] == 5  # 4 x 250000 + a remainder chunk of full size
    assert got == 5 * _ring_chunk(kit, "AR", 8, 250_000, 1, 500, 50)


def _two_dims(kit, **keys):
    return kit.system([("Ring", 4, 50, 500), ("Switch", 2, 25, 1000)], **keys)


def test_two_dims_baseline_all_reduce_pipelines_chunks(kit, tmp_path):
    got, res = _one(kit, tmp_path, _two_dims(kit), MIB, kit.CommType.ALL_REDUCE)
    d = MIB // 4
    t0 = _ring_chunk(kit, "AR", 4, d, 1, 500, 50)
    t1 = _ring_chunk(kit, "AR", 2, d, 2, 1000, 25)
    f0, f1 = 0, 0
    for _ in range(4):  # flow shop: dim 0 then dim 1, one chunk at a time on each
        f0 += t0
        f1 = max(f0, f1) + t1
    assert got == f1
    assert res.summary["collectives"][0]["phases"] == ["all-reduce on dim 0 (ring)", "all-reduce on dim 1 (ring)"]


def test_two_dims_local_bw_aware_all_reduce(kit, tmp_path):
    got, _ = _one(kit, tmp_path, _two_dims(kit, collective_optimization="localBWAware"), MIB,
                  kit.CommType.ALL_REDUCE)
    d = MIB // 4
    t_rs = _ring_chunk(kit, "RS", 4, d, 1, 500, 50)
    t_ar = _ring_chunk(kit, "AR", 2, d // 4, 2, 1000, 25)
    t_ag = _ring_chunk(kit, "AG", 4, d // 4, 1, 500, 50)
    ar_end, dim0_free, ends = 0, 4 * t_rs, []
    for k in range(4):  # the dim-0 queue runs every reduce-scatter first (they were queued first)
        ar_end = max((k + 1) * t_rs, ar_end) + t_ar
        ends.append(ar_end)
    for k in range(4):
        dim0_free = max(ends[k], dim0_free) + t_ag
    assert got == dim0_free


def test_two_dims_reduce_scatter_ascends_and_all_gather_descends(kit, tmp_path):
    d = MIB // 4
    got, _ = _one(kit, tmp_path, _two_dims(kit), MIB, kit.CommType.REDUCE_SCATTER)
    a, b = _ring_chunk(kit, "RS", 4, d, 1, 500, 50), _ring_chunk(kit, "RS", 2, d // 4, 2, 1000, 25)
    f0 = f1 = 0
    for _ in range(4):
        f0 += a
        f1 = max(f0, f1) + b
    assert got == f1
    got, _ = _one(kit, tmp_path, _two_dims(kit), MIB, kit.CommType.ALL_GATHER)
    a, b = _ring_chunk(kit, "AG", 2, d, 2, 1000, 25), _ring_chunk(kit, "AG", 4, 2 * d, 1, 500, 50)
    f0 = f1 = 0
    for _ in range(4):
        f0 += a
        f1 = max(f0, f1) + b
    assert got == f1


def test_involved_dim_restricts_the_collective(kit, tmp_path):
    ts = kit.same(8, lambda: [kit.coll(1, MIB, involved=[True, False])])
    res = kit.run(ts, _two_dims(kit), tmp_path)
    assert res.ranks[0]["finish_ns"] == 4 * _ring_chunk(kit, "AR", 4, MIB // 4, 1, 500, 50)


def test_sub_group_runs_one_ring_over_its_members(kit, tmp_path):
    # group "1" = ranks 0..3 of an 8-ring: steps of 1 hop, and the wrap-around 3 -> 0 of 3 hops;
    # group rings use an endpoint delay of 10 ns whatever endpoint-delay says
    sysd = kit.system([("Ring", 8, 50, 500)], endpoint_delay=50, preferred_dataset_splits=1)
    ts = kit.traces([[kit.coll(1, MIB, pg="1" if r < 4 else "2")] for r in range(8)],
                    {"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]})
    res = kit.run(ts, sysd, tmp_path)
    m = MIB // 4
    n1, n3 = kit.net(m, 1, 500, 50), kit.net(m, 3, 500, 50)
    # 6 steps: member j receives 6 messages over the links into j, j-1, ..., j-5 (walking the
    # ring backwards), so members 0 and 1 take the wrap-around twice, members 2 and 3 once
    base = 7 * 10 + 3 * kit.red(m)
    slow, fast = base + 2 * n3 + 4 * n1, base + n3 + 5 * n1
    assert [r["finish_ns"] for r in res.ranks] == [slow, slow, fast, fast] * 2
    # uneven rings: the members of a group are simulated apart, and group 2's members by those
    # of group 1 at the same places (the same ring 4 ranks on)
    assert [r["simulated_as"] for r in res.ranks] == [0, 1, 2, 3] * 2
    # group 2's row is group 1's in its place (the summary lists every group, as without symmetry)
    one, two = res.summary["collectives"]
    assert (one["group"], two["group"]) == ("1", "2") and {**one, "group": "2"} == two
    # the same with one chunk per member in lockstep: the uneven ring needs no barrier either
    assert any("timed per rank" in n for n in res.notes)


def test_one_variants_run_one_ring_over_every_npu(kit, tmp_path):
    # 4-NPU Ring x 2-NPU Switch; a one* algorithm sees one logical ring of 8 NPUs in rank order,
    # each message charged on the lowest dimension where the two ranks differ
    d = MIB // 4

    def one(impl, kind):
        keys = {f"{k}_implementation": [impl, impl] for k in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")}
        return _one(kit, tmp_path, _two_dims(kit, **keys), MIB, getattr(kit.CommType, KINDS[kind]))[0]

    # oneRing: neighbours differ in dimension 0, one hop there
    assert one("oneRing", "AR") == 4 * _ring_chunk(kit, "AR", 8, d, 1, 500, 50)
    # oneDirect: the farthest peer costs most on the Switch (2 hops, 1000 ns, 25 GB/s)
    assert one("oneDirect", "RS") == 4 * (2 * E + kit.net(d // 8, 2, 1000, 25) + kit.red(d // 8))
    # oneHalvingDoubling: peers 1 and 2 away differ in dimension 0 (1 and 2 hops), 4 away in dimension 1

    def hop(dist):
        return {1: (1, 500, 50), 2: (2, 500, 50), 4: (2, 1000, 25)}[dist]

    s1, s2, s3 = d // 2, d // 4, d // 8
    expect = 4 * E + sum(kit.net(m, *hop(x)) for m, x in ((s1, 1), (s2, 2), (s3, 4))) + kit.red(s2) + kit.red(s3)
    assert one("oneHalvingDoubling", "RS") == 4 * expect


def test_three_dims_local_bw_aware_queue_is_first_come_first_served(kit, tmp_path):
    # a slow dimension 0 under two fast ones: chunk 0 comes back to dimension 1 (its all-gather)
    # before chunk 3 got there for its reduce-scatter; the queue serves it first (first come,
    # first served), and a member starting 1 ns late (timed per member) must agree
    dims = [("Ring", 2, 5, 500), ("Ring", 2, 200, 100), ("Ring", 2, 200, 100)]
    sysd = kit.system(dims, collective_optimization="localBWAware")
    d = MIB // 4
    rs0 = _ring_chunk(kit, "RS", 2, d, 1, 500, 5)  # 32797
    rs1 = _ring_chunk(kit, "RS", 2, d // 2, 1, 100, 200)
    ar2 = _ring_chunk(kit, "AR", 2, d // 4, 1, 100, 200)
    ag1 = _ring_chunk(kit, "AG", 2, d // 4, 1, 100, 200)
    ag0 = _ring_chunk(kit, "AG", 2, d // 2, 1, 500, 5)
    assert (rs0, rs1, ar2, ag1, ag0) == (32797, 4355, 2499, 425, 24934)
    # chunk 0 is back on dimension 1 (39651 ns) before chunk 3 reaches it (131188 ns): its
    # all-gather there runs at once; dimension 0 runs the 4 reduce-scatters, then each chunk's
    # all-gather, every chunk being back from dimension 1 before its turn
    assert rs0 + rs1 + ar2 < 4 * rs0
    back = [(k + 1) * rs0 + rs1 + ar2 + ag1 for k in range(4)]
    assert all(back[k] <= 4 * rs0 + k * ag0 for k in range(4))
    expect = 4 * rs0 + 4 * ag0
    assert expect == 230924
    got, _ = _one(kit, tmp_path, sysd, MIB, kit.CommType.ALL_REDUCE)
    assert got == expect
    late = kit.traces([[kit.comp(1, 0), kit.coll(2, MIB, deps=[1])] if r == 0 else [kit.coll(2, MIB)]
                       for r in range(8)])
    res = kit.run(late, sysd, tmp_path)
    assert [r["finish_ns"] for r in res.ranks] == [expect + 1] + [expect] * 7
    assert any("timed per rank" in n for n in res.notes)


def test_equal_steps_add_up_their_floored_times():
    from chakra_core.system import Dimension
    from chakra_simpy.formulas import chain_cost, same_steps_cost

    dim = Dimension("Ring", 4, 1.0, 0.5)  # 1 GB/s: 2**30 / 1e9 bytes per ns
    # one message of 20 bytes over 2 links: floor(2 * 0.5 + 20 / 1.073741824) = floor(19.63) = 19 ns,
    # so three of them take 57 ns (not the 58 ns of the unfloored sum), with 4 endpoint delays of 10 ns
    assert same_steps_cost(10, 3, 20, dim, 2, 7).fixed == 4 * 10 + 3 * 19 + 7
    assert chain_cost(10, 4, [(20, dim, 2)] * 3, 7).fixed == 4 * 10 + 3 * 19 + 7
