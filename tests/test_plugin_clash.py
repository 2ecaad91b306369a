"""A third-party distribution that registers ``simpy`` (taken by chakra-simpy) and a format of its
own: nothing is disabled, the bare name is ambiguous, both qualified names run (CLI and Python),
and ``CHAKRA_PREFER`` or a pipeline's ``prefer:`` picks one.

The third party is a fake installed distribution (``chakra_fake_dist``: a ``*.dist-info`` folder
with entry points on ``PYTHONPATH``), found by the CLI, run as a subprocess, exactly as a
pip-installed one would be.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chakra_core.base._errors import PluginError
from chakra_core.host import _plugins as P

PLUGIN = """
    from chakra_core import hookimpl

    @hookimpl
    def chakra_register_backends(register):
        register("simpy", "fastsim_impl:FastSim", description="a third-party simulator")

    @hookimpl
    def chakra_register_formats(register):
        register("fastops", "fastsim_impl:FastOps", description="one rank per line of durations")
"""
IMPL = """
    from chakra_core import Backend, InputFormat, MemoryRank, Node, Result, TraceSet

    class FastSim(Backend):
        kind = "simulator"

        def run(self, traces, options, output):
            total = sum(n.duration_micros for rank in traces for n in rank.nodes())
            return Result(self.qualified_name, self.kind, summary={"total_us": total})

    class FastOps(InputFormat):
        def open(self, paths, options):
            with open(paths[0]) as f:
                durations = [int(v) for v in f.read().split()]
            nodes = [Node(id=i + 1, name=f"op{i}", type=4, duration_micros=d, data_deps=[i] if i else [])
                     for i, d in enumerate(durations)]  # a chain
            return TraceSet([MemoryRank(0, None, nodes)])
"""


@pytest.fixture
def third_party(chakra_fake_dist, monkeypatch):
    """chakra-fastsim 2.5 installed; the environment for running the CLI."""
    env = chakra_fake_dist("chakra-fastsim", "2.5", {"fastsim": "fastsim_plugin"},
                           {"fastsim_plugin": PLUGIN, "fastsim_impl": IMPL})
    monkeypatch.delenv("CHAKRA_PREFER", raising=False)
    env.pop("CHAKRA_PREFER", None)
    P.reset_host()
    yield env
    P.reset_host()


@pytest.fixture
def job(tmp_path, dp_set):
    """The 2-rank data-parallel set written as .et files."""
    dp_set.write(tmp_path / "job" / "trace")
    return tmp_path / "job"


def _chakra(env, *args):
    return subprocess.run([sys.executable, "-m", "chakra_core.cli.main", *map(str, args)],
                          capture_output=True, text=True, env=env)


def test_bare_name_is_an_error_naming_both(third_party, job):
    r = _chakra(third_party, "simulate", job)  # the default backend is the bare name simpy
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "backend 'simpy' is ambiguous: registered as chakra-fastsim:simpy and chakra-simpy:simpy" in r.stderr


def test_both_qualified_names_run(third_party, job, dp_set):
    r = _chakra(third_party, "simulate", job, "--backend", "chakra-simpy:simpy", "--json")
    assert r.returncode == 0, r.stderr
    ours = json.loads(r.stdout)
    assert ours["backend"] == "simpy" and ours["summary"]["ranks"] == 2
    r = _chakra(third_party, "simulate", job, "--backend", "chakra-fastsim:simpy", "--json")
    assert r.returncode == 0, r.stderr
    theirs = json.loads(r.stdout)
    total = sum(n.duration_micros for rank in dp_set for n in rank.nodes())
    assert theirs["backend"] == "chakra-fastsim:simpy" and theirs["summary"] == {"total_us": total}
    # provenance names the distribution and version of the backend that really ran
    from importlib.metadata import version

    for result, dist, ver in ((ours, "chakra-simpy", version("chakra-simpy")), (theirs, "chakra-fastsim", "2.5")):
        backend = [i for i in result["provenance"]["implementations"] if i["stage"] == "backend"]
        assert [(b["qualified_name"], b["distribution"], b["version"]) for b in backend] == [
            (f"{dist}:simpy", dist, ver)]
        assert result["provenance"]["command"].startswith("chakra simulate ")


def test_python_api_takes_qualified_names(third_party, dp_set):
    registry = P.get_host().registry
    with pytest.raises(PluginError, match="chakra-fastsim:simpy and chakra-simpy:simpy"):
        registry.get("backend", "simpy")
    theirs = registry.get("backend", "chakra-fastsim:simpy")
    ours = registry.get("backend", "chakra-simpy:simpy")
    assert (theirs.name, theirs.qualified_name) == ("simpy", "chakra-fastsim:simpy")
    assert ours.run(dp_set, ours.check_options({}), None).summary["ranks"] == 2
    entry = registry.entry("backend", "chakra-fastsim:simpy")
    assert (entry.distribution, entry.version) == ("chakra-fastsim", "2.5")


def test_no_plugin_is_disabled_and_plugins_shows_the_clash(third_party, job, tmp_path):
    r = _chakra(third_party, "plugins", "--json")
    assert r.returncode == 0, r.stderr
    rows = {p["distribution"]: p for p in json.loads(r.stdout)["plugins"]}
    assert rows["chakra-simpy"]["error"] is None and rows["chakra-fastsim"]["error"] is None
    assert rows["chakra-simpy"]["clashes"] == {"backend": {"simpy": ["chakra-fastsim:simpy"]}}
    assert rows["chakra-fastsim"]["clashes"] == {"backend": {"simpy": ["chakra-simpy:simpy"]}}
    assert rows["chakra-text"]["clashes"] == {} and rows["chakra-text"]["registered"] == {"format": ["text"]}
    table = _chakra(third_party, "plugins").stdout.splitlines()
    assert sum("CLASH: backend simpy is also" in line for line in table) == 2
    assert not any("FAILED" in line for line in table)
    (tmp_path / "w.ops").write_text("5 7 11\n")
    r = _chakra(third_party, "stats", tmp_path / "w.ops", "--format", "fastops", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["longest_path_us"] == 23  # the third party's own format is unaffected


def test_prefer_picks_the_default(third_party, job, tmp_path):
    env = dict(third_party, CHAKRA_PREFER="simpy=chakra-fastsim")
    r = _chakra(env, "simulate", job, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["backend"] == "chakra-fastsim:simpy"
    env = dict(third_party, CHAKRA_PREFER="simpy=chakra-text")
    r = _chakra(env, "simulate", job)
    assert r.returncode == 2 and "picks 'chakra-text' for backend 'simpy', which it does not register" in r.stderr
    (tmp_path / "p.yaml").write_text(f"prefer: {{simpy: chakra-simpy}}\ninput: {{paths: [{job}]}}\n"
                                     "backends: [{name: simpy, output: out}]\n")
    env = dict(third_party, CHAKRA_PREFER="simpy=chakra-fastsim")  # the pipeline's own choice wins
    r = _chakra(env, "run", tmp_path / "p.yaml")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "out" / "result.json").read_text())["backend"] == "simpy"
