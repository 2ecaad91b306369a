"""Replays of the recorded PyTorch fixtures (2 gloo ranks on 127.0.0.1): coverage, what the
workers observed of every collective, the result's shape, timeline, repeats and node order.

Each replay starts two workers (each imports torch), so one replay per module fixture is shared
by several tests.  Expected sizes come from the recording scripts
(plugins/chakra-pytorch/recording/record_ddp.py and record_collectives.py)."""

from __future__ import annotations

import json
import statistics

import pytest
import torch

import chakra_core
from chakra_core import SPAN_KINDS, CommType, NodeAttrs, NodeType, open_traceset
from chakra_core.system import load_system

#: record_collectives.py's SIZES (float32 elements) as Chakra sizes per rank, in bytes
COLL_BYTES = {
    "ALL_REDUCE": (1000 + 150) * 4, "BROADCAST": 200 * 4, "ALL_GATHER": (30 + 40) * 4,
    "REDUCE_SCATTER": (50 * 2 + 60 * 2) * 4, "ALL_TO_ALL": (70 * 2 + 80 * 2) * 4, "REDUCE": 90 * 4,
    "GATHER": 100 * 4, "SCATTER": 110 * 4, "BARRIER": 0,
}
COLL_COUNT = {"ALL_REDUCE": 2, "BROADCAST": 1, "ALL_GATHER": 2, "REDUCE_SCATTER": 2, "ALL_TO_ALL": 2,
              "REDUCE": 1, "GATHER": 1, "SCATTER": 1, "BARRIER": 1}
#: sends of record_collectives.py: 0->1 120, 1->0 130, batch both ways 140 (elements)
P2P_BYTES = (120 + 130 + 140 + 140) * 4


@pytest.fixture(scope="module")
def ddp(recorded, tmp_path_factory):
    """The DDP fixture replayed with a timeline and its spans written under ``out/``, one warm-up
    and two measured iterations."""
    tl = tmp_path_factory.mktemp("ddp") / "timeline.json"
    result = chakra_core.emulate(str(recorded["ddp"]), timeline=str(tl), output=str(tl.parent / "out"),
                                 options={"repeats": 2, "seed": 3, "spans": True})
    return result, tl


@pytest.fixture(scope="module")
def collectives(recorded):
    """The every-collective fixture replayed with the backend's primitives."""
    return chakra_core.emulate(str(recorded["collectives"]), options={"warmup": 0})


@pytest.fixture(scope="module")
def composed(recorded):
    """The every-collective fixture with every collective kind composed from other primitives, and
    no memory for real operators."""
    kinds = [c.name for c in CommType]
    return chakra_core.emulate(str(recorded["collectives"]),
                               options={"warmup": 0, "compose": kinds, "real_memory_mb": 0})


def _trace_comm(path):
    """(rank, id) -> (kind, comm_size, pg_name) of every collective, read from the .et files."""
    out = {}
    ts = open_traceset(str(path))
    for rt in ts:
        for n in rt.nodes():
            if n.type == NodeType.COMM_COLL_NODE:
                ix = NodeAttrs(n)
                out[(rt.rank, n.id)] = (CommType(ix.get_int("comm_type")).name, ix.get_int("comm_size"),
                                        ts.group_members(ix.get_str("pg_name", "")))
    return out


def test_ddp_covers_every_node_and_observes_the_gradient_all_reduce(ddp, recorded):
    result, _ = ddp
    s = result.summary
    assert s["coverage"] == 1.0
    assert s["backend"] == "gloo" and s["device"] == "cpu"
    # 676 float32 parameters in one bucket: one all-reduce of 2704 bytes per rank on ranks 0, 1
    assert s["collectives"]["ALL_REDUCE"] == {"count": 2, "bytes": 2 * 2704}
    groups = {tuple(n["observed"]["group"]) for n in s["nodes"] if "observed" in n}
    assert groups == {(0, 1)}
    assert 0 < s["real_ops"] < 1
    assert sum(n["how"] == "real" for n in s["nodes"]) > 50
    # the converter's idle gaps and hand-offs to gloo's workers (not CPU ops) wait, never run kernels
    idle = [n for n in s["nodes"] if n["name"] == "[idle]"]
    assert idle and {n["how"] for n in idle} == {"host"}
    assert not any(n["how"] == "kernel" for n in s["nodes"])


def test_observed_collectives_match_the_trace_per_node(collectives, recorded):
    trace = _trace_comm(recorded["collectives"])
    seen = {(n["rank"], n["id"]): n["observed"] for n in collectives.summary["nodes"] if n["kind"] == "collective"}
    assert seen.keys() == trace.keys()
    for key, (kind, size, members) in trace.items():
        assert (seen[key]["kind"], seen[key]["bytes"], seen[key]["group"]) == (kind, size, members), key
        assert not seen[key]["composed"]


@pytest.mark.parametrize("which", ["collectives", "composed"])
def test_every_collective_kind_ran_with_its_recorded_size(which, request):
    result = request.getfixturevalue(which)
    s = result.summary
    assert s["coverage"] == 1.0
    want = {k: {"count": 2 * COLL_COUNT[k], "bytes": 2 * COLL_BYTES[k]} for k in COLL_BYTES}
    want["SEND"] = want["RECV"] = {"count": 4, "bytes": P2P_BYTES}
    assert s["collectives"] == dict(sorted(want.items()))
    roots = {n["observed"]["root"] for n in s["nodes"]
             if n.get("observed", {}).get("kind") in ("BROADCAST", "REDUCE", "GATHER", "SCATTER")}
    assert roots == {0}


def test_composed_collectives_are_marked(composed):
    s = composed.summary
    marked = [n for n in s["nodes"] if n["kind"] == "collective"]
    assert marked and all(n["composed"] for n in marked)
    assert s["composed"] == {k: 2 * COLL_COUNT[k] for k in COLL_COUNT}
    # composed as asked, not for want of the primitive (the note said the backend lacked them)
    assert any(note.startswith("collectives composed from the backend's primitives, as option compose asks")
               for note in composed.notes)
    assert not any("backend lacks" in note for note in composed.notes)
    prims = {p for n in marked for p in n["observed"]["primitives"]}
    assert prims <= {"allreduce", "send", "recv"}


def test_real_operators_stay_within_their_memory_budget(collectives, composed):
    assert collectives.summary["real_ops"] > 0.5
    assert composed.summary["real_ops"] < collectives.summary["real_ops"]
    # with no memory only operators without tensor inputs are built: the script's torch.ones(n)
    assert {n["name"] for n in composed.summary["nodes"] if n["how"] == "real"} <= {"aten::ones", "aten::empty"}
    assert any("would pass real_memory_mb" in note for note in composed.notes)


def test_result_has_the_simulators_shape(ddp, recorded):
    result, _ = ddp
    sim = chakra_core.simulate(str(recorded["ddp"]))
    # expected_ns is that simulation: the defaults it took are said (they were dropped)
    assert [f"expected_ns: {note}" for note in sim.notes] == [n for n in result.notes if n.startswith("expected_ns: ")]
    assert any(n.startswith("expected_ns: no network given: the default") for n in result.notes)
    simulator_only = {"congestion", "comm", "symmetry", "events", "simpy_events", "events_per_s", "system"}
    assert set(sim.summary) - simulator_only <= set(result.summary)
    assert set(sim.ranks[0]) - {"simulated_as"} <= set(result.ranks[0])
    assert result.kind == "emulator" and result.backend == "emulator"
    s = result.summary
    assert s["expected_ns"] == sim.summary["finish_ns"]
    assert s["error"] == pytest.approx(s["finish_ns"] / s["expected_ns"] - 1)
    for row in result.ranks:  # the core's breakdown, averaged over the repeats (each part rounded down)
        parts = row["compute_ns"] + row["exposed_comm_ns"] + row["exposed_mem_ns"] + row["idle_ns"]
        assert row["finish_ns"] - 4 <= parts <= row["finish_ns"]
        assert 0 <= row["idle_ns"] <= row["finish_ns"]
        assert row["nodes"] == len([n for n in s["nodes"] if n["rank"] == row["rank"]])


def test_repeats_report_mean_and_spread(ddp):
    result, _ = ddp
    rep = result.summary["repeats"]
    assert rep["count"] == 2 and len(rep["finish_ns"]) == 2
    assert rep["mean_ns"] == pytest.approx(statistics.fmean(rep["finish_ns"]))
    assert rep["stdev_ns"] == pytest.approx(statistics.stdev(rep["finish_ns"]))
    assert result.summary["finish_ns"] == int(rep["mean_ns"])
    assert len(rep["start_late_ns"]) == 2 and min(rep["start_late_ns"]) >= 0


def test_critical_path_ends_at_the_last_node_to_finish(ddp):
    result, _ = ddp
    cp = result.summary["critical_path"]
    nodes = cp["nodes"]
    assert cp["length"] == len(nodes) > 10
    assert nodes[-1]["end_ns"] == result.summary["repeats"]["finish_ns"][-1]
    # along one rank the path follows dependencies, so its ends only grow; where it changes rank at a
    # collective, the members' ends differ by when each rank saw the collective done
    assert all(a["end_ns"] <= b["end_ns"] for a, b in zip(nodes, nodes[1:]) if a["rank"] == b["rank"])
    assert "collective" in cp["ns_by_kind"]


def test_critical_path_crosses_ranks_at_a_collective(ddp):
    """Which rank arrives last at an all-reduce depends on the run; the path must always take the
    member that arrived last, so it crosses ranks exactly where the rank it walks arrived first."""
    result, _ = ddp
    spans = result.spans
    cp = result.summary["critical_path"]
    assert cp["finish_ns"] == result.summary["repeats"]["finish_ns"][-1] == int(spans.end_ns.max())
    assert sum(cp["ns_by_category"].values()) == cp["finish_ns"]
    coll = [i for i in range(len(spans)) if spans.kind[i] == SPAN_KINDS.index("collective")]
    members: dict[int, list[int]] = {}
    for i in coll:
        members.setdefault(int(spans.match[i]), []).append(i)
    # every all-reduce of one rank is matched by the same call of the other, with the same size
    assert members and all(sorted(spans.rank[m].tolist()) == [0, 1] and len({int(spans.bytes[k]) for k in m}) == 1
                           for m in members.values())
    match_of = {(int(spans.rank[i]), int(spans.node_id[i])): int(spans.match[i]) for i in coll}
    on_path = [n for n in cp["nodes"] if n["kind"] == "collective"]
    assert on_path
    for n in on_path:
        latest = max(int(spans.start_ns[k]) for k in members[match_of[(n["rank"], n["id"])]])
        assert n["start_ns"] == latest
    hops = [a for a, b in zip(cp["nodes"], cp["nodes"][1:]) if a["rank"] != b["rank"]]
    assert len(hops) <= cp["crossings"] and all(a["kind"] == "collective" for a in hops)
    assert {n["rank"] for n in cp["nodes"]} == ({0, 1} if cp["crossings"] else {cp["nodes"][-1]["rank"]})


def test_report_reads_the_emulator_result(ddp, chakra_cli):
    result, tl = ddp
    out = tl.parent / "out"
    assert str(out / "spans.npz") in result.files
    code, text, err = chakra_cli("report", "--result", out / "result.json", "--json")
    assert code == 0, err
    d = json.loads(text)
    assert [r["rank"] for r in d["ranks"]] == [0, 1]
    assert d["critical_path"]["finish_ns"] == result.summary["critical_path"]["finish_ns"]
    assert chakra_core.report(result=out / "result.json").to_dict()["ranks"] == d["ranks"]


def test_diff_reads_the_emulator_result_without_its_spans(ddp, chakra_cli, tmp_path):
    # the emulator's summary.collectives is an object of kinds, the simulators' a list: diff of a
    # result without spans called the emulator's own result.json malformed
    result, tl = ddp
    data = json.loads((tl.parent / "out" / "result.json").read_text())
    data.pop("files", None)  # no way to its spans.npz: the rows' totals are compared
    (tmp_path / "result.json").write_text(json.dumps(data))
    code, text, err = chakra_cli("diff", tmp_path / "result.json", tmp_path / "result.json", "--json")
    assert code == 0, err
    d = json.loads(text)
    assert "no spans" in d["notes"][0]
    sent = sum(c["bytes"] for c in data["summary"]["collectives"].values())
    assert sent > 0 and d["metrics"]["communication.bytes"] == {"a": sent, "b": sent, "delta": 0, "ratio": 1.0}


def test_timeline_is_a_chrome_trace_of_every_node(ddp):
    result, tl = ddp
    assert result.timeline == str(tl) and str(tl) in result.files
    events = json.loads(tl.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X" and e["pid"] in (0, 1)]
    assert len(spans) == len(result.summary["nodes"])
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"cpu", "comm"} <= names <= {"cpu", "compute", "comm", "other"}
    procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs[0] == "rank 0" and procs[1] == "rank 1" and "chakra emulator: critical path" in procs.values()


def test_same_seed_gives_the_same_node_order_from_the_cli(ddp, recorded, chakra_cli):
    result, _ = ddp
    status, out, err = chakra_cli("-q", "emulate", recorded["ddp"], "-O", "seed=3", "-O", "warmup=0", "--json")
    assert status == 0, err
    again = json.loads(out)

    def order(nodes):
        return sorted((n["rank"], n["issued"], n["id"]) for n in nodes)

    assert order(again["summary"]["nodes"]) == order(result.summary["nodes"])
    assert again["summary"]["coverage"] == 1.0
    assert again["provenance"]["implementations"][-1]["name"] == "emulator"


def test_the_system_files_warnings_are_notes(recorded, tmp_path):
    # an ASTRA-sim system.json naming three keys: ASTRA-sim's defaults for the others are warnings
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"preferred-dataset-splits": 2, "local-mem-bw": 50,
                                  "all-reduce-implementation": ["ring"]}))
    warnings = load_system(str(system)).warnings
    assert any("scheduling-policy" in w for w in warnings)
    result = chakra_core.emulate(str(recorded["ddp"]), system=str(system), options={"warmup": 0})
    assert result.notes[:len(warnings)] == warnings


class _Recorder:
    """A process group that records the bytes of each send and receive (no peers needed)."""

    def __init__(self) -> None:
        self.sent: dict[int, int] = {}
        self.received: dict[int, int] = {}

    def send(self, bufs, peer, tag):
        self.sent[peer] = bufs[0].numel() * bufs[0].element_size()
        return None

    def recv(self, bufs, peer, tag):
        self.received[peer] = bufs[0].numel() * bufs[0].element_size()
        return None


@pytest.mark.parametrize("size, sent, received", [
    (40, {1: 12, 2: 8, 3: 8}, {1: 12, 2: 12, 3: 12}),  # 10 float32 split 3, 3, 2, 2 (was 8 bytes to each)
    (8, {1: 4}, {1: 4, 2: 4, 3: 4}),                    # 2 float32 split 1, 1, 0, 0 (was 0 bytes to each)
    (10, {1: 3, 2: 2, 3: 2}, {1: 3, 2: 3, 3: 3}),        # 10 bytes split 3, 3, 2, 2
])
def test_a_composed_all_to_all_moves_the_pieces_the_primitive_does(size, sent, received):
    # rank 0 of 4: member j gets piece j of rank 0's buffer, and rank 0 gets piece 0 of each
    # member's (the primitive's split: the first size % p elements one more)
    from chakra_emulator.collectives import Comms

    comms = object.__new__(Comms)  # no process group: the recorder stands for the world's
    comms.rank, comms.device, comms._buffers = 0, torch.device("cpu"), {}
    comms._elem = 4 if size % 4 == 0 else 1
    comms.world_pg = recorder = _Recorder()
    comms._all_to_all(size, [0, 1, 2, 3])
    assert recorder.sent == sent and recorder.received == received
    assert sum(sent.values()) == size - received[1]  # all of its buffer but its own piece
