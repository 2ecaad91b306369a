"""Provenance: every result names chakra-core's version, each implementation's qualified name,
distribution, version and options after defaults, the inputs as given and the command line."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from importlib import metadata as md
from pathlib import Path

import chakra_core as chakra

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "chakra-example-plugin"
WORKLOAD = "DATA\n1\nfc1 -1 50 NONE 0 60 NONE 0 55 ALLREDUCE 1024 10\n"


def _example_version() -> str:
    text = (EXAMPLE / "pyproject.toml").read_text()
    m = re.search(r'^version = "([^"]+)"', text, re.M)
    assert m
    return m.group(1)


def test_mixed_first_and_third_party_pipeline(installed_example, tmp_path):
    (tmp_path / "w.txt").write_text(WORKLOAD)
    (tmp_path / "p.yaml").write_text(
        "input: {paths: [w.txt], options: {npus: 2}}\n"
        "transforms: [{name: hide_names, options: {salt: s}}]\n"
        "backends: [{name: simpy, output: out/sim}, {name: csv, output: out/csv}]\n")
    r = subprocess.run([sys.executable, "-m", "chakra_core.cli.main", "run", str(tmp_path / "p.yaml"), "--json"],
                       capture_output=True, text=True, env=installed_example)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    example = ("chakra-example-plugin", _example_version())
    expect = {
        ("input", "text"): ("chakra-text", md.version("chakra-text")),
        ("transform", "hide_names"): example,
        ("backend", "simpy"): ("chakra-simpy", md.version("chakra-simpy")),
        ("backend", "csv"): example,
    }
    for b in out["backends"]:
        prov = b["result"]["provenance"]
        assert prov == json.loads((Path(b["result_file"])).read_text())["provenance"]
        assert prov["chakra_core"] == md.version("chakra-core")
        assert prov["pipeline"] == str(tmp_path / "p.yaml") and prov["inputs"] == [str(tmp_path / "w.txt")]
        assert prov["command"] == shlex.join(["chakra", "run", str(tmp_path / "p.yaml"), "--json"])
        impls = prov["implementations"]
        assert [(i["stage"], i["name"]) for i in impls] == [("input", "text"), ("transform", "hide_names"),
                                                             ("backend", b["name"])]
        for i in impls:
            assert (i["distribution"], i["version"]) == expect[i["stage"], i["name"]]
            assert i["qualified_name"] == f"{i['distribution']}:{i['name']}"
        assert impls[0]["options"]["npus"] == 2 and impls[0]["options"]["passes"] == 1  # a default
        assert impls[1]["options"] == {"salt": "s"}
    sim = out["backends"][0]["result"]["provenance"]["implementations"][2]["options"]
    assert sim["congestion"] == "unaware" and sim["symmetry"] is True  # defaults filled in


def test_command_line_is_shell_quoted(tmp_path, dp_set, chakra_cli):
    odd = tmp_path / "a dir $(touch pwned)"
    dp_set.write(odd / "job")
    args = ["export", str(odd / "job"), "--to", "et", "-o", str(odd / "o"), "-O", "prefix=x y"]
    status, _, err = chakra_cli(*args)
    assert status == 0, err
    prov = json.loads((odd / "o" / "result.json").read_text())["provenance"]
    assert shlex.split(prov["command"]) == ["chakra", *args]
    assert prov["inputs"] == [str(odd / "job")] and prov["pipeline"] is None
    assert prov["implementations"][1]["options"] == {"prefix": "x y", "compress": False}


def test_python_results_carry_provenance(tmp_path, dp_set, chakra_host):
    dp_set.write(tmp_path / "job")
    result = chakra.simulate(str(tmp_path / "job"), network=None)
    prov = result.provenance
    assert prov["command"] is None and prov["inputs"] == [str(tmp_path / "job")]
    assert [(i["kind"], i["qualified_name"]) for i in prov["implementations"]] == [
        ("format", "chakra-core:et"), ("backend", "chakra-simpy:simpy")]
    assert result.to_dict()["provenance"] == prov
    opened = chakra.simulate(chakra.load_traces(str(tmp_path / "job")))
    assert [i["stage"] for i in opened.provenance["implementations"]] == ["backend"]
    assert opened.provenance["inputs"] == [str(tmp_path / "job")]
