"""Closed runs timed by member 0 alone (:mod:`chakra_simpy.rotation_runs`) give the per-rank cycles
and event counts of running every event.

Random congestion-aware sets (seeded): 2 to 16 ranks on one Ring, FullyConnected or Switch
dimension (or two dimensions, where nothing rotates), latencies down to 0 and endpoint delays down to 1
(ties at one ns), 1 to 8 chunks with 1 to 4 active, every collective kind on the ring algorithm or
another one, whole-world or half-world groups, collectives in turn or two in flight, and compute
beside them.  Each set runs three ways: as shipped; with no run timed by member 0 (outcomes only
recorded event by event, the closed runs of before); and with no replay at all (every event run).
"""

from __future__ import annotations

import json
import random

import pytest

from chakra_core import CommType
from chakra_core.system import Dimension
from chakra_simpy import rotation_runs
from chakra_simpy.algorithms.base import RotatedParts, numbered
from chakra_simpy.algorithms.ring import Ring
from chakra_simpy.layouts import dim_layout, group_layout
from chakra_simpy.message_run import MessageRun

KINDS = [CommType.ALL_REDUCE, CommType.REDUCE_SCATTER, CommType.ALL_GATHER, CommType.ALL_TO_ALL]


def _set(kit, rng: random.Random):
    """A random set and its system: (traces, system mapping, options)."""
    two = rng.random() < 0.15
    topo = rng.choice(["Ring", "Ring", "FullyConnected", "Switch"])
    p = rng.choice([2, 3, 4, 5, 8, 16]) if not two else rng.choice([2, 4])
    dims = [(topo, p, rng.choice([25, 50, 200]), rng.choice([0, 1, 35, 500]))]
    if two:
        dims.append(("Ring", 2, 50, rng.choice([0, 500])))
    ranks = p * len(dims) if not two else p * 2
    impl = rng.choice(["ring", "ring", "ring", "direct"] + (["halvingDoubling"] if p & (p - 1) == 0 else []))
    keys = {"preferred-dataset-splits": rng.choice([1, 2, 4, 8]), "active-chunks-per-dimension": rng.choice([1, 2, 4]),
            "endpoint-delay": rng.choice([1, 1, 10, 1000])}
    for k in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
        keys[f"{k}-implementation"] = ["ring" if k == "all-to-all" and impl == "halvingDoubling" else impl] * len(dims)
    halves = ranks >= 4 and rng.random() < 0.3
    groups = {"lo": list(range(ranks // 2)), "hi": list(range(ranks // 2, ranks))} if halves else None
    count = rng.randint(2, 6)
    sizes = [rng.choice([1, 4096, 65_536, 1_000_000, 3 << 20]) for _ in range(count)]
    kinds = [rng.choice(KINDS) for _ in range(count)]
    overlap = rng.random() < 0.3
    compute = [rng.choice([0, 0, 3, 40]) for _ in range(count)]

    def nodes(r):
        out, last = [], None
        pg = None if groups is None else ("lo" if r < ranks // 2 else "hi")
        for i in range(count):
            dep = [] if last is None else [last]
            out.append(kit.coll(2 * i, sizes[i], ct=kinds[i], deps=dep if not overlap or i % 2 == 0 else [],
                                pg=pg))
            out.append(kit.comp(2 * i + 1, compute[i], deps=dep))
            last = 2 * i
        return out
    ts = kit.traces({r: nodes(r) for r in range(ranks)}, groups)
    return ts, kit.system(dims, **keys), {"streams": 2 if overlap else 1}


def _three_ways(kit, tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    ts, system, opts = _set(kit, rng)

    def run():
        res = kit.run(ts, system, tmp_path, congestion="aware", **opts)
        return [r["finish_ns"] for r in res.ranks], res.summary["events"], res.summary["simpy_events"]
    timed: list = []
    real = rotation_runs.rotated_outcome
    with monkeypatch.context() as m:
        m.setattr(rotation_runs, "rotated_outcome", lambda run: timed.append((real(run), len(run.pos))) or timed[-1][0])
        shipped = run()
    with monkeypatch.context() as m:
        m.setattr(MessageRun, "_rotated", lambda self: None)
        recorded = run()
        m.setattr(MessageRun, "check_due", lambda self, arg: None)
        every = run()
    return shipped, recorded, every, sum(got is not None and size > 2 for got, size in timed)


def test_runs_timed_by_member_0_give_the_cycles_and_counts_of_every_event(kit, tmp_path, monkeypatch):
    rotated = 0
    for seed in range(60):
        shipped, recorded, every, timed = _three_ways(kit, tmp_path, monkeypatch, seed)
        assert shipped == recorded == every, seed
        rotated += timed
    # most sets have runs of 3 members or more that are timed by member 0 (on 2, the member before
    # is the member after): the comparison is not vacuous
    assert rotated >= 40, rotated


def _with_timeline(kit, path, ts, system, opts):
    """Finish ns, events, SimPy events and the timeline's events of a run drawing one to ``path``."""
    res = kit.run(ts, system, path.parent, congestion="aware", timeline=str(path), **opts)
    events = json.loads(path.read_text())["traceEvents"]
    return [r["finish_ns"] for r in res.ranks], res.summary["events"], res.summary["simpy_events"], events


def test_with_a_timeline_runs_timed_by_member_0_draw_the_chunk_phases_of_every_event(kit, tmp_path, monkeypatch):
    # a timeline lets no run recorded event by event be replayed (it keeps no spans): one timed by
    # member 0 keeps the chunk phases its actor draws, and the timeline is that of every event
    rotated = phases = 0
    real = rotation_runs.rotated_outcome
    for seed in range(30):
        ts, system, opts = _set(kit, random.Random(seed))
        timed: list = []
        with monkeypatch.context() as m:
            m.setattr(rotation_runs, "rotated_outcome", lambda run, into=timed: into.append(real(run)) or into[-1])
            shipped = _with_timeline(kit, tmp_path / f"shipped{seed}.json", ts, system, opts)
        with monkeypatch.context() as m:
            m.setattr(MessageRun, "_rotated", lambda self: None)
            every = _with_timeline(kit, tmp_path / f"every{seed}.json", ts, system, opts)
        assert shipped == every, seed
        rotated += sum(got is not None and bool(got.spans) for got in timed)
        phases += sum(" chunk " in e.get("name", "") for e in every[3])
    assert rotated >= 20 and phases >= 300


def test_a_replay_whose_end_meets_another_phase_end_is_not_drawn_ahead_of_it(kit, tmp_path, monkeypatch):
    # group lo (ranks 0, 1): 40 one-byte reduce-scatters in turn, each timed by member 0 and
    # replayed; group hi (ranks 2, 3): one 256-byte reduce-scatter whose reduction (local-mem-bw
    # 1) lasts until one of lo's runs ends. Running every event draws hi's phase first at that
    # ns; a replay draws its phases at its check, so that run must run event by event instead
    def nodes(r):
        if r < 2:
            return [kit.coll(i, 1, ct=CommType.REDUCE_SCATTER, deps=[i - 1] if i else [], pg="lo") for i in range(40)]
        return [kit.coll(0, 256, ct=CommType.REDUCE_SCATTER, pg="hi")]
    ts = kit.traces({r: nodes(r) for r in range(4)}, {"lo": [0, 1], "hi": [2, 3]})
    system = kit.system([("FullyConnected", 4, 200, 1)], **{"endpoint-delay": 1, "preferred-dataset-splits": 1,
                                                           "local-mem-bw": 1})
    shipped = _with_timeline(kit, tmp_path / "shipped.json", ts, system, {})
    with monkeypatch.context() as m:
        m.setattr(MessageRun, "_rotated", lambda self: None)
        every = _with_timeline(kit, tmp_path / "every.json", ts, system, {})
    assert shipped == every
    assert sum(e.get("name", "").startswith("reduce_scatter") or " chunk " in e.get("name", "") for e in every[3]) > 40


@pytest.mark.parametrize("kind", ["AR", "RS", "AG", "A2A"])
def test_the_ring_parts_are_member_0s_rotated(kind):
    members = list(range(6))
    for lay in (group_layout(members, lambda a, b: (None, 1)), dim_layout((_dim(6),), 0, 6)):
        parts = Ring().messages(kind, 6_000, lay, 10, 50.0).choices[0]
        assert isinstance(parts, RotatedParts)
        for j in members:  # each member's part as the ring builds it for that member
            count = {"AR": 10, "RS": 5, "AG": 5, "A2A": 15}[kind]
            want = numbered(10, [(((j + 1) % 6,), ((j - 1) % 6,), 0, 0) for _s in range(count)])
            got = parts[j]
            assert got[0] == want[0] and [(to, frm) for to, frm, _m, _a in got[1]] == \
                [(to, frm) for to, frm, _m, _a in want[1]]
            assert [(m, a) for _t, _f, m, a in got[1]] == [(m, a) for _t, _f, m, a in parts[0][1]]


def test_two_dimensions_do_not_rotate():
    dims = (_dim(2), _dim(3))
    parts = Ring().messages("AR", 6_000, dim_layout(dims, 1, 6), 10, 50.0).choices[0]
    assert not isinstance(parts, RotatedParts) and len(parts) == 6


def _dim(p: int) -> Dimension:
    return Dimension("Ring", p, 50.0, 500.0)


def test_member_0_timed_in_turn_gives_the_outcome_of_running_its_events(kit, tmp_path, monkeypatch):
    """:meth:`rotation_runs._Member0.run_in_turn` (member 0's course as one chain, no event loop)
    against :meth:`run_alone` (every event of member 0) on the random sets above: each run timed
    by member 0 is timed both ways, the outcomes must be equal, and the chain must be taken often
    (it needs one active chunk) and refused sometimes (ties at one ns, several active chunks)."""
    taken = refused = 0
    real = rotation_runs.rotated_outcome

    def both(run):
        nonlocal taken, refused
        with monkeypatch.context() as m:
            m.setattr(rotation_runs._Member0, "run_in_turn", lambda self: False)
            alone = real(run)
        chained: list[bool] = []
        in_turn = rotation_runs._Member0.run_in_turn
        with monkeypatch.context() as m:
            m.setattr(rotation_runs._Member0, "run_in_turn", lambda self: chained.append(in_turn(self)) or chained[-1])
            got = real(run)
        assert got == alone
        taken += chained == [True]
        refused += chained == [False]
        return got
    for seed in range(80):
        ts, system, opts = _set(kit, random.Random(seed))
        with monkeypatch.context() as m:
            m.setattr(rotation_runs, "rotated_outcome", both)
            kit.run(ts, system, tmp_path, congestion="aware", **opts)
    assert taken >= 30 and refused >= 10, (taken, refused)
