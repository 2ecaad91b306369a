"""Direct collectives on a Ring and a Switch against ASTRA-sim's analytical binary.

The expected cycles are the per-rank ``sys[i] finished`` values printed by ASTRA-sim's analytical
binaries (congestion-unaware, and congestion-aware for ``AWARE``) built on 2026-12-01 from the public astra-sim sources (no released binary can be
fetched here; see docs/simulator.md, *Checked against a locally built binary*).  Its direct
algorithm (``AllToAll.cc`` over ``Ring.cc``, ``PacketBundle.cc``, the analytical network's
``sim_send``/``sim_recv``) is the upstream code unchanged.  Each case is the trace below exported
by our exporter and run by that binary: rank r computes ``durs[r]`` us, then issues one collective
of 1 MiB; every algorithm is ``direct``.
"""

from __future__ import annotations

import pytest

MIB = 1 << 20

#: (topology, durs, system keys, collective, the binary's cycles per rank)
CASES = [
    ("Ring", [0] * 8, {}, "ALL_REDUCE", [15776] * 8),
    ("Ring", [0] * 4, {}, "ALL_REDUCE", [27021] * 4),
    ("Ring", [0] * 16, {"local_mem_bw": 1600}, "ALL_REDUCE", [10591] * 16),
    ("Ring", [0] * 8, {"latency": 1000, "local_mem_bw": 400}, "ALL_REDUCE", [13894] * 8),
    ("Ring", [0] * 8, {"preferred_dataset_splits": 2, "active_chunks_per_dimension": 2}, "ALL_REDUCE", [9401] * 8),
    ("Switch", [0] * 8, {}, "ALL_REDUCE", [14776] * 8),
    # staggered starts: no barrier, so members finish apart
    ("Ring", [5, 0, 3, 0, 9, 1, 0, 2], {}, "ALL_REDUCE", [21334, 20834, 20334, 19844, 19726, 19834, 20334, 20834]),
    ("Switch", [5, 0, 3, 0, 9, 1, 0, 2], {}, "ALL_REDUCE", [20334, 20334, 20334, 20334, 20226, 20334, 20334, 20334]),
    ("Ring", [0, 2, 1, 7], {}, "ALL_REDUCE", [33412, 31913, 29020, 33520]),
    ("Ring", [2, 0, 1, 0, 3, 0], {"preferred_dataset_splits": 4, "active_chunks_per_dimension": 2}, "ALL_REDUCE",
     [14550, 15050, 14550, 15050, 14550, 15050]),
    ("Ring", [5, 0, 3, 0, 9, 1, 0, 2], {}, "REDUCE_SCATTER", [21324, 20824, 20324, 19824, 17324, 19824, 20324, 20824]),
    ("Ring", [5, 0, 3, 0, 9, 1, 0, 2], {}, "ALL_GATHER", [30551, 30051, 29551, 29051, 26551, 29051, 29551, 30051]),
]


@pytest.mark.parametrize("topo,durs,keys,kind,cycles", CASES)
def test_direct_collectives_match_the_astrasim_binary(kit, tmp_path, topo, durs, keys, kind, cycles):
    ct = getattr(kit.CommType, kind)
    ts = kit.traces([[kit.comp(1, d), kit.coll(2, MIB, ct, deps=[1])] for d in durs])
    keys = {"preferred_dataset_splits": 1, **keys}
    latency = keys.pop("latency", 500)
    impl = {f"{k}_implementation": ["direct"] for k in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")}
    sysd = kit.system([(topo, len(durs), 50, latency)], **impl, **keys)
    res = kit.run(ts, sysd, tmp_path)
    assert [r["finish_ns"] for r in res.ranks] == cycles


#: congestion-aware: (topology, durs, system keys, the aware binary's cycles per rank), all-reduce
AWARE = [
    ("Ring", [0] * 8, {}, [53332] * 8),
    ("Switch", [0] * 4, {}, [47049] * 4),
    ("Ring", [0] * 8, {"preferred_dataset_splits": 4}, [57901] * 8),
    ("Ring", [5, 0, 3, 0, 9, 1, 0, 2], {}, [64096, 62155, 57831, 58331, 56390, 56331, 58214, 63596]),
    ("Switch", [5, 0, 3, 0, 9, 1, 0, 2], {}, [50949, 50949, 50949, 48950, 50949, 50949, 50949, 50949]),
]


@pytest.mark.parametrize("topo,durs,keys,cycles", AWARE)
def test_direct_all_reduce_on_shared_links_matches_the_aware_binary(kit, tmp_path, topo, durs, keys, cycles):
    ts = kit.traces([[kit.comp(1, d), kit.coll(2, MIB, deps=[1])] for d in durs])
    impl = {f"{k}_implementation": ["direct"] for k in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")}
    sysd = kit.system([(topo, len(durs), 50, 500)], **impl, **{"preferred_dataset_splits": 1, **keys})
    res = kit.run(ts, sysd, tmp_path, congestion="aware")
    assert [r["finish_ns"] for r in res.ranks] == cycles
