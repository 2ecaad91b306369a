"""The backend through the plugin host, the CLI and YAML pipelines (text and PyTorch inputs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra_core import get_host, run_pipeline

ROOT = Path(__file__).resolve().parents[3]
EX = ROOT / "examples" / "system"
MIB = 1 << 20


def test_registered_as_a_simulator():
    impl = get_host().registry.get("backend", "simpy")
    assert impl.kind == "simulator"
    for opt in ("system", "network", "memory", "comm_groups", "timeline", "congestion", "symmetry"):
        assert opt in impl.options


def test_cli_simulate_prints_ranks_as_json(kit, tmp_path, chakra_cli):
    kit.same(8, lambda: [kit.coll(1, MIB)]).write(tmp_path / "set")
    tl = tmp_path / "tl.json"
    code, stdout, _ = chakra_cli("simulate", tmp_path / "set", "--system", EX / "astra/system.json",
                                 "--network", EX / "astra/network.yml", "--memory", EX / "astra/memory.json",
                                 "--json", "--timeline", tl)
    assert code == 0
    out = json.loads(stdout)
    assert [r["finish_ns"] for r in out["ranks"]] == [117780] * 8
    assert out["ranks"][3]["rank"] == 3 and out["ranks"][3]["exposed_comm_ns"] == 117780
    assert json.loads(tl.read_text())["traceEvents"]


def test_cli_bad_system_file_is_one_line_exit_2(kit, tmp_path, chakra_cli):
    kit.same(2, lambda: [kit.comp(1, 1)]).write(tmp_path / "set")
    bad = tmp_path / "system.json"
    bad.write_text('{"endpoint-delay": 0, "preferred-dataset-splits": 4}')
    code, _, err = chakra_cli("simulate", tmp_path / "set", "--system", bad)
    assert code == 2 and "endpoint-delay" in err and "Traceback" not in err


def test_text_workload_pipeline(tmp_path):
    pytest.importorskip("chakra_text")
    spec = {"input": {"format": "text", "paths": [str(ROOT / "examples/text/dlrm_like.txt")],
                      "options": {"npus": 8}},
            "backends": [{"name": "simpy", "output": str(tmp_path / "out"),
                          "options": {"system": str(EX / "system.yaml")}}]}
    out = run_pipeline(spec)
    res = out["backends"][0]["result"]
    assert len(res["ranks"]) == 8 and res["summary"]["finish_ns"] > 0
    kinds = {c["collective"] for c in res["summary"]["collectives"]}
    assert {"ALL_TO_ALL", "ALL_REDUCE"} <= kinds
    assert res["summary"]["symmetry"]["classes"] == 1  # every rank of the data-parallel set is alike


def test_example_pipeline_file_runs(tmp_path):
    pytest.importorskip("chakra_text")
    text = (EX / "simulate_text.yaml").read_text()
    spec = tmp_path / "pipe.yaml"
    spec.write_text(text.replace("../../out/simpy-dlrm", str(tmp_path / "o")))
    out = run_pipeline(spec, base_dir=EX)
    assert out["backends"][0]["result"]["timeline"] == str(tmp_path / "o" / "timeline.json")


@pytest.mark.parametrize("name", ["ddp", "collectives"])
def test_pytorch_traces_pipeline(tmp_path, name):
    pytest.importorskip("chakra_pytorch")
    data = ROOT / "plugins/chakra-pytorch/tests/data" / name
    spec = {"input": {"format": "pytorch", "paths": [str(data)]},
            "backends": [{"name": "simpy", "output": str(tmp_path / "out"), "options": {}}]}
    res = run_pipeline(spec)["backends"][0]["result"]
    assert [r["rank"] for r in res["ranks"]] == [0, 1]
    assert all(r["finish_ns"] > 0 for r in res["ranks"])
    assert res["summary"]["collectives"] and res["summary"]["critical_path"]["nodes"]
