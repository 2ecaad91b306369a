"""``-O comm=replay``: communication lasts its recorded durations (closed-form traces)."""

from __future__ import annotations

import pytest

from chakra_core import ConfigError

MIB = 1 << 20


def _timed(node, us):
    node.duration_micros = us
    return node


def _finish(res):
    return {r["rank"]: r["finish_ns"] for r in res.ranks}


def _two_ranks(kit, first_us, second_us, ct=None):
    """Rank 0 computes 100 us then issues a collective that lasted ``first_us``; rank 1 computes
    30 us then issues it and it lasted ``second_us`` (rank 1 waited for rank 0)."""
    ct = kit.CommType.ALL_REDUCE if ct is None else ct
    return kit.traces({0: [kit.comp(1, 100), _timed(kit.coll(2, MIB, ct=ct, deps=[1]), first_us)],
                       1: [kit.comp(1, 30), _timed(kit.coll(2, MIB, ct=ct, deps=[1]), second_us)]})


def test_a_collective_lasts_each_members_recorded_duration(kit, tmp_path):
    sysd = kit.system([("Ring", 2, 50, 500)])
    res = kit.run(_two_ranks(kit, 50, 120), sysd, tmp_path, comm="replay")
    assert _finish(res) == {0: 150_000, 1: 150_000}
    assert res.summary["comm"] == "replay"
    assert any("comm=replay" in n for n in res.notes)
    # the network model times the same trace by the 1 MiB all-reduce instead
    model = _finish(kit.run(_two_ranks(kit, 50, 120), sysd, tmp_path))
    assert model[0] > 150_000


def test_no_member_ends_before_the_last_one_issued(kit, tmp_path):
    # rank 1 lasted 40 us from 30 us, but rank 0 issued the collective only at 100 us
    res = kit.run(_two_ranks(kit, 50, 40), kit.system([("Ring", 2, 50, 500)]), tmp_path, comm="replay")
    assert _finish(res) == {0: 150_000, 1: 100_000}


def test_a_recorded_broadcast_waits_for_its_members(kit, tmp_path):
    # without replay a broadcast with a duration replays it alone (ASTRA-sim's rule)
    sysd = kit.system([("Ring", 2, 50, 500)])
    ts = _two_ranks(kit, 50, 40, ct=kit.CommType.BROADCAST)
    assert _finish(kit.run(ts, sysd, tmp_path)) == {0: 150_000, 1: 70_000}
    ts = _two_ranks(kit, 50, 40, ct=kit.CommType.BROADCAST)
    assert _finish(kit.run(ts, sysd, tmp_path, comm="replay")) == {0: 150_000, 1: 100_000}


def test_sends_replay_their_duration_and_receives_wait_for_the_send(kit, tmp_path):
    sysd = kit.system([("Ring", 2, 50, 500)])
    # the send is issued at 0 and lasted 10 us (eager); the receive is posted at 50 us, lasted 5 us
    ts = kit.traces({0: [_timed(kit.p2p(1, True, 1, 4096, tag=3), 10)],
                     1: [kit.comp(1, 50), _timed(kit.p2p(2, False, 0, 4096, tag=3, deps=[1]), 5)]})
    assert _finish(kit.run(ts, sysd, tmp_path, comm="replay")) == {0: 10_000, 1: 55_000}
    # a receive posted at 0 that lasted 70 us, for a send issued at 50 us (5 us), or at 90 us
    for send_at, recv_end in ((50, 70_000), (90, 90_000)):
        ts = kit.traces({0: [kit.comp(1, send_at), _timed(kit.p2p(2, True, 1, 4096, tag=3, deps=[1]), 5)],
                         1: [_timed(kit.p2p(1, False, 0, 4096, tag=3), 70)]})
        assert _finish(kit.run(ts, sysd, tmp_path, comm="replay")) == {0: (send_at + 5) * 1000, 1: recv_end}


def test_ranks_start_at_their_start_times(kit, tmp_path):
    # rank 1 starts 80 us late: it issues the collective at 110 us, after rank 0 (100 us)
    sysd = kit.system([("Ring", 2, 50, 500)])
    res = kit.run(_two_ranks(kit, 50, 40), sysd, tmp_path, comm="replay", start_ns="0,80000")
    assert _finish(res) == {0: 150_000, 1: 150_000}
    assert any("start_ns" in n for n in res.notes)
    with pytest.raises(ConfigError):
        kit.run(_two_ranks(kit, 50, 40), sysd, tmp_path, start_ns="0,-1")
    with pytest.raises(ConfigError):
        kit.run(_two_ranks(kit, 50, 40), sysd, tmp_path, start_ns="0,1,2")
    # given as numbers through the API: a whole float is taken; a fraction or a boolean is
    # refused as the CLI refuses "1.5" (a fraction used to be cut off silently)
    assert _finish(kit.run(_two_ranks(kit, 50, 40), sysd, tmp_path, comm="replay", start_ns=[0, 80000.0])) == \
        {0: 150_000, 1: 150_000}
    for bad in ([0, 80000.7], [0, True], ["0", "8\u00b2"]):
        with pytest.raises(ConfigError, match="is not a whole number of ns"):
            kit.run(_two_ranks(kit, 50, 40), sysd, tmp_path, start_ns=bad)
