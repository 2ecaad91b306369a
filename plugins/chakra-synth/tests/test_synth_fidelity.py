"""``chakra compare``: closed-form checks of the report, and the fidelity of samples of the
recorded sources (step time within 5 %, KS < 0.1 per kind, histogram distance < 0.05)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chakra_core as chakra
from chakra_core import CommType, GlobalMetadata, MemoryRank, Node, NodeType, TraceSet, make_attr

ROOT = Path(__file__).resolve().parents[3]


def _chain(durations, coll_size=None):
    """One rank: compute nodes of ``durations`` us in a chain, then an all-reduce (hand-made:
    closed-form expectations)."""
    nodes = []
    for i, d in enumerate(durations, start=1):
        n = Node(id=i, name=f"c{i}", type=NodeType.COMP_NODE, duration_micros=d)
        if i > 1:
            n.data_deps.append(i - 1)
        nodes.append(n)
    if coll_size is not None:
        c = Node(id=len(nodes) + 1, name="ar", type=NodeType.COMM_COLL_NODE)
        c.attr.extend([make_attr("comm_type", int(CommType.ALL_REDUCE)), make_attr("comm_size", coll_size)])
        c.data_deps.append(len(nodes))
        nodes.append(c)
    return TraceSet([MemoryRank(0, GlobalMetadata(version="0.0.4"), nodes)])


def test_report_figures_in_closed_form():
    a = _chain([10, 20, 30, 40], coll_size=1000)
    b = _chain([10, 20, 30, 40, 50, 60], coll_size=3000)
    r = chakra.compare(a, b, simulate=False)
    # kinds: A = 4 COMP + 1 COLL, B = 6 COMP + 1 COLL -> TV distance = |4/5 - 6/7| = 2/35
    assert r["kinds"]["histogram_distance"] == pytest.approx(2 / 35, abs=1e-6)
    comp = r["durations"]["COMP_NODE"]
    # ECDFs of {10..40} and {10..60}: largest gap at 40 (1 - 4/6)
    assert comp["ks"] == pytest.approx(1 / 3, abs=1e-6)
    assert comp["mean_a_us"] == 25 and comp["mean_b_us"] == 35
    assert r["sizes"]["COMM_COLL_NODE:ALL_REDUCE"]["wasserstein_bytes"] == 2000
    g = r["graph"]
    assert (g["depth"]["a"], g["depth"]["b"]) == (5, 7)
    assert (g["width"]["a"], g["width"]["b"]) == (1, 1)
    assert (g["critical_path_us"]["a"], g["critical_path_us"]["b"]) == (100, 210)
    assert g["critical_path_us"]["relative_error"] == pytest.approx(1.1)
    assert r["collectives"]["a"] == {"ALL_REDUCE@1": {"count": 1, "bytes": 1000}}
    assert "simulated" not in r


def test_one_value_samples_compare_without_a_warning():
    """A kind with one node on each side (one all-reduce each) has a KS statistic of 0 when the
    values are equal and 1 when not, and no numeric warning from the p-value the report drops."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = chakra.compare(_chain([10], coll_size=1000), _chain([10], coll_size=1000), simulate=False)
        apart = chakra.compare(_chain([10]), _chain([30]), simulate=False)
    assert same["durations"]["COMM_COLL_NODE:ALL_REDUCE"]["ks"] == 0
    assert apart["durations"]["COMP_NODE"]["ks"] == 1


def test_identical_sets_have_zero_distance(recorded):
    r = chakra.compare(str(recorded["ddp"]), str(recorded["ddp"]))
    assert r["kinds"]["histogram_distance"] == 0 and r["max_ks"] == 0
    assert r["simulated"]["relative_error"] == 0


def test_sweep_reports_rank_correlation(recorded, tmp_path):
    systems = []
    for gbps, ns in ((1, 50_000), (10, 5_000), (100, 500)):
        p = tmp_path / f"s{gbps}.yaml"
        p.write_text(f"network:\n  - {{topology: Ring, npus_count: 8, bandwidth: {gbps}, latency: {ns}}}\n")
        systems.append(str(p))
    model = tmp_path / "m.json"
    chakra.synth_fit([str(recorded["gpt3_text"])], model)
    chakra.synth_sample(model, tmp_path / "s" / "", seed=2)
    r = chakra.compare(str(recorded["gpt3_text"]), str(tmp_path / "s"), systems=systems)
    sweep = r["simulated"]["sweep"]
    assert [row["system"] for row in sweep] == systems
    assert r["simulated"]["spearman"] == pytest.approx(1.0)
    assert sweep[0]["a_ns"] > sweep[1]["a_ns"] > sweep[2]["a_ns"]  # slower network, longer step
    assert all(row["relative_error"] < 0.05 for row in sweep)


#: the recorded sources of conftest.SOURCES
SOURCES = ["collectives", "ddp", "ddp_buckets", "gpt3_text", "jax_mesh8", "resnet50_text", "transformer"]


@pytest.mark.parametrize("source", SOURCES)
def test_structural_samples_are_faithful(recorded, tmp_path, source):
    model = tmp_path / "m.json"
    chakra.synth_fit([str(recorded[source])], model)
    chakra.synth_sample(model, tmp_path / "s" / "", seed=1)
    r = chakra.compare(str(recorded[source]), str(tmp_path / "s"))
    assert r["simulated"]["relative_error"] < 0.05
    assert r["kinds"]["histogram_distance"] < 0.05
    assert r["max_ks"] < 0.1, {k: v["ks"] for k, v in r["durations"].items()}


def test_cli_compare_json_and_table(recorded, tmp_path, chakra_cli):
    model = tmp_path / "m.json"
    chakra.synth_fit([str(recorded["ddp"])], model, synthesizer="markov")
    chakra.synth_sample(model, tmp_path / "s" / "")
    status, out, _ = chakra_cli("compare", recorded["ddp"], tmp_path / "s", "--json")
    r = json.loads(out)
    assert status == 0 and r["simulated"]["relative_error"] > 0
    assert r["graph"]["depth"]["b"] == r["b"]["nodes"] // 2  # the baseline is one chain per rank
    status, out, _ = chakra_cli("compare", recorded["ddp"], tmp_path / "s")
    assert status == 0 and "relative error" in out and "histogram distance" in out


def test_an_emulator_step_time_is_worded_as_a_measured_replay(chakra_register, chakra_cli, tmp_path):
    """The emulator replays on this machine: its step times are not "simulated on a system"."""

    class Replay(chakra.Backend):
        kind = "emulator"
        description = "a stand-in replay: 1 us per node"
        options: dict = {}

        def run(self, traces, options, output):
            nodes = sum(1 for rt in traces for _ in rt.nodes())
            return chakra.Result("replay", "emulator", {"finish_ns": 1000 * nodes})

    class Plugin:
        @chakra.hookimpl
        def chakra_register_backends(self, register):
            register("replay", Replay)

    chakra_register(Plugin(), name="replay")
    _chain([10, 20]).write(tmp_path / "a" / "")
    _chain([10, 20, 30, 40]).write(tmp_path / "b" / "")
    r = chakra.compare(str(tmp_path / "a"), str(tmp_path / "b"), backend="replay")
    assert r["simulated"]["backend"] == "replay" and r["simulated"]["kind"] == "emulator"
    status, out, _ = chakra_cli("compare", tmp_path / "a", tmp_path / "b", "--backend", "replay")
    assert status == 0 and "step time measured by a replay (replay, on this machine): A 2.00 us, B 4.00 us" in out
    assert "simulated" not in out and "default system" not in out
    # a system file would change nothing of what it measures: refused, not swept over
    status, _, err = chakra_cli("compare", tmp_path / "a", tmp_path / "b", "--backend", "replay",
                                "--system", ROOT / "examples" / "system" / "any_size.yaml")
    assert status == 2 and "--system: backend 'replay' replays both sets on this machine" in err
    with pytest.raises(chakra.ConfigError, match="leave --system out"):
        chakra.compare(str(tmp_path / "a"), str(tmp_path / "b"), backend="replay", systems=["x.yaml"])
