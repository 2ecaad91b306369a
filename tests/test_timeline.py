"""Timelines: Perfetto protobuf read back with Perfetto's own trace proto, Chrome JSON, selection.

The span sets are written by hand (closed-form times standing for a backend's records); the
protobuf is parsed with the ``perfetto`` package's published ``Trace`` message, not with our code.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from chakra_core import SpanBuilder, critical_path, write_timeline

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")


def two_ranks(streams_overlap=True):
    b = SpanBuilder()
    b.add(0, "compute", 0, 100, "fwd", "compute", node_id=1)
    b.add(0, "comm", 100, 250, "allreduce", "collective", node_id=2, bytes=1 << 20, group="dp", match=1,
          algorithm="ring on dim 0")
    if streams_overlap:  # a second stream: overlaps the all-reduce without nesting in it
        b.add(0, "comm", 150, 250, "allgather", "collective", node_id=5, bytes=1024, group="tp")
    b.add(1, "compute", 0, 300, "fwd", "compute", node_id=1)
    b.add(1, "comm", 300, 50, "allreduce", "collective", node_id=2, bytes=1 << 20, group="dp", match=1)
    b.add(1, "comm", 350, 20, "send", "send", node_id=6, peer=0, bytes=64, match=9)
    b.add(0, "comm", 400, 0, "marker", "other", node_id=7)
    return b.build()


def read(path):
    """The trace at ``path`` parsed with Perfetto's proto: packets, track descriptors by uuid,
    interned event names, annotation names and annotation string values, (ts, track event)s."""
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    tracks = {p.track_descriptor.uuid: p.track_descriptor for p in trace.packet if p.HasField("track_descriptor")}
    names, anames, strings = {}, {}, {}
    for p in trace.packet:
        if p.HasField("interned_data"):
            names.update({e.iid: e.name for e in p.interned_data.event_names})
            anames.update({e.iid: e.name for e in p.interned_data.debug_annotation_names})
            strings.update({e.iid: e.str.decode() for e in p.interned_data.debug_annotation_string_values})
    events = [(p.timestamp, p.track_event) for p in trace.packet if p.HasField("track_event")]
    return SimpleNamespace(trace=trace, tracks=tracks, names=names, anames=anames, strings=strings, events=events)


def slices(t):
    """Rebuild (track name, rank label, name, start, end, args, flow ids, terminating flow ids)
    from begin/end pairs, checking that every track's slices nest properly."""
    stacks, out = {}, []
    for ts, ev in t.events:
        if ev.type == ev.TYPE_SLICE_BEGIN:
            args = {t.anames[a.name_iid]: (t.strings[a.string_value_iid] if a.HasField("string_value_iid")
                                           else a.int_value) for a in ev.debug_annotations}
            stacks.setdefault(ev.track_uuid, []).append((t.names[ev.name_iid], ts, args, list(ev.flow_ids),
                                                         list(ev.terminating_flow_ids)))
        elif ev.type == ev.TYPE_SLICE_END:
            name, start, args, fo, fi = stacks[ev.track_uuid].pop()
            assert ts >= start
            track = t.tracks[ev.track_uuid]
            parent = t.tracks.get(track.parent_uuid)
            out.append((track.name, parent.name if parent else "", name, start, ts, args, fo, fi))
    assert all(not s for s in stacks.values())
    return out


def test_perfetto_round_trip_tracks_args_flows_counters_and_path(tmp_path):
    spans = two_ranks()
    info = write_timeline(spans, tmp_path / "t.pftrace")
    assert info["format"] == "perfetto" and info["spans"] == info["total"] == len(spans) and not info["truncated"]
    t = read(tmp_path / "t.pftrace")
    tracks, names, events = t.tracks, t.names, t.events
    got = slices(t)
    by = {(g[1], g[2]): g for g in got}
    # the overlapping all-gather is on a lane of its own: both comm lanes hold disjoint slices
    assert by[("rank 0", "allreduce")][0] != by[("rank 0", "allgather")][0]
    assert {by[("rank 0", "allreduce")][0], by[("rank 0", "allgather")][0]} == {"comm #0", "comm #1"}
    ar = by[("rank 0", "allreduce")]
    assert (ar[3], ar[4]) == (100, 350)
    assert ar[5] == {"node_id": 2, "bytes": 1 << 20, "group": "dp", "algorithm": "ring on dim 0", "kind": "collective"}
    assert by[("rank 1", "send")][5]["peer"] == 0
    # a zero-length span is an instant event
    instants = [names[ev.name_iid] for _, ev in events if ev.type == ev.TYPE_INSTANT]
    assert instants == ["marker"]
    # flow: from the last member to arrive (rank 1) to the other member of the all-reduce
    flow_out = by[("rank 1", "allreduce")][6]
    assert len(flow_out) == 1 and by[("rank 0", "allreduce")][7] == flow_out
    # counters: communication in flight on rank 0 reaches 2 while both collectives run
    counters = [(ts, ev.counter_value) for ts, ev in events if ev.type == ev.TYPE_COUNTER
                and tracks[tracks[ev.track_uuid].parent_uuid].name == "rank 0"]
    assert counters == [(100, 1), (150, 2), (350, 1), (400, 0)]
    # the critical path's track covers the run and matches critical_path()
    path = [g for g in got if g[0] == "critical path"]
    cp = critical_path(spans)
    assert [(g[3], g[4]) for g in path] == list(zip(cp.start_ns.tolist(), cp.end_ns.tolist()))
    assert sum(g[4] - g[3] for g in path) == cp.finish_ns


def test_selection_by_rank_and_window_and_stated_cap(tmp_path):
    spans = two_ranks()
    info = write_timeline(spans, tmp_path / "w.pftrace", ranks="1", window_ns="120:340", critical=False)
    got = slices(read(tmp_path / "w.pftrace"))
    assert {g[1] for g in got} == {"rank 1"} and info["selected"] == 2
    assert sorted((g[2], g[3], g[4]) for g in got) == [("allreduce", 300, 340), ("fwd", 120, 300)]
    info = write_timeline(spans, tmp_path / "c.pftrace", max_spans=3)
    assert info["truncated"] and info["spans"] == 3 and "3 of 7" in info["notes"][0]
    t = read(tmp_path / "c.pftrace")
    assert any("truncated: 3 of 7" in t.names[ev.name_iid] for _, ev in t.events if ev.type == ev.TYPE_INSTANT)


def test_a_rank_outside_the_run_is_an_error_not_an_empty_timeline(tmp_path):
    from chakra_core import ConfigError

    with pytest.raises(ConfigError, match=r"timeline_ranks: rank 5 is not in the run \(ranks 0-1\)"):
        write_timeline(two_ranks(), tmp_path / "w.json", ranks="1,5")
    assert not (tmp_path / "w.json").exists()


def test_chrome_json_on_request(tmp_path):
    spans = two_ranks()
    info = write_timeline(spans, tmp_path / "t.json")
    assert info["format"] == "json"
    data = json.loads((tmp_path / "t.json").read_text())
    xs = [e for e in data["traceEvents"] if e["ph"] == "X" and e["pid"] in (0, 1)]
    assert len(xs) == len(spans)
    ar = next(e for e in xs if e["name"] == "allreduce" and e["pid"] == 0)
    assert (ar["ts"], ar["dur"]) == (0.1, 0.25) and ar["args"]["bytes"] == 1 << 20
    assert {e["ph"] for e in data["traceEvents"]} >= {"M", "X", "s", "f", "C"}


def test_symmetric_classes_are_expanded_on_request(tmp_path):
    b = SpanBuilder(nranks=4)
    b.add(0, "compute", 0, 10, "k", "compute")
    b.ranks_of[0] = [0, 1, 2, 3]
    spans = b.build()
    tracks = read_after(spans, tmp_path / "a.pftrace", expand=False).tracks
    assert sorted(t.name for t in tracks.values() if t.HasField("process"))[0] == "chakra: critical path"
    assert any(t.name == "ranks 0-3 (simulated as 0)" for t in tracks.values())
    info = write_timeline(spans, tmp_path / "b.pftrace", expand=True)
    assert info["spans"] == 4
    tracks = read(tmp_path / "b.pftrace").tracks
    assert {t.name for t in tracks.values() if t.HasField("process")} >= {f"rank {r}" for r in range(4)}


def read_after(spans, path, **kw):
    write_timeline(spans, path, **kw)
    return read(path)


def many_spans(ranks=8, steps=400, seed=3):
    """Spans of ``ranks`` ranks (rows made here, as a backend's would be): per step a compute
    span, an all-reduce of all ranks (one match per step; its last member gets ``ranks - 1``
    flows), a send to the next rank with the receive there, a zero-length marker and, every
    third step, an all-gather overlapping the all-reduce on the comm track (a second lane);
    times past 2^40 ns, node ids and sizes past 2^32, so that varints of every width occur."""
    rng = np.random.default_rng(seed)
    b = SpanBuilder(nranks=ranks)
    base = 1 << 40
    step_ns = rng.integers(2_000, 9_000_000, steps).cumsum()
    for r in range(ranks):
        node = (r << 34) + 1
        for k in range(steps):
            t = base + int(step_ns[k]) + 10 * r
            c = b.add(r, "compute", t, 1_000 + 37 * r + k % 100, f"kernel_{k % 50}", "compute", node_id=node)
            ar = b.add(r, "comm", t + 2_000 + 3 * r, 5_000, "all_reduce", "collective", node_id=node + 1,
                       bytes=(1 << 33) + k, group="dp", algorithm="ring", match=k, comm_type=4)
            b.flow(c, ar, "dependency")
            if k % 3 == 0:
                b.add(r, "comm", t + 3_000, 4_000, "all_gather", "collective", node_id=node + 2, bytes=64, group="tp")
            b.add(r, "p2p", t + 8_000, 300, "send", "send", node_id=node + 3, peer=(r + 1) % ranks,
                  bytes=1 << 20, match=(1 << 32) + k * ranks + r)
            b.add((r + 1) % ranks, "p2p", t + 8_100, 250, "recv", "recv", node_id=(((r + 1) % ranks) << 34) + 6 + k * 8,
                  peer=r, bytes=1 << 20, match=(1 << 32) + k * ranks + r)
            b.add(r, "compute", t + 1_500, 0, "marker", "other", node_id=node + 4)
            node += 8
    return b.build()


def expected_flows(spans):
    """(source node id, destination node id) of every arrow the timeline should draw: the spans'
    own flows, and from the last member to arrive at each collective or send/receive pair to each
    other member (starts within a pair or collective are distinct here)."""
    out = {(int(spans.node_id[a]), int(spans.node_id[b])) for a, b in zip(spans.flow_src, spans.flow_dst)}
    comm = np.flatnonzero(spans.match >= 0)
    groups = {}
    for i in comm.tolist():
        groups.setdefault(int(spans.match[i]), []).append(i)
    for members in groups.values():
        last = max(members, key=lambda i: int(spans.start_ns[i]))
        out |= {(int(spans.node_id[last]), int(spans.node_id[i])) for i in members if i != last}
    return out


def test_chunked_perfetto_write_parses_back_to_the_spans_given(tmp_path, monkeypatch):
    import chakra_core.analysis._perfetto as perfetto

    spans = many_spans()
    monkeypatch.setattr(perfetto, "_CHUNK", 5_000)  # many chunks, each with rows of every shape
    info = write_timeline(spans, tmp_path / "many.pftrace")
    assert info["spans"] == len(spans) and not info["truncated"]
    t = read(tmp_path / "many.pftrace")
    assert len(t.events) > 8 * 5_000
    zero = spans.dur_ns == 0
    got = slices(t)
    instants = [(ts, ev) for ts, ev in t.events if ev.type == ev.TYPE_INSTANT and t.names[ev.name_iid] == "marker"]
    assert len(got) - len([g for g in got if g[0] == "critical path"]) == int((~zero).sum())
    assert len(instants) == int(zero.sum())
    by_node = {int(n): i for i, n in enumerate(spans.node_id.tolist())}
    flow_src, flow_dst = {}, {}
    for track, proc, name, start, end, args, fo, fi in got:
        if track == "critical path":
            continue
        i = by_node[args["node_id"]]
        assert proc == f"rank {int(spans.rank[i])}" and name == spans.names[spans.name[i]]
        assert (start, end) == (int(spans.start_ns[i]), int(spans.end_ns[i]))
        want = {"node_id": int(spans.node_id[i]), "kind": ("compute", "cpu", "memory", "collective", "send", "recv",
                                                         "other", "phase")[spans.kind[i]]}
        if spans.bytes[i] > 0:
            want["bytes"] = int(spans.bytes[i])
        if spans.peer[i] >= 0:
            want["peer"] = int(spans.peer[i])
        for key, col in (("group", spans.group), ("algorithm", spans.algorithm)):
            if col[i] >= 0:
                want[key] = spans.strings[col[i]]
        assert args == want
        flow_src.update({f: int(spans.node_id[i]) for f in fo})
        flow_dst.update({f: int(spans.node_id[i]) for f in fi})
    assert set(flow_src) == set(flow_dst) and len(flow_src) == info["flows"]
    assert {(flow_src[f], flow_dst[f]) for f in flow_src} == expected_flows(spans)
    assert max(len(fo) for *_, fo, _ in got) == 7  # the all-reduce's last member: one arrow to each other rank
    assert [ts for ts, _ in t.events] == sorted(ts for ts, _ in t.events)


def test_expanded_classes_draw_flows_between_the_expanded_ranks(tmp_path):
    """Two symmetric classes (rows made here as a symmetric simulation's would be): ranks 0 and 2
    simulated as 0, ranks 1 and 3 as 1.  Each computes, then all four all-reduce (one match),
    then the k-th member of class 0 sends to the k-th member of class 1."""
    b = SpanBuilder(nranks=4)
    for rep, late in ((0, 0), (1, 40)):
        c = b.add(rep, "compute", 0, 100 + late, "fwd", "compute", node_id=10 * rep + 1)
        ar = b.add(rep, "comm", 100 + late, 200 - late, "allreduce", "collective", node_id=10 * rep + 2, match=1)
        b.flow(c, ar, "dependency")
    b.add(0, "comm", 300, 20, "send", "send", node_id=3, peer=1, match=2)
    b.add(1, "comm", 310, 20, "recv", "recv", node_id=13, peer=0, match=2)
    b.ranks_of.update({0: [0, 2], 1: [1, 3]})
    info = write_timeline(b.build(), tmp_path / "x.pftrace", expand=True, critical=False)
    got = slices(read(tmp_path / "x.pftrace"))
    where = {}
    for _, proc, name, *_rest, fo, fi in got:
        for f in fo:
            where.setdefault(f, [None, None])[0] = (int(proc.split()[1]), name)
        for f in fi:
            where.setdefault(f, [None, None])[1] = (int(proc.split()[1]), name)
    arrows = sorted(tuple(v) for v in where.values())
    own = [((r, "fwd"), (r, "allreduce")) for r in range(4)]
    # the all-reduce: from the last to arrive (class 1's copies start at 140) to every other rank
    coll = [a for a in arrows if a[0][1] == a[1][1] == "allreduce"]
    assert len(coll) == 3 and len({a[0] for a in coll}) == 1 and coll[0][0][0] in (1, 3)
    assert {a[1][0] for a in coll} | {coll[0][0][0]} == {0, 1, 2, 3}
    assert [a for a in arrows if a[0][1] == "fwd"] == own
    assert [a for a in arrows if a[0][1] in ("send", "recv")] == [((1, "recv"), (0, "send")), ((3, "recv"), (2, "send"))]
    assert info["flows"] == len(arrows) == 4 + 3 + 2


def test_queue_counters_count_the_chunk_phases_in_flight(tmp_path):
    """A collective's chunk phases on a queue track (rows made here as the simulator records
    them): the queue's counter is the number of phases in flight at each change."""
    b = SpanBuilder()
    b.add(0, "comm", 0, 250, "allreduce", "collective", match=1)
    for start, end in ((0, 100), (50, 150), (200, 250)):
        b.add(0, "dim 0 queue", start, end - start, "allreduce chunk", "phase")
    for name in ("t.pftrace", "t.json"):
        info = write_timeline(b.build(), tmp_path / name, critical=False)
        assert info["counters"] == 6 + 2
    t = read(tmp_path / "t.pftrace")
    values = [(ts, ev.counter_value) for ts, ev in t.events if ev.type == ev.TYPE_COUNTER
              and t.tracks[ev.track_uuid].name == "dim 0 queue in flight"]
    assert values == [(0, 1), (50, 2), (100, 1), (150, 0), (200, 1), (250, 0)]
    data = json.loads((tmp_path / "t.json").read_text())
    queue = [(e["ts"], e["args"]["ops"]) for e in data["traceEvents"]
             if e["ph"] == "C" and e["name"] == "dim 0 queue in flight"]
    assert queue == [(t / 1000, v) for t, v in values]
