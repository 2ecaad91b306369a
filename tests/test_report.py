"""``chakra report`` and ``chakra diff`` on a recorded trace (DDP on 2 gloo ranks, recorded by
plugins/chakra-pytorch/recording/record_ddp.py), simulated by the simpy backend."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import chakra_core as chakra
from chakra_core import NodeType
from chakra_core.base._human import duration
from chakra_core.system import load_system

pytest.importorskip("chakra_pytorch")
pytest.importorskip("chakra_simpy")

ROOT = Path(__file__).resolve().parents[1]
DDP = ROOT / "plugins/chakra-pytorch/tests/data/ddp"
SYSTEM = ROOT / "examples/system/any_size.yaml"


def compute_ns(traces, rank, factor=1, gaps=False):
    """What the replayed compute of ``rank`` takes: its COMP nodes' durations (CPU ops, one at a
    time), each at least 1 ns, times ``factor``; the idle gaps (``[idle]``: no compute, which the
    `scale` transform leaves as they are) left out, or with ``gaps`` counted unscaled."""
    return sum(max(n.duration_micros * 1000 * (1 if idle(n) else factor), 1) for n in traces[rank].nodes()
               if n.type == NodeType.COMP_NODE and (gaps or not idle(n)))


def idle(n):
    """An idle gap of the PyTorch input: no compute."""
    return n.name == "[idle]" and chakra.get_attr(n, "idle") is True


@pytest.fixture(scope="module")
def ddp_report():
    return chakra.report(str(DDP), what_if=["compute=2"])


def test_report_json_breakdown_and_critical_path(ddp_report):
    d = ddp_report.to_dict()
    traces = chakra.load_traces(str(DDP))
    assert [r["rank"] for r in d["ranks"]] == [0, 1]
    for r in d["ranks"]:
        assert r["compute_ns"] + r["exposed_comm_ns"] + r["exposed_mem_ns"] + r["idle_ns"] == r["finish_ns"]
        assert r["compute_ns"] == compute_ns(traces, r["rank"])
        # the recorded idle gaps are idle time: as much as they cover while nothing else runs
        gaps = compute_ns(traces, r["rank"], gaps=True) - compute_ns(traces, r["rank"])
        assert 0 < r["gap_ns"] <= min(gaps, r["idle_ns"])
    cp = d["critical_path"]
    assert sum(cp["ns_by_category"].values()) == cp["finish_ns"] == d["finish_ns"] == max(r["finish_ns"] for r in d["ranks"])
    kinds = {c["collective"] for c in d["collectives"]}
    assert "ALL_REDUCE" in kinds and "BROADCAST" in kinds
    ops = {o["name"] for o in d["top_operators"]}
    assert "aten::linear" in ops and "c10d::allreduce_" in ops
    w = d["what_if"][0]
    assert w["target"] == "compute" and w["estimated_finish_ns"] < d["finish_ns"]
    assert 0 < w["resimulated_finish_ns"] < d["finish_ns"]
    # the re-simulated compute of all ranks against the replayed durations of the set the
    # `scale` transform writes: as the factor asked for, so no note
    halved = chakra.transform(str(DDP), "scale", {"compute_speedup": 2})
    before = sum(compute_ns(traces, r, gaps=False) for r in traces.ranks)
    after = sum(compute_ns(halved, r, gaps=False) for r in halved.ranks)
    assert w["resimulated_factor"] == round(before / after, 4) and abs(before / after - 2) < 0.1
    assert "note" not in w


def test_a_what_if_the_re_simulation_cannot_apply_is_said(chakra_cli):
    """comm x2 on the DDP recording: nearly all of its communication is broadcasts, which the
    simulator replays from their recorded durations whatever their size, so halving the sizes
    leaves it as it was; the report printed the re-simulated step beside the estimate without a
    word. Compute x2 on a generated set whose compute nodes last 1 us each (the least a duration
    scales to) leaves compute as it was too."""
    code, out, err = chakra_cli("report", DDP, "--what-if", "comm=2", "--json")
    assert code == 0, err
    w = json.loads(out)["what_if"][0]
    assert w["resimulated_with"] == "scale comm_scale=0.5" and 1 <= w["resimulated_factor"] < 1.005
    assert w["note"].startswith("the re-simulation left comm as it was, not x2 faster: scale divides "
                                "communication sizes")
    tiny = chakra.generate("transformer", {"layers": 1, "hidden": 64, "heads": 4, "seq": 32, "vocab": 128,
                                           "micro_batches": 1, "tp": 2})
    assert {n.duration_micros for r in tiny.ranks for n in tiny[r].nodes() if n.type == NodeType.COMP_NODE} == {1}
    w = chakra.report(tiny, what_if=["compute=2"]).data["what_if"][0]
    assert w["resimulated_factor"] == 1.0 and w["resimulated_change_ns"] == 0
    assert w["note"].startswith("the re-simulation left compute as it was, not x2 faster: scale divides "
                                "compute durations (to no less than 1 us each)")


def test_replayed_broadcasts_count_their_bytes_and_give_no_bandwidth(chakra_cli):
    """The simulator replays the recorded broadcasts (they have durations): the report counts
    their comm_size (20 and 4 bytes on each rank) and derives no bandwidth from a replayed time;
    the all-reduce, timed by the network, keeps its bandwidth."""
    traces = chakra.load_traces(str(DDP))
    sizes = [chakra.get_int(n, "comm_size") for r in traces.ranks for n in traces[r].nodes()
             if n.type == NodeType.COMM_COLL_NODE and chakra.get_int(n, "comm_type") == chakra.CommType.BROADCAST]
    code, out, err = chakra_cli("report", DDP, "--system", SYSTEM, "--json")
    assert code == 0, err
    rows = {c["collective"]: c for c in json.loads(out)["collectives"]}
    b = rows["BROADCAST"]
    assert (b["count"], b["bytes"], b["replayed"]) == (len(sizes), sum(sizes), len(sizes)) == (4, 48, 4)
    assert b["algbw_GBps"] is None and b["algorithm"] == "recorded duration"
    a = rows["ALL_REDUCE"]
    assert a["replayed"] == 0 and a["algbw_GBps"] == round(a["bytes"] / a["transfer_ns"], 3) > 0
    code, out, err = chakra_cli("report", DDP, "--system", SYSTEM)
    assert code == 0, err
    assert re.search(r"^  BROADCAST +all +4 +48 B +1\.79 ms +0 ns +n/a  2 ranks 0-1", out, re.M), out
    assert "note: collectives replayed their recorded duration_micros" in out


def test_report_dataframes_and_text(ddp_report):
    pd = pytest.importorskip("pandas")
    df = ddp_report.dataframe()
    assert isinstance(df, pd.DataFrame) and list(df.index) == [0, 1]
    assert (df["compute_ns"] + df["exposed_comm_ns"] + df["exposed_mem_ns"] + df["idle_ns"] == df["finish_ns"]).all()
    frames = ddp_report.frames()
    assert len(frames["spans"]) == ddp_report.data["spans"]
    text = ddp_report.text()
    assert "critical path" in text and "top operators" in text and "c10d::allreduce_" in text


def test_injected_straggler_is_reported():
    traces = chakra.load_traces(str(DDP))

    def slow_rank0(rank, node):
        if rank == 0 and node.type == NodeType.COMP_NODE:
            node.duration_micros *= 3
        return node

    slowed = traces.map_nodes(slow_rank0)
    d = chakra.report(slowed).to_dict()
    found = [s for s in d["stragglers"] if s["rank"] == 0 and s["metric"] == "compute_ns"]
    assert found, d["stragglers"]
    assert found[0]["excess_ns"] == compute_ns(slowed, 0) - compute_ns(traces, 1)
    assert not any(s["rank"] == 1 for s in d["stragglers"])
    # the peer waits for the slow rank at the all-reduces: skew on the critical path
    assert d["critical_path"]["ns_by_category"]["skew_ns"] > 0


def test_diff_of_a_set_and_its_2x_compute_copy(tmp_path, chakra_cli):
    traces = chakra.load_traces(str(DDP))
    scaled = chakra.transform(traces, "scale", {"compute_speedup": 0.5})
    d = chakra.diff(traces, scaled).to_dict()
    m = d["metrics"]["compute_ns"]
    assert m["a"] == compute_ns(traces, 0) + compute_ns(traces, 1)
    assert m["b"] == compute_ns(traces, 0, 2) + compute_ns(traces, 1, 2)
    assert m["delta"] == m["b"] - m["a"] > 0
    assert d["metrics"]["finish_ns"]["b"] > d["metrics"]["finish_ns"]["a"]
    # the CLI on two result.json files written with their spans gives the same numbers
    for name, ts in (("a", traces), ("b", scaled)):
        chakra.simulate(ts, options={"spans": True}, output=tmp_path / name)
    code, out, err = chakra_cli("diff", tmp_path / "a" / "result.json", tmp_path / "b" / "result.json", "--json")
    assert code == 0, err
    assert json.loads(out)["metrics"]["compute_ns"] == m


def test_diff_counts_the_spans_of_every_rank_as_its_totals_do():
    """The DDP set against itself resized to 4 ranks (two copies of each rank): the symmetric
    run keeps one rank's spans per class, and `spans` stayed at 172 against 172 beside totals
    that double; counted for every rank a span stands for, it doubles too."""
    traces = chakra.load_traces(str(DDP))
    wide = chakra.transform(traces, "resize_dp", {"dp": 4})
    nodes = sum(sum(1 for n in traces[r].nodes() if n.type == NodeType.COMP_NODE) for r in traces.ranks)
    d = chakra.diff(traces, wide).to_dict()["metrics"]
    assert d["compute_ns"]["ratio"] == 2.0 and d["spans"]["ratio"] == 2.0
    assert d["spans"]["a"] >= nodes  # a span per node of each rank, compute ones included


def test_report_cli_on_a_result_and_errors(tmp_path, chakra_cli):
    chakra.simulate(str(DDP), options={"spans": True}, output=tmp_path / "r")
    code, out, err = chakra_cli("report", "--result", tmp_path / "r" / "result.json", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert set(d["ranks"][0]) >= {"rank", "finish_ns", "compute_ns", "exposed_comm_ns", "exposed_mem_ns", "idle_ns"}
    assert "critical_path" in d
    chakra.simulate(str(DDP), output=tmp_path / "nospans")
    code, _, err = chakra_cli("report", "--result", tmp_path / "nospans" / "result.json")
    assert code == 2 and "no spans" in err and "Traceback" not in err
    # a result without spans (as astrasim-run writes) still diffs, by its rows' totals
    code, out, err = chakra_cli("diff", tmp_path / "r" / "result.json", tmp_path / "nospans" / "result.json", "--json")
    assert code == 0, err
    dd = json.loads(out)
    assert dd["metrics"]["finish_ns"]["delta"] == 0 and dd["metrics"]["compute_ns"]["ratio"] == 1.0
    assert dd["operators"] == [] and "no spans" in dd["notes"][0]
    code, _, err = chakra_cli("report", str(DDP), "--what-if", "compute=zero")
    assert code == 2 and "TARGET=FACTOR" in err
    # a factor past a million times faster or slower: refused (1e-300 was an internal error, an
    # overflow of the estimate; 1e300 printed an estimate from a compute time of nothing)
    for factor in ("1e-300", "1e-7", "2e6", "nan", "inf", "-1"):
        code, _, err = chakra_cli("report", "--result", tmp_path / "r" / "result.json", "--what-if", f"compute={factor}")
        assert code == 2 and "FACTOR from 1e-06 to 1e+06" in err and "Traceback" not in err, (factor, err)
    code, out, err = chakra_cli("report", "--result", tmp_path / "r" / "result.json", "--what-if", "comm=1e-6", "--json")
    assert code == 0, err
    w = json.loads(out)["what_if"][0]
    assert w["estimated_change_ns"] == round(w["on_critical_path_ns"] * (1e6 - 1))


def test_simulation_flags_where_nothing_is_simulated_are_refused(tmp_path, chakra_cli):
    # --system, --backend and -O with --result (no trace set to re-simulate for a what-if), or a
    # diff of two results, were ignored without a word: the report was that of the run made
    chakra.simulate(str(DDP), options={"spans": True}, output=tmp_path / "r")
    res = tmp_path / "r" / "result.json"
    for extra, said in ((["--system", SYSTEM], "--system"), (["-O", "congestion=aware"], "-O"),
                        (["--backend", "emulator", "--system", SYSTEM], "--backend, --system")):
        code, _, err = chakra_cli("report", "--result", res, *extra)
        assert code == 2 and f"{said}: nothing is simulated with --result" in err and "Traceback" not in err, err
        code, _, err = chakra_cli("report", DDP, "--result", res, *extra)
        assert code == 2 and said in err, err
        code, _, err = chakra_cli("diff", res, res, *extra)
        assert code == 2 and f"{said}: nothing is simulated with two results" in err, err
    # where something is simulated they are taken: the what-if's re-simulation, a trace set's side
    code, out, err = chakra_cli("report", DDP, "--result", res, "--system", SYSTEM, "--what-if", "compute=2", "--json")
    assert code == 0 and "resimulated_finish_ns" in json.loads(out)["what_if"][0], err
    code, _, err = chakra_cli("diff", DDP, res, "--system", SYSTEM)
    assert code == 0, err


def test_simulate_and_stats_text(chakra_cli):
    code, out, err = chakra_cli("simulate", DDP)
    assert code == 0, err
    d = chakra.report(str(DDP)).to_dict()
    cats = d["critical_path"]["ns_by_category"]
    assert f"finish: {duration(d['finish_ns'])} over 2 ranks" in out  # the report's step, with its unit
    assert f"critical path: compute {duration(cats['compute_ns'])}" in out
    assert "collectives by kind:" in out and "ALL_REDUCE" in out and "c10d::broadcast_" in out
    code, out, _ = chakra_cli("stats", DDP)
    assert code == 0 and "longest path by recorded durations" in out and "chakra report" in out


def test_report_text_lists_the_system_files_warnings(tmp_path, chakra_cli):
    # an ASTRA-sim system.json naming three keys: ASTRA-sim's defaults for the others are warnings
    (tmp_path / "system.json").write_text(json.dumps({"preferred-dataset-splits": 2, "local-mem-bw": 50,
                                                          "all-reduce-implementation": ["ring"]}))
    warnings = load_system(str(tmp_path / "system.json")).warnings
    assert any("scheduling-policy" in w for w in warnings)
    code, out, err = chakra_cli("report", DDP, "--system", tmp_path / "system.json")
    assert code == 0, err
    assert all(f"note: {w}" in out for w in warnings)


def test_report_of_a_trace_set_opens_it_once(chakra_register):
    # the group shapes come from the set the simulation loaded: one input stage, one backend
    from chakra_core.hookspecs import hookimpl

    seen = []

    class Observer:
        @hookimpl
        def chakra_stage_started(self, stage, name, context):
            seen.append((stage, name))

    chakra_register(Observer(), name="observer")
    rep = chakra.report(str(DDP))
    assert seen == [("input", "pytorch"), ("backend", "simpy")]
    assert [r["rank"] for r in rep.to_dict()["ranks"]] == [0, 1]


def test_a_node_name_cannot_end_or_hide_the_pages_scripts(tmp_path, chakra_cli):
    # hand-made (our JSON form, which no framework writes): one node named to comment out or
    # close the <script> elements that hold the charts' data
    name = "x<!--<script></script>"
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "trace.0.json").write_text(json.dumps(
        {"format": "chakra-et-json", "version": 1, "rank": 0, "metadata": {"version": "0.0.4"},
         "nodes": [{"id": "1", "name": name, "type": "COMP_NODE", "duration_micros": "5"}]}))
    code, _, err = chakra_cli("report", tmp_path / "t", "-o", tmp_path / "r.html")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    specs = re.findall(r'<script type="application/json" id="[^"]*">(.*?)</script>', page, re.S)
    assert specs and not any("<" in s for s in specs)
    assert any(name in json.dumps(json.loads(s), ensure_ascii=False) for s in specs)


def test_report_of_a_result_refuses_another_trace_set(tmp_path, chakra_cli):
    """A trace set given with --result must be the one the result ran: the report otherwise mixed
    one job's times with another's process groups and what-if re-simulations, silently."""
    chakra.simulate(str(DDP), options={"spans": True}, output=tmp_path / "r")
    result = tmp_path / "r" / "result.json"
    code, out, err = chakra_cli("report", DDP, "--result", result, "--json")
    assert code == 0, err
    other = ROOT / "plugins/chakra-pytorch/tests/data/collectives"  # also 2 recorded ranks
    code, _, err = chakra_cli("report", other, "--result", result)
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"chakra report: error: {result}: the result is not a run of this trace set: its rank 0")
    # the same ids, one node renamed (through the wire format): its name is checked
    traces = chakra.load_traces(str(DDP))
    nodes = list(traces[0].nodes())
    renamed = next(n for n in nodes if n.type == NodeType.COMP_NODE).id
    (tmp_path / "renamed").mkdir()
    for rank in (0, 1):
        with chakra.EtWriter(tmp_path / "renamed" / f"trace.{rank}.et", traces[rank].metadata()) as w:
            for n in traces[rank].nodes():
                if rank == 0 and n.id == renamed:
                    n.name = "another_op"
                w.write(n)
    code, _, err = chakra_cli("report", tmp_path / "renamed", "--result", result)
    assert code == 2 and f"ran node {renamed} " in err and "'another_op' there" in err
    # another rank count
    code, _, err = chakra_cli("report", ROOT / "examples/text/dlrm_like.txt", "-I", "npus=4", "--result", result)
    assert code == 2 and "a run of 2 rank(s), the trace set" in err and "has 4" in err


def test_a_result_beside_the_spans_of_another_run_is_refused(tmp_path, chakra_cli):
    """spans.npz of one run beside result.json of another (both of 2 ranks) made the report's
    step time the other run's, and diff found a change between two copies of one result."""
    chakra.simulate(str(DDP), options={"spans": True}, output=tmp_path / "a")
    scaled = chakra.transform(str(DDP), "scale", {"compute_speedup": 0.5})
    chakra.simulate(scaled, options={"spans": True}, output=tmp_path / "b")
    (tmp_path / "mix").mkdir()
    (tmp_path / "mix" / "result.json").write_bytes((tmp_path / "a" / "result.json").read_bytes())
    (tmp_path / "mix" / "spans.npz").write_bytes((tmp_path / "b" / "spans.npz").read_bytes())
    finish = json.loads((tmp_path / "a" / "result.json").read_text())["summary"]["critical_path"]["finish_ns"]
    for cmd in (["report", "--result", tmp_path / "mix" / "result.json"],
                ["diff", tmp_path / "a" / "result.json", tmp_path / "mix" / "result.json"]):
        code, _, err = chakra_cli(*cmd)
        assert code == 2 and f"the result's critical path at {finish} ns: spans of another run" in err, err
