"""A mistake in a pipeline, a system description or a comm-group file is named where it is: the
pipeline file and the stage's key path, the file that holds the bad group; an empty network is
refused rather than replaced by the default; a list of trace paths names the entry it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra_core.testing import one_error as _one_error

ROOT = Path(__file__).resolve().parent.parent
TEXT = ROOT / "examples" / "text" / "resnet50_like.txt"
SYSTEM = ROOT / "examples" / "system" / "any_size.yaml"

pytest.importorskip("chakra_text")
pytest.importorskip("chakra_simpy")


@pytest.fixture
def four(tmp_path, chakra_cli):
    """A 4-rank set converted from the text example."""
    code, _, err = chakra_cli("convert", TEXT, "-I", "npus=4", "-o", f"{tmp_path / 'set'}/")
    assert code == 0, err
    return tmp_path / "set"


def _pipeline(tmp_path: Path, options: dict) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps({
        "input": {"format": "text", "paths": [str(TEXT)], "options": {"npus": 4}},
        "backends": [{"name": "simpy", "output": str(tmp_path / "out"), "options": options}]}))
    return path


def test_an_inline_system_of_a_backend_is_checked_where_the_pipeline_gives_it(tmp_path, chakra_cli):
    bad = {"network": [{"topology": "Ring", "npus_count": 4, "bandwidth": -50, "latency": 500}]}
    code, _, err = chakra_cli("run", _pipeline(tmp_path, {"system": bad}))
    line = _one_error(code, err)
    assert line.startswith(f"chakra run: error: {tmp_path / 'p.yaml'}: backends[0].options.system:"), line
    assert "network[0].bandwidth" in line and "<mapping>" not in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("start, words", [([-5], "-5 is negative"), ([1, 2, 3, 4, 5, 6], "6 start times for 4")])
def test_a_backend_option_refused_while_running_names_the_pipeline_and_stage(tmp_path, chakra_cli, start, words):
    code, _, err = chakra_cli("run", _pipeline(tmp_path, {"system": str(SYSTEM), "start_ns": start}))
    line = _one_error(code, err)
    assert f"{tmp_path / 'p.yaml'}: backends[0] (simpy): start_ns" in line and words in line, line


@pytest.mark.parametrize("options, words", [
    # named the missing file alone, the pipeline and its key left out
    ({"network": "/nonexistent/net.yml"}, "backends[0].options.network: /nonexistent/net.yml: cannot read"),
    # a bare OSError of the folder after the whole simulation: "/proc/nope: No such file or directory"
    ({"system": str(SYSTEM), "timeline": "/proc/nope/t.json"}, "backends[0].options.timeline: /proc/nope: "),
])
def test_a_path_option_that_fails_names_the_pipeline_and_its_key(tmp_path, chakra_cli, options, words):
    code, _, err = chakra_cli("run", _pipeline(tmp_path, options))
    line = _one_error(code, err)
    assert line.startswith(f"chakra run: error: {tmp_path / 'p.yaml'}: {words}"), line
    assert not (tmp_path / "out").exists()


def test_a_simulation_error_of_a_rank_without_a_file_names_the_pipeline_and_stage(tmp_path, chakra_cli):
    # "rank 0: rank 0 node 56: ...": the converted ranks have no file, and no pipeline was named
    network = [{"topology": "Ring", "npus_count": 4, "bandwidth": 50, "latency": 9.0e18}]  # within the clock alone
    code, _, err = chakra_cli("run", _pipeline(tmp_path, {"system": {"network": network}}))
    line = _one_error(code, err)
    assert line.startswith(f"chakra run: error: {tmp_path / 'p.yaml'}: backends[0] (simpy): rank "), line
    assert ": node " in line and "simulated time passes 2**63-1 ns" in line and line.count("rank ") == 1, line


def test_an_empty_network_is_refused_not_replaced_by_the_default(four, tmp_path, chakra_cli):
    (tmp_path / "net.yaml").write_text("network: []\n")
    code, out, err = chakra_cli("simulate", four, "--system", tmp_path / "net.yaml")
    line = _one_error(code, err)
    assert f"{tmp_path / 'net.yaml'}:key 'network': an empty list" in line, line
    assert "finish" not in out
    # a file that is an empty list holds no key 'network': it is empty, as "{}" is
    for name in ("sys.json", "sys.yaml"):
        (tmp_path / name).write_text("[]\n")
        code, out, err = chakra_cli("simulate", four, "--system", tmp_path / name)
        assert f"{tmp_path / name}: empty or not a mapping of keys" in _one_error(code, err)


def test_a_network_file_without_system_settings_is_named_in_the_note(four, tmp_path, chakra_cli):
    (tmp_path / "net.yaml").write_text("network: [{topology: Ring, npus_count: 4, bandwidth: 50, latency: 500}]\n")
    code, out, err = chakra_cli("simulate", four, "--system", tmp_path / "net.yaml")
    assert code == 0, err
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    assert any(f"no system settings in {tmp_path / 'net.yaml'}: ASTRA-sim's sample settings" in n for n in notes), notes
    assert not any("no system file given" in n or "no network given" in n for n in notes), notes


@pytest.mark.parametrize("validate", [[], ["--no-validate"]])
def test_a_comm_group_outside_the_set_names_the_groups_file(four, tmp_path, chakra_cli, validate):
    groups = tmp_path / "groups.json"
    groups.write_text('{"1": [0, 9]}')
    code, _, err = chakra_cli("simulate", four, "--system", SYSTEM, "--comm-groups", groups, *validate)
    line = _one_error(code, err)
    assert f"{groups}: group '1' names rank 9 but there are ranks 0 to 3" in line, line
    assert "trace.0.et" not in line


@pytest.mark.parametrize("paths, words", [
    (["{set}", "{set}"], "{set}: a directory in a list of several paths"),
    (["{set}/trace.0.et", "{set}"], "{set}: a directory in a list of several paths"),
    (["{set}/trace.0.et", "{set}/trace.1.et", "{set}/trace.0.et"], "{set}/trace.0.et: named twice"),
])
def test_a_list_of_trace_paths_names_the_entry_it_refuses(four, chakra_cli, paths, words):
    code, _, err = chakra_cli("stats", *[p.format(set=four) for p in paths])
    line = _one_error(code, err)
    assert words.format(set=four) in line, line


def test_a_pipelines_inline_system_refused_while_running_is_named_system(tmp_path, chakra_cli):
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps({
        "input": {"format": "text", "paths": [str(TEXT)], "options": {"npus": 8}},
        "system": {"network": [{"topology": "Ring", "npus_count": 4, "bandwidth": 50, "latency": 500}]},
        "backends": [{"name": "simpy", "output": str(tmp_path / "out")}]}))
    code, _, err = chakra_cli("run", path)
    line = _one_error(code, err)
    assert line.startswith(f"chakra run: error: {path}: system: the network has 4 NPUs but the trace set has 8"), line


@pytest.mark.parametrize("system, said", [(None, "no system file given"), ("net", "no system settings in {net}")])
def test_an_export_on_astrasims_sample_settings_says_so(four, tmp_path, chakra_cli, system, said):
    pytest.importorskip("chakra_astrasim")
    net = tmp_path / "net.yaml"
    net.write_text("network: [{topology: Ring, npus_count: 4, bandwidth: 50, latency: 500}]\n")
    args = ["--system", net] if system else []
    code, out, err = chakra_cli("export", four, "--to", "astrasim", "-o", tmp_path / "astra", *args)
    assert code == 0, err
    assert f"{said.format(net=net)}: ASTRA-sim's sample settings" in out, out
    system_json = json.loads((tmp_path / "astra" / "system.json").read_text())
    assert system_json["scheduling-policy"] == "LIFO" and system_json["preferred-dataset-splits"] == 4


def _without_read_rights() -> list[str]:
    """A command prefix under which the file modes hold (root reads every file otherwise)."""
    import os
    import shutil

    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv: the file modes do not hold")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]


@pytest.mark.parametrize("kind, words", [("file", "cannot read (Permission denied)"),
                                         ("folder", "no trace files can be read in this directory")])
def test_an_input_that_cannot_be_read_is_named_so(four, tmp_path, kind, words):
    import subprocess
    import sys

    if kind == "file":
        path = tmp_path / "noread.0.et"
        path.write_bytes((four / "trace.0.et").read_bytes())
        path.chmod(0)
    else:
        path = tmp_path / "noexec"
        path.mkdir()
        (path / "trace.0.et").write_bytes((four / "trace.0.et").read_bytes())
        path.chmod(0o600)
    try:
        run = subprocess.run([*_without_read_rights(), sys.executable, "-m", "chakra_core.cli.main", "convert",
                              str(path), "-o", str(tmp_path / "out") + "/"], capture_output=True, text=True, timeout=120)
    finally:
        path.chmod(0o700)
    line = _one_error(run.returncode, run.stderr)
    assert f"{path}: {words}" in line, line


def test_a_comm_group_file_holding_a_list_is_refused_as_such(four, tmp_path, chakra_cli):
    groups = tmp_path / "groups.json"
    groups.write_text("[1]")  # read as our network list, it was refused at 'network[0].'
    code, _, err = chakra_cli("simulate", four, "--system", SYSTEM, "--comm-groups", groups)
    line = _one_error(code, err)
    assert f"{groups}: a comm-group file wants an object of group names" in line and "network" not in line, line


ASTRA = ROOT / "examples" / "system" / "astra"


def _twice(text: str, line: str, changed: str) -> str:
    """``text`` with ``changed`` added after its line ``line`` (a key given a second time)."""
    assert line in text
    return text.replace(line, line + changed, 1)


@pytest.mark.parametrize("name, option, make, words", [
    ("sys.yaml", "--system", lambda: _twice((ROOT / "examples" / "system" / "system.yaml").read_text(),
                                             "endpoint-delay: 10", "\nendpoint-delay: 100000"),
     ":line 14: key 'endpoint-delay' given twice (first at line 13)"),
    ("inline.yaml", "--system", lambda: "network:\n  - {topology: Ring, npus_count: 4, bandwidth: 50, bandwidth: 5, "
                                        "latency: 500}\n", ":line 2: key 'bandwidth' given twice (first at line 2)"),
    ("system.json", "--system", lambda: _twice((ASTRA / "system.json").read_text(), '"endpoint-delay": 10,',
                                               ' "endpoint-delay": 100000,'),
     ": key 'endpoint-delay' given twice in one object"),
    ("network.yml", "--network", lambda: _twice((ASTRA / "network.yml").read_text(), "latency: [ 500 ]",
                                                "\nlatency: [ 5.0 ]"), "key 'latency' given twice"),
    ("groups.json", "--comm-groups", lambda: '{"1": [0, 1], "1": [2, 3]}', ": key '1' given twice in one object"),
])
def test_a_key_given_twice_in_a_system_file_is_refused(tmp_path, chakra_cli, four, name, option, make, words):
    # JSON and PyYAML keep the last value silently: 50 GB/s read as 5, a delay of 10 ns as 100 us
    path = tmp_path / name
    path.write_text(make())
    args = [] if option == "--system" else ["--system", SYSTEM]
    code, _, err = chakra_cli("simulate", four, *args, option, path)
    line = _one_error(code, err)
    assert f"{path}" in line and words in line, line


def test_a_merged_mapping_may_still_override_a_key(tmp_path, chakra_cli, four):
    # YAML's merge key (<<) copies a mapping whose keys the mapping itself then overrides: not a repeat
    path = tmp_path / "merge.yaml"
    path.write_text("network:\n  - &b {topology: Ring, npus_count: 2, bandwidth: 5, latency: 500}\n"
                    "  - {<<: *b, bandwidth: 50}\n")
    finish = {}
    for name, second in (("merge", None), ("5_50", 50), ("5_5", 5)):
        if second is not None:
            path = tmp_path / f"{name}.yaml"
            path.write_text("network:\n  - {topology: Ring, npus_count: 2, bandwidth: 5, latency: 500}\n"
                            f"  - {{topology: Ring, npus_count: 2, bandwidth: {second}, latency: 500}}\n")
        code, out, err = chakra_cli("simulate", four, "--system", path, "--json")
        assert code == 0, err
        finish[name] = json.loads(out)["summary"]["finish_ns"]
    assert finish["merge"] == finish["5_50"] < finish["5_5"]


@pytest.mark.parametrize("value, words", [
    ("[]", "an empty list: give one algorithm name per dimension, or leave the key out for ring"),
    ("direct99999999999999999999", "the window of 'direct99999999999999999999' is past 2147483647"),
])
def test_an_implementation_no_run_can_take_is_refused_at_its_key(tmp_path, chakra_cli, four, value, words):
    # an empty list ran as ring without a word; a window past int32 ran here and was exported as is
    path = tmp_path / "sys.yaml"
    path.write_text("network:\n  - {topology: Ring, npus_count: 4, bandwidth: 50, latency: 500}\n"
                    f"all-reduce-implementation: {value}\n")
    code, _, err = chakra_cli("simulate", four, "--system", path)
    line = _one_error(code, err)
    assert f"{path}:key 'all-reduce-implementation': {words}" in line, line


def test_an_empty_implementation_list_of_astra_sim_is_refused(tmp_path, chakra_cli, four):
    # ASTRA-sim's system.json with "all-reduce-implementation": [] ran ring on every dimension
    # here while its note said ASTRA-sim would run the first 0 dimension(s)
    path = tmp_path / "system.json"
    path.write_text(json.dumps({"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
                                "preferred-dataset-splits": 4, "all-reduce-implementation": [],
                                "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
                                "all-to-all-implementation": ["ring"], "collective-optimization": "baseline"}))
    net = tmp_path / "network.yml"
    net.write_text("topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    code, _, err = chakra_cli("simulate", four, "--system", path, "--network", net)
    line = _one_error(code, err)
    assert f"{path}:key 'all-reduce-implementation': an empty list: ASTRA-sim would run the collective" in line


@pytest.mark.parametrize("outputs, words", [
    (["o", "o"], "backends[1].output {o} overlaps backends[0].output {o}"),
    (["o", "o/inner"], "backends[1].output {o}/inner overlaps backends[0].output {o}"),
    (["", None], "backends[0].output: an empty path"),
])
def test_stages_sharing_an_output_are_refused(tmp_path, chakra_cli, outputs, words):
    # the later stage replaced the earlier one's result.json, or wrote its timeline into its set;
    # an empty output wrote into the pipeline's folder
    stages = [{"name": name, **({"output": out} if out is not None else {})}
              for name, out in zip(("et", "simpy"), outputs)]
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps({"input": {"format": "text", "paths": [str(TEXT)], "options": {"npus": 4}},
                                "backends": stages}))
    code, _, err = chakra_cli("run", path)
    line = _one_error(code, err)
    assert words.format(o=tmp_path / "o") in line, line
    assert not (tmp_path / "o").exists()
