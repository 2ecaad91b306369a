"""The simulator's timeline through the core's writer: 1,024 ranks in Perfetto's format, read
back with Perfetto's trace proto, nothing truncated; streams drawn as properly nested lanes."""

from __future__ import annotations

import pytest

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

MIB = 1 << 20


def _read(path):
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    return trace


def test_1024_rank_timeline_loads_in_perfetto_format_untruncated(kit, tmp_path):
    n = 1024
    ts = kit.same(n, lambda: [kit.comp(1, 10), kit.coll(2, MIB, deps=[1]), kit.comp(3, 5, deps=[2])])
    out = tmp_path / "run.pftrace"
    res = kit.run(ts, kit.system([("Ring", n, 50, 500)]), tmp_path, timeline=str(out), timeline_expand=True)
    assert not any("truncated" in note for note in res.notes)
    trace = _read(out)
    procs = {p.track_descriptor.uuid: p.track_descriptor.name for p in trace.packet
             if p.HasField("track_descriptor") and p.track_descriptor.HasField("process")}
    assert {f"rank {r}" for r in range(n)} <= set(procs.values())
    parent = {p.track_descriptor.uuid: p.track_descriptor.parent_uuid for p in trace.packet
              if p.HasField("track_descriptor")}
    begins = [p.track_event for p in trace.packet if p.HasField("track_event")
              and p.track_event.type == p.track_event.TYPE_SLICE_BEGIN]
    ends = [p for p in trace.packet if p.HasField("track_event") and p.track_event.type == p.track_event.TYPE_SLICE_END]
    per_rank: dict[str, int] = {}
    for ev in begins:
        rank = procs.get(parent.get(ev.track_uuid))
        if rank and rank.startswith("rank "):
            per_rank[rank] = per_rank.get(rank, 0) + 1
    # every rank: its three nodes and the all-reduce's chunk phases on its queue track
    chunks = 4
    assert len(per_rank) == n and set(per_rank.values()) == {3 + chunks}
    assert len(begins) == len(ends)
    last_end = max(p.timestamp for p in ends)
    assert last_end == res.summary["finish_ns"]
    # every rank's queue carries a counter of the chunk phases in flight, back to 0 at the end
    names = {p.track_descriptor.uuid: p.track_descriptor.name for p in trace.packet if p.HasField("track_descriptor")}
    level: dict[int, int] = {}
    for p in trace.packet:
        if p.HasField("track_event") and p.track_event.type == p.track_event.TYPE_COUNTER \
                and names[p.track_event.track_uuid] == "dim 0 queue in flight":
            level[p.track_event.track_uuid] = p.track_event.counter_value
    assert len(level) == n and set(level.values()) == {0}


def test_streams_draw_overlapping_ops_on_separate_lanes(kit, tmp_path):
    out = tmp_path / "s.pftrace"
    kit.run(kit.same(8, lambda: [kit.coll(1, MIB), kit.coll(2, MIB // 2), kit.coll(3, MIB // 4)]),
            kit.system([("Ring", 8, 50, 500)]), tmp_path, timeline=str(out), streams=4)
    trace = _read(out)
    names = {p.track_descriptor.uuid: p.track_descriptor.name for p in trace.packet if p.HasField("track_descriptor")}
    open_on: dict[int, int] = {}
    for p in trace.packet:
        if not p.HasField("track_event"):
            continue
        ev = p.track_event
        if ev.type == ev.TYPE_SLICE_BEGIN:
            open_on[ev.track_uuid] = open_on.get(ev.track_uuid, 0) + 1
            # lanes hold disjoint slices: never two open at once on one comm lane
            if names[ev.track_uuid].startswith("comm"):
                assert open_on[ev.track_uuid] == 1
        elif ev.type == ev.TYPE_SLICE_END:
            open_on[ev.track_uuid] -= 1
    assert {"comm #0", "comm #1", "comm #2"} <= set(names.values())


def test_result_keeps_spans_and_writes_them_next_to_result_json(kit, tmp_path):
    from chakra_core import Spans, breakdown
    from chakra_simpy.backend import SimpyBackend

    b = SimpyBackend()
    b.name = "simpy"
    ts = kit.same(4, lambda: [kit.comp(1, 10), kit.coll(2, MIB, deps=[1])])
    res = b.run(ts, b.check_options({"spans": True}), tmp_path)
    assert isinstance(res.spans, Spans) and str(tmp_path / "spans.npz") in res.files
    back = Spans.load(tmp_path / "spans.npz")
    assert breakdown(back) == breakdown(res.spans)
    assert [r["finish_ns"] for r in breakdown(back)] == [r["finish_ns"] for r in res.ranks]
    assert back.names[back.name[0]] == "comp1"
    assert "spans" not in res.to_dict()


def test_spans_match_the_kth_collective_of_each_group_and_the_nth_send_of_each_pair(kit, tmp_path):
    # 4 ranks, groups "a" = {0, 1} and "b" = {2, 3}, and the whole set: each rank issues an
    # all-reduce on its group twice, one all-gather on all ranks, and rank r sends rank r^1 two
    # messages of one tag and size (the n-th send pairs with the n-th receive); durations differ
    # per rank so that the issue order is not the node order
    groups = {"a": [0, 1], "b": [2, 3]}
    ranks = []
    for r in range(4):
        pg, peer = ("a" if r < 2 else "b"), r ^ 1
        ranks.append([kit.comp(1, 3 + r), kit.coll(2, 4096, pg=pg, deps=[1]),
                      kit.coll(3, 8192, kit.CommType.ALL_GATHER, deps=[2]),
                      kit.coll(4, 4096, pg=pg, deps=[3]),
                      kit.p2p(5, True, peer, 512, tag=7, deps=[4]), kit.p2p(6, False, peer, 512, tag=7, deps=[4]),
                      kit.p2p(7, True, peer, 512, tag=7, deps=[5]), kit.p2p(8, False, peer, 512, tag=7, deps=[6])])
    res = kit.run(kit.traces(ranks, groups), None, tmp_path, spans=True)
    s = res.spans
    by_match: dict[int, set] = {}
    for i in range(len(s)):
        if s.match[i] >= 0:
            by_match.setdefault(int(s.match[i]), set()).add((int(s.rank[i]), int(s.node_id[i])))
    expected = [{(0, 2), (1, 2)}, {(2, 2), (3, 2)}, {(0, 4), (1, 4)}, {(2, 4), (3, 4)},
                {(r, 3) for r in range(4)}]
    for r in range(4):  # r's n-th send (node 5, then 7) with its peer's n-th receive (6, then 8)
        expected += [{(r, 5), (r ^ 1, 6)}, {(r, 7), (r ^ 1, 8)}]
    assert sorted(map(sorted, by_match.values())) == sorted(map(sorted, expected))
    names = {int(s.node_id[i]): s.strings[s.group[i]] for i in range(len(s)) if s.rank[i] == 2 and s.group[i] >= 0}
    assert names == {2: "b", 3: "all", 4: "b"}
    assert {int(s.node_id[i]): int(s.bytes[i]) for i in range(len(s)) if s.rank[i] == 0} == \
        {1: 0, 2: 4096, 3: 8192, 4: 4096, 5: 512, 6: 512, 7: 512, 8: 512}
    assert {int(s.node_id[i]): int(s.peer[i]) for i in range(len(s)) if s.rank[i] == 3 and s.peer[i] >= 0} == \
        {5: 2, 6: 2, 7: 2, 8: 2}


def test_timeline_selections_without_a_timeline_are_said_to_be_ignored(kit, tmp_path):
    # they used to be dropped without a word (and not even parsed: a typo went unnoticed)
    ts = kit.same(2, lambda: [kit.comp(1, 10), kit.coll(2, MIB, deps=[1])])
    sysd = kit.system([("Ring", 2, 50, 500)])
    res = kit.run(ts, sysd, tmp_path, timeline_ranks="0", timeline_expand=True)
    said = [n for n in res.notes if "ignored, as no timeline was asked for" in n]
    assert len(said) == 1 and said[0].startswith("timeline_ranks, timeline_expand select"), res.notes
    assert not any("no timeline was asked" in n for n in kit.run(ts, sysd, tmp_path).notes)
