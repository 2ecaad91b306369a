"""Timelines: Perfetto protobuf read back with Perfetto's own trace proto, Chrome JSON, selection.

The span sets are written by hand (closed-form times standing for a backend's records); the
protobuf is parsed with the ``perfetto`` package's published ``Trace`` message, not with our code.
"""

from __future__ import annotations

import json

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
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    tracks = {p.track_descriptor.uuid: p.track_descriptor for p in trace.packet if p.HasField("track_descriptor")}
    names = {}
    annotation_names = {}
    for p in trace.packet:
        if p.HasField("interned_data"):
            names.update({e.iid: e.name for e in p.interned_data.event_names})
            annotation_names.update({e.iid: e.name for e in p.interned_data.debug_annotation_names})
    events = [(p.timestamp, p.track_event) for p in trace.packet if p.HasField("track_event")]
    return trace, tracks, names, annotation_names, events


def slices(tracks, names, annotation_names, events):
    """Rebuild (track name, rank label, name, start, end, args) from begin/end pairs, checking
    that every track's slices nest properly."""
    stacks, out = {}, []
    for ts, ev in events:
        if ev.type == ev.TYPE_SLICE_BEGIN:
            args = {annotation_names[a.name_iid]: (a.string_value if a.HasField("string_value") else a.int_value)
                    for a in ev.debug_annotations}
            stacks.setdefault(ev.track_uuid, []).append((names[ev.name_iid], ts, args, list(ev.flow_ids),
                                                         list(ev.terminating_flow_ids)))
        elif ev.type == ev.TYPE_SLICE_END:
            name, start, args, fo, fi = stacks[ev.track_uuid].pop()
            assert ts >= start
            track = tracks[ev.track_uuid]
            parent = tracks.get(track.parent_uuid)
            out.append((track.name, parent.name if parent else "", name, start, ts, args, fo, fi))
    assert all(not s for s in stacks.values())
    return out


def test_perfetto_round_trip_tracks_args_flows_counters_and_path(tmp_path):
    spans = two_ranks()
    info = write_timeline(spans, tmp_path / "t.pftrace")
    assert info["format"] == "perfetto" and info["spans"] == info["total"] == len(spans) and not info["truncated"]
    trace, tracks, names, anames, events = read(tmp_path / "t.pftrace")
    got = slices(tracks, names, anames, events)
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
    _, tracks, names, anames, events = read(tmp_path / "w.pftrace")
    got = slices(tracks, names, anames, events)
    assert {g[1] for g in got} == {"rank 1"} and info["selected"] == 2
    assert sorted((g[2], g[3], g[4]) for g in got) == [("allreduce", 300, 340), ("fwd", 120, 300)]
    info = write_timeline(spans, tmp_path / "c.pftrace", max_spans=3)
    assert info["truncated"] and info["spans"] == 3 and "3 of 7" in info["notes"][0]
    _, _, names, _, events = read(tmp_path / "c.pftrace")
    assert any("truncated: 3 of 7" in names[ev.name_iid] for _, ev in events if ev.type == ev.TYPE_INSTANT)


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
    _, tracks, *_ = read_after(spans, tmp_path / "a.pftrace", expand=False)
    assert sorted(t.name for t in tracks.values() if t.HasField("process"))[0] == "chakra: critical path"
    assert any(t.name == "ranks 0-3 (simulated as 0)" for t in tracks.values())
    info = write_timeline(spans, tmp_path / "b.pftrace", expand=True)
    assert info["spans"] == 4
    _, tracks, *_ = read(tmp_path / "b.pftrace")
    assert {t.name for t in tracks.values() if t.HasField("process")} >= {f"rank {r}" for r in range(4)}


def read_after(spans, path, **kw):
    write_timeline(spans, path, **kw)
    return read(path)
