"""YAML pipelines: complete validation before running, and a full run with result files."""

from __future__ import annotations

import json

import pytest
import yaml

from chakra_core.base._errors import ConfigError
from chakra_core.pipeline._pipeline import load_pipeline, run_pipeline
from chakra_core.trace._attrs import get_int
from chakra_core.trace._traceset import open_traceset


@pytest.fixture
def et_set(tmp_path, dp_set):
    dp_set.write(tmp_path / "in" / "job")
    return tmp_path


def _pipe(tmp_path, doc):
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return p


def test_run_transforms_and_two_backends(et_set, chakra_host):
    p = _pipe(et_set, {
        "requires": ["chakra-core>=0.1"],
        "input": {"paths": ["in/job"]},
        "transforms": [{"name": "scale", "options": {"compute_speedup": 2, "comm_scale": 0.5}}],
        "backends": [{"name": "et", "output": "out/et"}, {"name": "json", "options": {"lines": True}}],
    })
    summary = run_pipeline(p)
    assert [b["name"] for b in summary["backends"]] == ["et", "json"]
    res = json.loads((et_set / "out/et/result.json").read_text())
    assert res["summary"] == {"ranks": 2} and len(res["files"]) == 2
    assert (et_set / "out/json/result.json").exists() and (et_set / "out/json/trace.1.jsonl").exists()
    before = {n.name: n for n in open_traceset(str(et_set / "in/job"))[0].nodes()}
    after = {n.name: n for n in open_traceset(str(et_set / "out/et/trace"))[0].nodes()}
    assert after["bwd_2"].duration_micros == round(before["bwd_2"].duration_micros / 2)
    assert get_int(after["allreduce_2"], "comm_size") == get_int(before["allreduce_2"], "comm_size") // 2


def test_observer_hooks_see_every_stage(et_set, chakra_register):
    from chakra_core.hookspecs import hookimpl

    seen = []

    class Observer:
        @hookimpl
        def chakra_stage_started(self, stage, name, context):
            seen.append(("start", stage, name))

        @hookimpl
        def chakra_stage_finished(self, stage, name, context, result, seconds):
            seen.append(("end", stage, name))

    chakra_register(Observer(), name="observer")
    run_pipeline({"input": {"paths": [str(et_set / "in/job")]}, "backends": [{"name": "et", "output": str(et_set / "o")}]})
    assert seen == [("start", "input", "et"), ("end", "input", "et"), ("start", "backend", "et"), ("end", "backend", "et")]


@pytest.mark.parametrize("doc, match", [
    ({"input": {"paths": ["in/job"]}, "backend": []}, r"unknown key 'backend' in the pipeline \(did you mean 'backends'\?\)"),
    ({"input": {"paths": ["in/job"]}, "backends": [{"name": "simpyy"}]}, r"unknown backend 'simpyy'.*installed: "),
    ({"input": {"paths": ["in/job"]}, "backends": [{"name": "et", "options": {"prefx": "a"}}]},
     r"unknown option 'prefx' \(did you mean 'prefix'\?\)"),
    ({"input": {"paths": ["in/job"]}, "backends": [{"name": "et", "options": {"compress": "maybe"}}]},
     r"option 'compress' wants bool"),
    ({"input": {"paths": ["in/job"]}, "transforms": [{"name": "scale", "options": {"compute_speedup": "fast"}}],
      "backends": [{"name": "et"}]}, r"wants float"),
    ({"input": {"paths": "in/job"}, "backends": "et"}, r"'backends' must be a non-empty list"),
    ({"input": {"paths": ["in/job"]}, "backends": [{"name": "et"}], "requires": ["chakra-nonexistent>=1"]},
     r"chakra-nonexistent is not installed"),
    ({"input": {"paths": ["in/job"]}, "backends": [{"name": "et"}], "requires": ["chakra-core>=99"]},
     r"chakra-core 0\.1\.0 is installed but chakra-core>=99 is required"),
    ({"input": {"paths": 3}, "backends": [{"name": "et"}]}, r"input.paths must be"),
    ([1, 2], r"the pipeline must be a mapping"),
])
def test_validation_before_anything_runs(et_set, chakra_host, doc, match):
    p = _pipe(et_set, doc)
    with pytest.raises(ConfigError, match=match):
        load_pipeline(p)
    assert not (et_set / "out").exists()


def test_malformed_yaml_names_the_line(et_set, chakra_cli):
    p = _pipe(et_set, "input:\n  paths: [in/job\nbackends: {\n")
    status, out, err = chakra_cli("run", p)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "p.yaml:line" in err and "malformed YAML" in err


def test_cli_run_wrong_types_exit_2(et_set, chakra_cli):
    p = _pipe(et_set, {"input": {"paths": ["in/job"]}, "backends": [{"name": "et", "options": {"compress": [1]}}]})
    status, _, err = chakra_cli("run", p)
    assert status == 2 and "compress" in err and err.count("\n") == 1


def test_cli_run_ok(et_set, chakra_cli):
    p = _pipe(et_set, {"input": {"paths": ["in/job"], "format": "et"}, "backends": [{"name": "et"}]})
    status, out, _ = chakra_cli("run", p)
    assert status == 0 and "et: " in out and "\nranks: 2\n" in out
    assert open_traceset(str(et_set / "out/et/trace")).ranks == [0, 1]
