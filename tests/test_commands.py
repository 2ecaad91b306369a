"""The Python API of the commands: parity with the CLI, validation before running, observer
hooks for simulate/export, conversions counted, and the input-option hint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import chakra_core as chakra
from chakra_core.base._errors import ConfigError, TraceFormatError
from chakra_core.io._schema import GlobalMetadata, Node, NodeType
from chakra_core.trace._traceset import GeneratedRank, TraceSet, open_traceset

WORKLOAD = "DATA\n2\nfc1 -1 50 NONE 0 60 NONE 0 55 ALLREDUCE 1024 10\nfc2 -1 50 NONE 0 60 NONE 0 55 ALLREDUCE 2048 10\n"


@pytest.fixture
def et_prefix(tmp_path, dp_set):
    dp_set.write(tmp_path / "job")
    return tmp_path / "job"


@pytest.fixture
def workload(tmp_path):
    p = tmp_path / "w.txt"
    p.write_text(WORKLOAD)
    return p


@pytest.fixture
def bad_prefix(tmp_path, dp_set):
    """The dp set with a dangling dependency on rank 1 (a missing-dep error)."""
    def break_rank(rank, n):
        if rank == 1 and n.name == "bwd_0":
            n.data_deps.append(999)
        return n
    dp_set.map_nodes(break_rank).write(tmp_path / "bad")
    return tmp_path / "bad"


def test_api_stats_and_validate_read_any_input(et_prefix, chakra_host):
    s = chakra.stats(str(et_prefix))
    # forward 10+11+12, backward 22+21+20: one chain per rank
    assert s["nodes"] == 22 and s["longest_path_us"] == 96
    report = chakra.validate(str(et_prefix))
    assert report.ok and report.ranks == 2 and list(report) == []
    assert report.provenance["implementations"][0]["name"] == "et"


def test_api_convert_and_transform(workload, tmp_path, chakra_host):
    result = chakra.convert(workload, f"{tmp_path}/et/", input_options={"npus": 4})
    assert result.summary == {"ranks": 4} and len(result.files) == 4
    assert open_traceset(str(tmp_path / "et")).ranks == [0, 1, 2, 3]
    faster = chakra.transform(str(tmp_path / "et"), "scale", {"compute_speedup": 2})
    before = {n.name: n.duration_micros for n in open_traceset(str(tmp_path / "et"))[0].nodes()}
    after = {n.name: n.duration_micros for n in faster[0].nodes()}
    assert before and all(after[k] == round(v / 2) for k, v in before.items())


def test_api_refuses_path_options_for_an_opened_set(dp_set, chakra_host):
    with pytest.raises(ConfigError, match="apply to paths"):
        chakra.stats(dp_set, format="et")


def test_simulate_and_export_refuse_an_invalid_set(bad_prefix, tmp_path, chakra_host, chakra_cli):
    with pytest.raises(TraceFormatError, match=r"1 validation error\(s\).*bad\.1\.et:node \d+: error: \[missing-dep\]"):
        chakra.simulate(str(bad_prefix))
    with pytest.raises(TraceFormatError, match="validation error"):
        chakra.export(str(bad_prefix), "et", tmp_path / "o")
    assert not (tmp_path / "o" / "result.json").exists()
    status, _, err = chakra_cli("export", bad_prefix, "--to", "et", "-o", tmp_path / "o")
    assert status == 2 and err.count("\n") == 1 and "missing-dep" in err
    status, _, _ = chakra_cli("export", bad_prefix, "--to", "et", "-o", tmp_path / "o", "--no-validate")
    assert status == 0 and open_traceset(str(tmp_path / "o" / "trace")).ranks == [0, 1]
    result = chakra.export(str(bad_prefix), "json", tmp_path / "j", validate=False)
    assert result.summary["ranks"] == 2


def test_pipeline_validate_key(bad_prefix, tmp_path, chakra_pipeline):
    spec = {"input": {"paths": [str(bad_prefix)]}, "backends": [{"name": "et", "output": str(tmp_path / "o")}]}
    with pytest.raises(TraceFormatError, match="validation error"):
        chakra_pipeline(spec)
    out = chakra_pipeline({**spec, "validate": False})
    assert out["backends"][0]["result"]["summary"] == {"ranks": 2}
    spec["backends"][0]["validate"] = False
    assert chakra_pipeline(spec)["backends"][0]["result"]["summary"] == {"ranks": 2}
    with pytest.raises(ConfigError, match="validate must be true or false"):
        chakra_pipeline({**spec, "validate": "no"})


def test_cli_run_no_validate(bad_prefix, tmp_path, chakra_cli):
    p = tmp_path / "p.yaml"
    p.write_text(f"input: {{paths: ['{bad_prefix}']}}\nbackends: [{{name: et, output: '{tmp_path}/o'}}]\n")
    status, _, err = chakra_cli("run", p)
    assert status == 2 and "1 validation error(s)" in err and not (tmp_path / "o").exists()
    status, out, _ = chakra_cli("run", p, "--no-validate")
    assert status == 0 and "et: " in out and "\nranks: 2\n" in out


def _observer(seen):
    class Observer:
        @chakra.hookimpl
        def chakra_stage_started(self, stage, name, context):
            seen.append(("start", stage, name))

        @chakra.hookimpl
        def chakra_stage_finished(self, stage, name, context, result, seconds):
            seen.append(("end", stage, name))
    return Observer()


def test_cli_simulate_and_export_fire_the_observer_hooks(et_prefix, tmp_path, chakra_register, chakra_cli):
    seen: list = []
    chakra_register(_observer(seen), name="observer")
    status, _, err = chakra_cli("simulate", et_prefix)
    assert status == 0, err
    assert seen == [("start", "input", "et"), ("end", "input", "et"), ("start", "backend", "simpy"),
                    ("end", "backend", "simpy")]
    seen.clear()
    status, _, err = chakra_cli("export", et_prefix, "--to", "json", "-o", tmp_path / "j")
    assert status == 0, err
    assert [s for s in seen if s[0] == "start"] == [("start", "input", "et"), ("start", "backend", "json")]


class _CountingFormat(chakra.InputFormat):
    """The dp set generated lazily, counting how often each rank is generated."""

    calls: dict = {}
    source: TraceSet

    def open(self, paths, options):
        def factory(rank):
            self.calls[rank] = self.calls.get(rank, 0) + 1
            for n in self.source[rank].nodes():
                copy = Node()
                copy.CopyFrom(n)
                yield copy

        return TraceSet([GeneratedRank(r, GlobalMetadata(version="0.0.4"), lambda r=r: factory(r)) for r in range(2)],
                        process_groups={})


def test_a_lazy_input_is_converted_once_per_pipeline(tmp_path, dp_set, chakra_register, chakra_pipeline):
    class Plug:
        @chakra.hookimpl
        def chakra_register_formats(self, register):
            register("counting", _CountingFormat)

    chakra_register(Plug(), name="counting")
    _CountingFormat.calls, _CountingFormat.source = {}, dp_set
    (tmp_path / "x").write_text("")
    out = chakra_pipeline({"input": {"format": "counting", "paths": [str(tmp_path / "x")]},
                           "backends": [{"name": "simpy"}, {"name": "json"}, {"name": "et"}]}, base_dir=tmp_path)
    assert _CountingFormat.calls == {0: 1, 1: 1}
    et = open_traceset(str(tmp_path / "out/et/trace"))
    assert sum(1 for n in et[1].nodes() if n.type == NodeType.COMM_SEND_NODE) == 1
    assert out["backends"][0]["result"]["summary"]["ranks"] == 2


def test_input_option_hint_names_the_inputs_format(workload, chakra_cli):
    status, _, err = chakra_cli("simulate", workload, "-O", "npus=2")
    assert status == 2 and "'npus' is an option of the input format 'text'" in err and "-I npus=2" in err


def test_input_option_hint_imports_no_other_format(workload):
    code = ("import sys; from chakra_core.cli.main import main; main(['simulate', sys.argv[1], '-O', 'npus=2']); "
            "print(sorted(m for m in sys.modules if m.startswith(('chakra_pytorch.', 'torch', 'chakra_example.'))))")
    r = subprocess.run([sys.executable, "-c", code, str(workload)], capture_output=True, text=True)
    assert "option of the input format 'text'" in r.stderr
    loaded = json.loads(r.stdout.strip().replace("'", '"'))
    assert not [m for m in loaded if m.startswith("torch") or m.endswith((".format", ".convert", ".opsfile"))]


def test_long_path_lists_are_summarised(workload, tmp_path, chakra_cli):
    status, out, _ = chakra_cli("convert", workload, "-I", "npus=64", "-o", f"{tmp_path}/a/")
    lines = out.splitlines()
    assert status == 0 and len(lines) == 5 and "60 more" in lines[3] and lines[-1].endswith("trace.63.et")
    status, out, _ = chakra_cli("--verbose", "convert", workload, "-I", "npus=64", "-o", f"{tmp_path}/b/")
    assert status == 0 and [Path(p).name for p in out.split()] == [f"trace.{r}.et" for r in range(64)]
