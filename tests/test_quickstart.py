"""End to end: the README's quick-start pipeline (text workload -> .et, simpy, astrasim)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from chakra_core.trace._stats import compute_stats
from chakra_core.trace._traceset import open_traceset
from chakra_core.validation._validate import validate

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_pipeline(tmp_path, chakra_pipeline):
    doc = yaml.safe_load((ROOT / "examples/quickstart/pipeline.yaml").read_text())
    for b in doc["backends"]:  # write under tmp_path instead of the repository's out/
        b["output"] = str(tmp_path / b["name"])
        if "timeline" in b.get("options", {}):
            b["options"]["timeline"] = str(tmp_path / "timeline.json")
    out = chakra_pipeline(doc, base_dir=ROOT / "examples/quickstart")
    results = {b["name"]: b["result"] for b in out["backends"]}
    traces = open_traceset(str(tmp_path / "et"))
    assert traces.ranks == list(range(8)) and validate(traces) == []
    stats = compute_stats(traces)
    sim = results["simpy"]
    finish = [r["finish_ns"] for r in sim["ranks"]]
    assert len(set(finish)) == 1  # data parallel: every rank finishes together
    # the run cannot be shorter than its compute chain, and communication is partly exposed
    assert finish[0] >= stats["longest_path_us"] * 1000
    assert sim["ranks"][0]["exposed_comm_ns"] == finish[0] - sim["ranks"][0]["compute_ns"]
    astra = tmp_path / "astrasim"
    assert {"system.json", "network.yml", "memory.json", "run.sh"} <= {p.name for p in astra.iterdir()}
    assert len(list((astra / "workload").glob("*.et"))) == 8
    assert json.loads((tmp_path / "simpy" / "result.json").read_text())["ranks"][0]["finish_ns"] == finish[0]
    assert json.loads((tmp_path / "timeline.json").read_text())["traceEvents"]
