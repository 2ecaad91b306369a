"""Closed runs (:mod:`chakra_simpy.closed_runs`): collectives replayed from the outcome of one run
event by event give the per-rank cycles and event counts of running every one event by event.

The examples are the bundled text workloads on examples/system/system.yaml (a Ring of 8, 50
GB/s, 500 ns): on the GPT-3-like one every collective runs alone on the links; on the
ResNet-50-like one about half of them overlap the next layer's compute.  Their cycles are those
of ``test_simpy_aware.py`` (the aware mode gives the unaware cycles there) and their event
counts those ``benches/bench_aware.py`` printed before closed runs existed.  Two small sets
(8 ranks, 1 MiB ring all-reduces of 4 chunks, 117,780 ns alone) have a collective of a kind
already run alone start while other traffic is under way: a collective issued meanwhile, or a
64 MiB send still serializing on its links; replaying it there would be wrong, and is, with
either part of the guard taken away.

Runs beside their own ranks' compute (quiet events): the ResNet-50-like example, and a set whose
compute beside an all-reduce ends exactly at its end, released late enough that only running
every event tells the order of the ready nodes (the simulation runs again without the rule; taking
the end as decided gets it wrong).  Runs starting together (replayed as one unit): the GPT-3-like
example with ``mp_group`` 4 (its cycles and events those of ``main`` before) and two groups of a
Ring of 8 sharing links, whose pair of 128 KiB all-reduces takes 37,444 ns; a send under way on
their links makes the replay wrong without the free-links part of the guard.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra_core import load_traces, open_traceset
from chakra_simpy import closed_check, closed_runs, group_check
from chakra_simpy.message_run import MessageRun
from chakra_simpy.replay_ends import ReplayEnds

ROOT = Path(__file__).resolve().parents[3]
SYSTEM = str(ROOT / "examples" / "system" / "system.yaml")
EXAMPLES = [("resnet50_like.txt", {"npus": 8}, 8_354_096, 74_465),
            ("gpt3_like.txt", {"npus": 8, "mp_group": 8}, 6_077_152_563, 781_050)]
MIB = 1 << 20


def _counting(m, name: str, into: list) -> None:
    """Patch ``ReplayEnds.<name>`` (through the monkeypatch context ``m``) to note its argument in
    ``into`` before it runs."""
    real = getattr(ReplayEnds, name)

    def counted(self, arg):
        into.append(arg)
        real(self, arg)

    m.setattr(ReplayEnds, name, counted)


def _outcome(run, monkeypatch, slow=False):
    """Per-rank finish ns, events and SimPy events of ``run()``, and how many runs it replayed
    (``slow``: none, every collective event by event)."""
    replays: list = []
    with monkeypatch.context() as m:
        _counting(m, "close", replays)
        if slow:
            m.setattr(MessageRun, "check_due", lambda self, arg: None)
            m.setattr(MessageRun, "_rotated", lambda self: None)
        res = run()
    return [r["finish_ns"] for r in res.ranks], res.summary["events"], res.summary["simpy_events"], len(replays)


def _example(kit, tmp_path, name, opts, symmetry):
    where = tmp_path / name
    if not where.exists():
        load_traces(str(ROOT / "examples" / "text" / name), "text", opts).write(where / "trace")
    return lambda: kit.run(open_traceset(str(where)), congestion="aware", system=SYSTEM, symmetry=symmetry)


@pytest.mark.parametrize("symmetry", [True, False])
@pytest.mark.parametrize(("name", "opts", "finish", "simpy_events"), EXAMPLES)
def test_replayed_runs_give_the_cycles_and_counts_of_running_every_event(kit, tmp_path, monkeypatch, name, opts,
                                                                          finish, simpy_events, symmetry):
    run = _example(kit, tmp_path, name, opts, symmetry)
    fast = _outcome(run, monkeypatch)
    slow = _outcome(run, monkeypatch, slow=True)
    assert fast[3] > 0 and slow[3] == 0
    assert fast[:3] == slow[:3]
    assert fast[0] == [finish] * 8
    if symmetry:
        assert fast[2] == simpy_events


def _overlapping(kit, tmp_path):
    """Each rank: all-reduces 0 and 1 in turn, then all-reduce 2 and, 5 us after all-reduce 1,
    all-reduce 4 (two in flight: ``streams`` 2)."""
    def nodes():
        return [kit.coll(0, MIB), kit.coll(1, MIB, deps=[0]), kit.coll(2, MIB, deps=[1]),
                kit.comp(3, 5, deps=[1]), kit.coll(4, MIB, deps=[3])]
    ts = kit.traces([nodes() for _ in range(8)])
    return lambda: kit.run(ts, kit.system([("Ring", 8, 50, 500)]), tmp_path, congestion="aware", streams=2)


def _send_under_way(kit, tmp_path):
    """Each rank: all-reduces 0 and 1 in turn, then a 64 MiB send to the next rank (about 1.25
    ms on the link the all-reduce's messages take too) and all-reduce 4 at once."""
    def nodes(r):
        return [kit.coll(0, MIB), kit.coll(1, MIB, deps=[0]), kit.p2p(2, True, (r + 1) % 8, 64 * MIB, deps=[1]),
                kit.p2p(3, False, (r - 1) % 8, 64 * MIB, deps=[1]), kit.coll(4, MIB, deps=[1])]
    ts = kit.traces([nodes(r) for r in range(8)])
    return lambda: kit.run(ts, kit.system([("Ring", 8, 50, 500)]), tmp_path, congestion="aware", streams=2)


@pytest.mark.parametrize(("case", "part", "broken"),
                         [(_overlapping, "closed", lambda end, real, stand_in: True),
                          (_send_under_way, "links_free", lambda links, now: True)])
def test_without_its_guard_a_replay_gets_a_busy_network_wrong(kit, tmp_path, monkeypatch, case, part, broken):
    if case is _overlapping:
        # outcomes recorded event by event: a link that only a replay of one timed by member 0
        # (rotation_runs) has used keeps no scheduling order, which only a replay the guard wrongly
        # lets through would then need (it would fail instead of giving wrong cycles)
        monkeypatch.setattr(MessageRun, "_rotated", lambda self: None)
    run = case(kit, tmp_path)
    fast = _outcome(run, monkeypatch)
    slow = _outcome(run, monkeypatch, slow=True)
    assert fast[3] > 0 and fast[:3] == slow[:3]
    assert fast[0][0] > 2 * 117_780
    monkeypatch.setattr(closed_runs, part, broken)
    monkeypatch.setattr(closed_check, part, broken)
    monkeypatch.setattr(group_check, part, broken)
    wrong = _outcome(run, monkeypatch)
    assert wrong[3] > fast[3] and wrong[0] != fast[0]


def _beside_compute(kit, tmp_path, first_us):
    """Each rank (``streams`` 1; Ring 8 of 50 GB/s, 35 ns, endpoint delay 1,000 ns: an all-reduce
    of 800,000 bytes alone takes 130,000 ns, its last step's delay being 1,000 ns): all-reduces
    0 and 1 in turn; beside all-reduce 1, compute of ``first_us`` then 1 us; 5 us of compute
    after all-reduce 1 (node 4), then all-reduce 6, and 5 us after the 1 us (node 5).  When the
    1 us ends with all-reduce 1, nodes 4 and 5 become ready at one ns, and the one released
    first runs first."""
    def nodes():
        return [kit.coll(0, 800_000), kit.coll(1, 800_000, deps=[0]), kit.comp(2, first_us, deps=[0]),
                kit.comp(3, 1, deps=[2]), kit.comp(4, 5, deps=[1]), kit.comp(5, 5, deps=[3]),
                kit.coll(6, 800_000, deps=[4])]
    ts = kit.traces([nodes() for _ in range(8)])
    system = kit.system([("Ring", 8, 50, 35)], **{"endpoint-delay": 1000})
    return lambda: kit.run(ts, system, tmp_path, congestion="aware")


def _quiet_outcome(run, monkeypatch, slow=False):
    """:func:`_outcome`, and how many replays among quiet events began and were undecided."""
    marks, undecided = [], []
    mark, verify = ReplayEnds.mark, ReplayEnds.verify

    def marked(self, arg):
        marks.append(arg)
        mark(self, arg)

    def verified(self, eid):
        try:
            verify(self, eid)
        except closed_runs.Undecided:
            undecided.append(eid)
            raise

    with monkeypatch.context() as m:
        m.setattr(ReplayEnds, "mark", marked)
        m.setattr(ReplayEnds, "verify", verified)
        got = _outcome(run, monkeypatch, slow)
    return got, len(marks), len(undecided)


@pytest.mark.parametrize(("first_us", "finish", "undecided"), [(50, 395_000, 0), (129, 400_000, 1)])
def test_a_run_beside_its_own_ranks_compute_is_replayed_as_if_run_event_by_event(kit, tmp_path, monkeypatch,
                                                                                 first_us, finish, undecided):
    run = _beside_compute(kit, tmp_path, first_us)
    fast, marks, left = _quiet_outcome(run, monkeypatch)
    slow, _, _ = _quiet_outcome(run, monkeypatch, slow=True)
    assert fast[:3] == slow[:3]
    assert fast[0] == [finish] * 8
    assert marks >= 1 and left == undecided


def test_an_undecided_end_taken_as_decided_gets_the_order_of_ready_nodes_wrong(kit, tmp_path, monkeypatch):
    run = _beside_compute(kit, tmp_path, 129)
    monkeypatch.setattr(ReplayEnds, "verify", lambda self, eid: None)
    wrong = _outcome(run, monkeypatch)
    assert wrong[0] == [395_000] * 8


@pytest.mark.parametrize("symmetry", [True, False])
def test_resnet_like_runs_beside_the_next_layers_compute_are_replayed(kit, tmp_path, monkeypatch, symmetry):
    name, opts, finish, simpy_events = EXAMPLES[0]
    run = _example(kit, tmp_path, name, opts, symmetry)
    fast, marks, undecided = _quiet_outcome(run, monkeypatch)
    assert marks > 0 and undecided == 0
    assert fast[0] == [finish] * 8
    if symmetry:
        assert fast[2] == simpy_events


def test_taking_other_ranks_events_for_quiet_ones_gets_a_busy_network_wrong(kit, tmp_path, monkeypatch):
    run = _overlapping(kit, tmp_path)
    monkeypatch.setattr(MessageRun, "_rotated", lambda self: None)  # as in the test above
    fast = _outcome(run, monkeypatch)
    monkeypatch.setattr(closed_check, "quiet", lambda others, end, node_end, actors: True)
    wrong = _outcome(run, monkeypatch)
    assert wrong[3] > fast[3] and wrong[0] != fast[0]


def _grouped(run, monkeypatch, slow=False):
    """:func:`_outcome`, and how many runs were replayed together."""
    together: list = []
    with monkeypatch.context() as m:
        _counting(m, "close_group", together)
        got = _outcome(run, monkeypatch, slow)
    return got, len(together)


def _two_groups(kit, tmp_path, send=False):
    """Groups a (even ranks) and b (odd ranks) on a Ring of 8, whose messages share links: each
    rank runs three 128 KiB all-reduces of its group in turn, 37,444 ns a pair of them (see
    ``test_simpy_aware.py``); with ``send``, ``streams`` 2 and a 64 MiB send to the next rank
    (about 1.3 ms on the link the group's messages take first) beside the third."""
    groups = {"a": [0, 2, 4, 6], "b": [1, 3, 5, 7]}

    def nodes(r):
        pg = "a" if r % 2 == 0 else "b"
        out = [kit.coll(0, 128 * 1024, pg=pg), kit.coll(1, 128 * 1024, pg=pg, deps=[0]),
               kit.coll(2, 128 * 1024, pg=pg, deps=[1])]
        if send:
            out += [kit.p2p(3, True, (r + 1) % 8, 64 * MIB, deps=[1]),
                    kit.p2p(4, False, (r - 1) % 8, 64 * MIB, deps=[1])]
        return out
    ts = kit.traces({r: nodes(r) for r in range(8)}, groups)
    return lambda: kit.run(ts, kit.system([("Ring", 8, 50, 500)]), tmp_path, congestion="aware",
                           streams=2 if send else 1)


def test_groups_starting_together_are_replayed_together_as_if_run_event_by_event(kit, tmp_path, monkeypatch):
    run = _two_groups(kit, tmp_path)
    fast, together = _grouped(run, monkeypatch)
    slow, _ = _grouped(run, monkeypatch, slow=True)
    assert together == 2 and fast[:3] == slow[:3]
    assert fast[0] == [3 * 37_444] * 8


@pytest.mark.parametrize("symmetry", [True, False])
def test_gpt3_like_model_parallel_groups_are_replayed_together(kit, tmp_path, monkeypatch, symmetry):
    run = _example(kit, tmp_path, "gpt3_like.txt", {"npus": 8, "mp_group": 4}, symmetry)
    fast, together = _grouped(run, monkeypatch)
    slow, _ = _grouped(run, monkeypatch, slow=True)
    assert together > 500 and fast[:3] == slow[:3]
    assert fast[0] == [9_427_790_805] * 8
    if symmetry:
        assert fast[2] == 700_144


def test_without_free_links_a_group_replay_gets_a_send_under_way_wrong(kit, tmp_path, monkeypatch):
    run = _two_groups(kit, tmp_path, send=True)
    fast, together = _grouped(run, monkeypatch)
    slow, _ = _grouped(run, monkeypatch, slow=True)
    assert together == 1 and fast[:3] == slow[:3]
    monkeypatch.setattr(closed_check, "links_free", lambda links, now: True)
    monkeypatch.setattr(group_check, "links_free", lambda links, now: True)
    wrong, more = _grouped(run, monkeypatch)
    assert more == 2 and wrong[0] != fast[0]
