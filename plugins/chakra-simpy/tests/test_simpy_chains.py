"""Compute chains run as one event give the times of running every node as its own event.

The reference is the same engine with no chains (``program._chain_next`` patched to link
nothing), on seeded random traces built to stress the chain rule: chains on the accelerator and
on the CPU, nodes of smaller ids becoming ready on the chain's resource while it runs (released
by collectives, receives and CPU ops in flight), equal durations (ties), several streams, and
ids permuted so that chains do not follow ascending ids.
Per-rank numbers must be equal.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from chakra_simpy import program


def _random_rank(rng: random.Random, rank: int, nranks: int, n: int, kit):
    """``n`` nodes: mostly a chain, some extra deps; every 25th a collective (the same on every
    rank, each after the previous one), every 40th a send to the next rank, 20 later the receive from the previous one."""
    nodes = []
    for i in range(1, n + 1):
        deps = [i - 1] if i > 1 and rng.random() < 0.8 else []
        if i > 3 and rng.random() < 0.3:
            deps.append(rng.randrange(1, i - 1))
        if i % 25 == 0:
            nodes.append(kit.coll(i, 4096 * (i // 25), deps=deps, ctrl=[i - 25] if i > 25 else []))
        elif i % 40 == 0:
            nodes.append(kit.p2p(i, True, (rank + 1) % nranks, 1000, tag=i, deps=deps))
        elif i % 40 == 20 and i > 20 and (i - 20) % 25:
            nodes.append(kit.p2p(i, False, (rank - 1) % nranks, 1000, tag=i - 20, deps=deps))
        else:
            nodes.append(kit.comp(i, rng.choice([0, 1, 1, 2, 5]), deps=deps, cpu=rng.random() < 0.2))
    return nodes


def _run(kit, tmp_path, ts, sysd, **opts):
    res = kit.run(ts, sysd, tmp_path, **opts)
    return res.ranks, res.summary["critical_path"], res.summary["simpy_events"]


def _relabelled(nodes, rng: random.Random):
    """The nodes with their ids (and dependencies) permuted at random: chains no longer follow
    ascending ids."""
    new = list(range(1, len(nodes) + 1))
    rng.shuffle(new)
    at = {n.id: k for n, k in zip(nodes, new)}
    for n in nodes:
        n.id = at[n.id]
        deps, ctrl = [at[d] for d in n.data_deps], [at[d] for d in n.ctrl_deps]
        del n.data_deps[:], n.ctrl_deps[:]
        n.data_deps.extend(deps)
        n.ctrl_deps.extend(ctrl)
    return nodes


@pytest.mark.parametrize("seed, shuffled", [(s, s >= 6) for s in range(9)])
def test_chains_give_the_same_times(kit, tmp_path, monkeypatch, seed, shuffled):
    rng = random.Random(seed)
    nranks = 4
    per = {r: _random_rank(random.Random(seed * 100 + r), r, nranks, 220, kit) for r in range(nranks)}
    if shuffled:
        per = {r: _relabelled(nodes, random.Random(seed * 7 + r)) for r, nodes in per.items()}
    ts = kit.traces(per)
    sysd = kit.system([("Ring", nranks, 50, 500)])
    streams = rng.choice([1, 2])
    got = _run(kit, tmp_path, ts, sysd, streams=streams, symmetry=False)
    monkeypatch.setattr(program, "_chain_next", lambda kinds, *a: np.full(len(kinds), -1, dtype=np.int64))
    ref = _run(kit, tmp_path, ts, sysd, streams=streams, symmetry=False)
    assert got[0] == ref[0]
    # a chain's end is scheduled when the chain starts: among events of the same instant its
    # order can differ, which may pick another of several equally long critical paths
    assert got[1]["ns_by_kind"] == ref[1]["ns_by_kind"] or sum(got[1]["ns_by_kind"].values()) == sum(
        ref[1]["ns_by_kind"].values())
    assert got[2] < ref[2]  # fewer SimPy events


def test_a_long_chain_is_one_event(kit, tmp_path):
    ts = kit.same(2, lambda: [kit.comp(i, 3, deps=[i - 1] if i > 1 else []) for i in range(1, 1001)])
    res = kit.run(ts, kit.system([("Ring", 2, 50, 500)]), tmp_path, timeline=str(tmp_path / "t.json"))
    assert res.ranks[0]["finish_ns"] == 3000 * 1000 and res.ranks[0]["compute_ns"] == 3000 * 1000
    assert res.summary["simpy_events"] == 1 and res.summary["events"] == 1000
    import json

    spans = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e["ph"] == "X"]
    pid = spans[0]["pid"]
    assert sorted((e["ts"], e["dur"]) for e in spans if e["pid"] == pid) == [(3.0 * k, 3.0) for k in range(1000)]


def test_a_chain_ending_past_int64_is_an_error(kit, tmp_path):
    """Three 10**12 ns nodes from 2**63 - 2 * 10**12 ns on: the chain's end passes 2**63-1 ns."""
    from chakra_core import ChakraError

    ts = kit.same(2, lambda: [kit.comp(i, 10 ** 9, deps=[i - 1] if i > 1 else []) for i in range(1, 4)])
    with pytest.raises(ChakraError, match=r"simulated time passes 2\*\*63-1 ns"):
        kit.run(ts, kit.system([("Ring", 2, 50, 500)]), tmp_path, start_ns=[(1 << 63) - 2 * 10 ** 12] * 2)


@pytest.mark.parametrize("kind, topo, p, dims", [("AR", "Ring", 32, 1), ("RS", "Switch", 64, 1),
                                                  ("AG", "FullyConnected", 16, 1), ("AR", "Ring", 16, 2)])
def test_ring_phase_closed_form_equals_the_step_by_step_chain(kind, topo, p, dims):
    """A staggered ring phase on many members is timed in closed form (max over how far back
    each member's wait reaches); it equals walking the steps one by one."""
    from chakra_core.system import Dimension
    from chakra_simpy.chunk_phases import build_phase
    from chakra_simpy.layouts import dim_layout
    from chakra_simpy.member_timing import chain

    dimensions = tuple(Dimension(topo, p, 50, 500) for _ in range(dims))
    total = p ** dims
    rng = random.Random(p)
    for d in range(dims):
        ph = build_phase(kind, 1 << 20, "ring", dim_layout(dimensions, d, total), d, 10, 50.0, False)
        assert ph.rings is not None
        start = [rng.choice([0, 7, 1000, 123456]) + rng.randrange(50) for _ in range(total)]
        fast = chain(start, ph)
        ph.rings = None
        assert fast == chain(start, ph)
