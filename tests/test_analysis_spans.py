"""Per-rank breakdown and cross-rank critical path of spans, against answers computed by hand.

The span sets here are written by hand: they stand for what a backend measured or simulated
(closed-form times), so that every expected number below follows from the numbers in the set.
"""

from __future__ import annotations

import numpy as np
import pytest

from chakra_core import SpanBuilder, Spans, breakdown, critical_path


def slow_rank_set(match: int = 1) -> Spans:
    """Three ranks, one all-reduce (match ``match``); rank 1 computes for 180 ns where the others need
    less, so the all-reduce starts when rank 1 arrives at 300 ns and ends at 350 ns."""
    b = SpanBuilder()
    b.add(0, "compute", 0, 100, "fwd", "compute", node_id=1)
    b.add(0, "comm", 100, 250, "allreduce", "collective", node_id=2, bytes=1 << 20, group="dp", match=match)
    b.add(0, "compute", 350, 50, "opt", "compute", node_id=3)
    b.add(1, "compute", 0, 100, "fwd", "compute", node_id=1)
    b.add(1, "compute", 120, 180, "slow_kernel", "compute", node_id=4)
    b.add(1, "comm", 300, 50, "allreduce", "collective", node_id=2, bytes=1 << 20, group="dp", match=match)
    b.add(1, "compute", 350, 30, "opt", "compute", node_id=3)
    b.add(2, "compute", 0, 150, "fwd", "compute", node_id=1)
    b.add(2, "comm", 150, 200, "allreduce", "collective", node_id=2, bytes=1 << 20, group="dp", match=match)
    b.add(2, "compute", 350, 40, "opt", "compute", node_id=3)
    return b.build()


def test_breakdown_sums_to_finish_and_matches_hand_computation():
    rows = {r["rank"]: r for r in breakdown(slow_rank_set())}
    for r in rows.values():
        assert r["compute_ns"] + r["exposed_comm_ns"] + r["exposed_mem_ns"] + r["idle_ns"] == r["finish_ns"]
    assert rows[0] == dict(rows[0], finish_ns=400, compute_ns=150, exposed_comm_ns=250, idle_ns=0, skew_ns=200)
    # rank 1: compute 100 + 180 + 30, idle 100..120, the all-reduce 300..350
    assert rows[1] == dict(rows[1], finish_ns=380, compute_ns=310, exposed_comm_ns=50, idle_ns=20, skew_ns=0)
    assert rows[2] == dict(rows[2], finish_ns=390, compute_ns=190, exposed_comm_ns=200, skew_ns=150)


def test_breakdown_skew_with_a_sparse_match_number():
    # match numbers far past the number of spans are renumbered before the last arrivals are found
    rows = breakdown(slow_rank_set(match=1 << 40))
    assert [(r["rank"], r["skew_ns"], r["exposed_comm_ns"]) for r in rows] == [(0, 200, 250), (1, 0, 50), (2, 150, 200)]


def test_critical_path_crosses_to_the_slow_rank():
    spans = slow_rank_set()
    cp = critical_path(spans)
    # from rank 0's "opt" (350..400) back through the all-reduce, whose last member is rank 1
    # (arrived at 300); rank 2 arrived second, at 150: rank 1's work after 150 is skew
    assert cp.ns_by_category() == {"compute_ns": 50 + 30 + 100, "exposed_comm_ns": 50, "exposed_mem_ns": 0,
                                   "skew_ns": 150, "idle_ns": 20}
    assert sum(cp.ns_by_category().values()) == cp.finish_ns == 400
    segs = [(int(r), int(a), int(b)) for r, a, b in zip(cp.rank, cp.start_ns, cp.end_ns)]
    assert segs == [(1, 0, 100), (1, 100, 120), (1, 120, 150), (1, 150, 300), (1, 300, 350), (0, 350, 400)]
    assert cp.crossings == 1 and cp.ns_by_rank() == {0: 50, 1: 350}
    assert [(n["rank"], n["name"], n["path_ns"]) for n in cp.nodes(spans)] == [
        (1, "fwd", 100), (1, "slow_kernel", 180), (1, "allreduce", 50), (0, "opt", 50)]
    top = cp.top(spans)
    assert top[0] == {"name": "slow_kernel", "kind": "compute", "category": "skew", "ns": 150, "segments": 1}


def test_overlap_and_memory_are_exposed_only_where_nothing_else_runs():
    b = SpanBuilder()
    b.add(0, "compute", 0, 100, "k", "compute")
    b.add(0, "comm", 50, 100, "ar", "collective")       # 50..100 hidden, 100..150 exposed
    b.add(0, "mem", 120, 60, "load", "memory")           # 150..180 exposed memory
    b.add(0, "cpu", 200, 10, "launch", "cpu")            # after idle 180..200
    (row,) = breakdown(b.build())
    assert row == dict(row, finish_ns=210, compute_ns=110, exposed_comm_ns=50, exposed_mem_ns=30, idle_ns=20,
                       overlap_ns=50, comm_ns=100)


def test_a_recorded_idle_gap_is_idle_time_not_compute():
    """An ``[idle]`` operation (the PyTorch input's wait for nothing) runs nothing: its time is
    idle in the breakdown, the critical path's categories and the utilisation; ``gap_ns`` is the
    part of it while nothing else runs."""
    from chakra_core.analysis._tables import utilisation

    b = SpanBuilder()
    b.add(0, "cpu", 0, 100, "aten::mm", "cpu")
    b.add(0, "cpu", 100, 60, "[idle]", "cpu")             # 100..160: a gap
    b.add(0, "comm", 140, 40, "ar", "collective")         # 140..160 under the gap, 160..180 exposed
    b.add(0, "gpu", 180, 20, "[idle]", "compute")          # 180..200: a gap on the accelerator
    b.add(0, "cpu", 200, 50, "aten::add", "cpu")
    spans = b.build()
    (row,) = breakdown(spans)
    assert row == dict(row, finish_ns=250, compute_ns=150, cpu_ns=150, accelerator_ns=0, exposed_comm_ns=40,
                       idle_ns=60, gap_ns=60, overlap_ns=0)
    cp = critical_path(spans)
    assert cp.ns_by_category() == {"compute_ns": 150, "exposed_comm_ns": 40, "exposed_mem_ns": 0, "skew_ns": 0,
                                   "idle_ns": 60}
    assert utilisation(spans, buckets=5)["compute"] == [1.0, 1.0, 0.0, 0.0, 1.0]


def test_receive_waiting_for_a_late_send_crosses_to_the_sender():
    b = SpanBuilder()
    b.add(0, "compute", 0, 500, "produce", "compute")
    b.add(0, "comm", 500, 100, "send", "send", peer=1, bytes=4096, match=7)
    b.add(1, "compute", 0, 100, "prep", "compute")
    b.add(1, "comm", 100, 500, "recv", "recv", peer=0, bytes=4096, match=7)
    b.add(1, "compute", 600, 100, "consume", "compute")
    spans = b.build()
    cp = critical_path(spans)
    # the receive (from 100) waited for the send (from 500): rank 0's work after 100 is skew
    assert cp.ns_by_category() == {"compute_ns": 100 + 100, "exposed_comm_ns": 100, "exposed_mem_ns": 0,
                                   "skew_ns": 400, "idle_ns": 0}
    assert [int(r) for r in cp.rank] == [0, 0, 0, 1]
    assert [n["name"] for n in cp.nodes(spans)] == ["produce", "send", "consume"]
    assert int(cp.end_ns[-1]) == 700


def test_symmetric_spans_expand_to_every_rank_they_stand_for():
    b = SpanBuilder(nranks=4)
    b.add(0, "compute", 0, 10, "k", "compute")
    b.ranks_of[0] = [0, 1, 2, 3]
    rows = breakdown(b.build())
    assert [r["rank"] for r in rows] == [0, 1, 2, 3] and {r["simulated_as"] for r in rows} == {0}


def test_spans_save_and_load_round_trip(tmp_path):
    spans = slow_rank_set()
    back = Spans.load(spans.save(tmp_path / "s.npz"))
    assert back.names == spans.names and back.strings == spans.strings
    for col in ("rank", "start_ns", "dur_ns", "match", "bytes", "group"):
        assert np.array_equal(getattr(back, col), getattr(spans, col))
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    from chakra_core import TraceFormatError

    with pytest.raises(TraceFormatError, match="bad.npz"):
        Spans.load(tmp_path / "bad.npz")


def test_replayed_spans_keep_their_bytes_and_give_no_bandwidth(tmp_path):
    """A replayed span counts its bytes but no bandwidth; the column survives save/load, and a
    spans file written before it existed reads it as 0."""
    from chakra_core.analysis._tables import collectives

    b = SpanBuilder(nranks=2)
    for r in (0, 1):
        b.add(r, "comm", 0, 1000, "bcast", "collective", bytes=20, comm_type=5, replayed=True)
        b.add(r, "comm", 1000, 100, "ar", "collective", bytes=400, comm_type=0, match=1)
    spans = b.build()
    rows = {c["collective"]: c for c in collectives(spans)}
    assert rows["BROADCAST"]["bytes"] == 40 and rows["BROADCAST"]["algbw_GBps"] is None
    assert rows["BROADCAST"]["replayed"] == 2 and rows["ALL_REDUCE"]["replayed"] == 0
    assert rows["ALL_REDUCE"]["algbw_GBps"] == 4.0  # 800 bytes over 2 x 100 ns
    back = Spans.load(spans.save(tmp_path / "s.npz"))
    assert back.replayed.tolist() == [1, 0, 1, 0]
    with np.load(tmp_path / "s.npz") as z:
        old = {k: z[k] for k in z.files if k != "replayed"}
    with open(tmp_path / "old.npz", "wb") as f:
        np.savez_compressed(f, **old)
    assert Spans.load(tmp_path / "old.npz").replayed.tolist() == [0, 0, 0, 0]


def test_utilisation_over_time_is_the_share_of_rank_time():
    from chakra_core.analysis._tables import utilisation

    b = SpanBuilder(nranks=2)
    b.add(0, "compute", 0, 50, "k", "compute")
    b.add(0, "comm", 50, 50, "ar", "collective")
    b.add(1, "compute", 0, 100, "k", "compute")
    u = utilisation(b.build(), buckets=2)
    # first half: both ranks compute; second half: rank 1 computes, rank 0 communicates
    assert u == {"bucket_ns": 50, "compute": [1.0, 0.5], "comm": [0.0, 0.5]}


def test_builder_keeps_the_order_of_rows_and_flows_added_one_by_one_and_in_bulk():
    b = SpanBuilder()
    b.add(0, "compute", 0, 10, "a", "compute")
    b.extend({"rank": np.array([1, 1]), "start_ns": np.array([5, 20]), "dur_ns": np.array([10, 1]),
              "kind": np.array([3, 0]), "track": np.zeros(2, np.int32), "name": np.zeros(2, np.int32)})
    assert b.add(2, "comm", 30, 4, "c", "collective", match=7) == 3
    b.flow(0, 1, "dependency")
    b.flows(np.array([1, 2]), np.array([2, 3]), "collective")
    b.flow(3, 0, "p2p")
    s = b.build()
    assert s.rank.tolist() == [0, 1, 1, 2] and s.start_ns.tolist() == [0, 5, 20, 30]
    assert s.match.tolist() == [-1, -1, -1, 7] and s.bytes.tolist() == [0, 0, 0, 0]
    assert s.flow_src.tolist() == [0, 1, 2, 3] and s.flow_dst.tolist() == [1, 2, 3, 0]
    assert s.flow_kind.tolist() == [0, 1, 1, 2]


def _walk_by_definition(starts, ends):
    """The critical path of one rank without collectives, by the rule itself: from the finish,
    step to the operation ending last at or before the current time among those before the
    current one in (end, start, index) order; the gaps are idle.  Returns (span, start, end)
    segments in time order (-1: idle)."""
    key = [(e, s, i) for i, (s, e) in enumerate(zip(starts, ends))]
    cur = max(key)
    t = cur[0]
    out = []
    while cur is not None:
        e, s, i = cur
        if e < t:
            out.append((-1, e, t))
        if s < e:
            out.append((i, s, e))
        t = s
        before = [k for k in key if k < cur and k[0] <= t]
        cur = max(before) if before else None
    if t > 0:
        out.append((-1, 0, t))
    return out[::-1]


def _joined(segments):
    """``(span, start, end)`` segments with the adjacent ones of one span joined."""
    out = []
    for i, a, e in segments:
        if out and out[-1][0] == i and out[-1][2] == a:
            out[-1] = (i, out[-1][1], e)
        else:
            out.append((i, a, e))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_critical_path_of_one_rank_follows_the_rule(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    starts = rng.integers(0, 60, n)
    durs = rng.choice([0, 1, 3, 5, 10, 25], n)
    b = SpanBuilder()
    for s, d in zip(starts.tolist(), durs.tolist()):
        b.add(0, "compute", s, d, "op", "compute")
    spans = b.build()
    cp = critical_path(spans)
    got = list(zip(cp.span.tolist(), cp.start_ns.tolist(), cp.end_ns.tolist()))
    # the path cuts its gaps where the rank's activity changes (their categories differ)
    assert _joined(got) == _joined(_walk_by_definition(starts.tolist(), (starts + durs).tolist()))
    assert cp.finish_ns == int((starts + durs).max()) == sum(cp.ns_by_category().values())
