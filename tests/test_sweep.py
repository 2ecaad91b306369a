"""Sweeps: dotted paths, the sweep: section, inline system:, the local executor, the table,
failing and hanging points, --resume after a kill, the input cache and progress."""

from __future__ import annotations

import csv
import gzip
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

import chakra_core as chakra
from chakra_core import ConfigError
from chakra_core.base._docpath import get_path, parse_path, set_path
from chakra_core.sweeps._spec import expand, parse_sweep
from chakra_core.sweeps._table import is_timing_column

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "examples" / "text" / "resnet50_like.txt"
SYSTEM = {"network": [{"topology": "Ring", "npus_count": 2, "bandwidth": 50, "latency": 500}],
          "all-reduce-implementation": "ring", "local-mem-bw": 50}


def small_sweep(tmp_path: Path, **sweep) -> Path:
    """A 12-point sweep of the ResNet-50-shaped text workload: 3 bandwidths x 2 all-reduce
    algorithms x 2 data-parallel widths (the ring sized by derive)."""
    doc = {
        "input": {"format": "text", "paths": [str(WORKLOAD)], "options": {"npus": 2}},
        "system": SYSTEM,
        "backends": [{"name": "simpy"}],
        "sweep": {"grid": {"system.network[0].bandwidth": [25, 50, 100],
                           "system.all-reduce-implementation": ["ring", "direct"],
                           "input.options.npus": [2, 4]},
                  "derive": {"system.network[0].npus_count": "input.options.npus"}, **sweep},
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_dotted_paths_get_and_set():
    doc = {"system": {"network": [{"bandwidth": 50}]},
           "backends": [{"name": "simpy", "options": {"streams": 1}}, {"name": "et"}]}
    assert parse_path("system.network[0].bandwidth") == ("system", "network", 0, "bandwidth")
    assert get_path(doc, "backends.simpy.options.streams") == 1
    set_path(doc, "system.network[0].bandwidth", 100)
    set_path(doc, "backends.et.options.compress", True)  # creates the missing options mapping
    set_path(doc, "backends[0].options.streams", 4)
    assert doc["system"]["network"][0]["bandwidth"] == 100
    assert doc["backends"][1]["options"] == {"compress": True}
    assert doc["backends"][0]["options"]["streams"] == 4
    with pytest.raises(ConfigError, match=r"no entry named 'simpi' \(did you mean 'simpy'\?\)"):
        get_path(doc, "backends.simpi.options")
    with pytest.raises(ConfigError, match=r"no item \[3\]"):
        set_path(doc, "system.network[3].bandwidth", 1)


def test_grid_random_derive_and_constraints():
    spec = parse_sweep({"grid": {"a.tp": [1, 2, 4], "a.pp": [1, 2]},
                        "random": {"seed": 7, "count": 3, "params": {"a.speed": {"low": 1, "high": 4, "log": True}}},
                        "derive": {"a.dp": "8 // (tp * pp)"},
                        "constraints": [{"expr": "tp * pp * dp == 8", "reason": "tp*pp*dp != npus"}]}, "p.yaml")
    points = expand({"a": {}}, spec, "p.yaml")
    assert len(points) == 3 * 2 * 3
    kept = [p for p in points if not p.skipped]
    # 8 // (tp*pp) gives dp with tp*pp*dp == 8 for every tp*pp dividing 8: all 6 grid points
    assert {(p.document["a"]["tp"], p.document["a"]["pp"], p.document["a"]["dp"]) for p in kept} == \
        {(1, 1, 8), (1, 2, 4), (2, 1, 4), (2, 2, 2), (4, 1, 2), (4, 2, 1)}
    speeds = [p.params["a.speed"] for p in points[:3]]
    assert all(1 <= s <= 4 for s in speeds) and len(set(speeds)) == 3
    assert speeds == [p.params["a.speed"] for p in expand({"a": {}}, spec, "p.yaml")[:3]]  # seeded
    spec = parse_sweep({"grid": {"a.tp": [3, 4]}, "constraints": ["8 % tp == 0"]}, "p.yaml")
    skipped = [p.skipped for p in expand({"a": {}}, spec, "p.yaml")]
    assert skipped == ["constraint '8 % tp == 0' does not hold", None]


@pytest.mark.parametrize("section, message", [
    ({}, "needs grid: or random.params:"),
    ({"grid": {"a": []}}, "non-empty list"),
    ({"grid": {"a": [1]}, "constraints": ["__import__('os')"]}, "only min, max"),
    ({"grid": {"a": [1]}, "constraints": ["a.__class__"]}, "is inside a int"),
    ({"gird": {}}, "did you mean 'grid'"),
    # an internal error (randrange's empty range) before
    ({"random": {"seed": 1, "count": 3, "params": {"n": {"low": 4.2, "high": 4.9, "integer": True}}}},
     "sweep.random.params.n: integer: true, but no whole number lies from 4.2 to 4.9"),
])
def test_bad_sweep_sections_are_refused(section, message):
    with pytest.raises(ConfigError, match=message):
        expand({}, parse_sweep(section, "p.yaml"), "p.yaml")


def test_inline_system_is_the_system_file(tmp_path):
    """A pipeline's inline system: simulates exactly as the same description in a file."""
    (tmp_path / "system.yaml").write_text(yaml.safe_dump(SYSTEM))
    base = {"input": {"format": "text", "paths": [str(WORKLOAD)], "options": {"npus": 2}}}
    inline = chakra.run_pipeline({**base, "system": SYSTEM, "backends": [{"name": "simpy", "output": "a"}]},
                                 base_dir=tmp_path)
    filed = chakra.run_pipeline({**base, "backends": [{"name": "simpy", "output": "b",
                                                      "options": {"system": "system.yaml"}}]}, base_dir=tmp_path)
    a, b = (r["backends"][0]["result"]["summary"] for r in (inline, filed))
    assert a["finish_ns"] == b["finish_ns"] and a["collectives"] == b["collectives"]
    bad = {**base, "system": {"network": [{"topology": "Torus", "npus_count": 2, "bandwidth": 1, "latency": 1}]},
           "backends": [{"name": "simpy"}]}
    with pytest.raises(ConfigError, match="^<pipeline>: system: .*Torus"):
        chakra.load_pipeline(bad)


def test_a_pipeline_with_a_sweep_is_refused_by_run(tmp_path):
    with pytest.raises(ConfigError, match="run it with chakra sweep"):
        chakra.load_pipeline(small_sweep(tmp_path))


def test_every_point_is_validated_before_anything_runs(tmp_path):
    path = small_sweep(tmp_path)
    doc = yaml.safe_load(path.read_text())
    doc["sweep"]["grid"]["backends.simpy.options.congestion"] = ["unaware", "awre"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ConfigError, match=r"sweep.yaml: point 1 \(.*congestion='awre'\): backends\[0\]: "
                                          r"backend 'simpy': option 'congestion' must be one of unaware, aware"):
        chakra.sweep(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def local_table(tmp_path_factory):
    """The 12-point sweep run once by the local executor with 2 workers."""
    tmp = tmp_path_factory.mktemp("local")
    return chakra.sweep(small_sweep(tmp), tmp / "out", jobs=2)


def test_local_sweep_rows_are_the_simulator_s_numbers(local_table, tmp_path):
    out = local_table
    assert (out["points"], out["ok"], out["failed"], out["skipped"]) == (12, 12, 0, 0)
    rows = out["rows"]
    assert [r["point"] for r in rows] == list(range(12))
    row = next(r for r in rows if r["system.network[0].bandwidth"] == 25 and r["input.options.npus"] == 4
               and r["system.all-reduce-implementation"] == "direct")
    assert row["system.network[0].npus_count"] == 4
    system = {**SYSTEM, "network": [{"topology": "Ring", "npus_count": 4, "bandwidth": 25, "latency": 500}],
              "all-reduce-implementation": "direct"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(system))
    direct = chakra.simulate(str(WORKLOAD), system=str(tmp_path / "s.yaml"), input_options={"npus": 4})
    assert row["simpy.finish_ns"] == direct.summary["finish_ns"]
    colls = direct.summary["collectives"]
    assert row["simpy.collectives.total.bytes"] == sum(c["bytes"] for c in colls)
    last = max(direct.ranks, key=lambda r: r["finish_ns"])
    assert row["simpy.breakdown.exposed_comm_ns"] == last["exposed_comm_ns"]
    assert row["provenance"]["implementations"][-1]["name"] == "chakra-simpy:simpy"
    ring = {r["system.network[0].bandwidth"]: r["simpy.finish_ns"] for r in rows
            if r["input.options.npus"] == 4 and r["system.all-reduce-implementation"] == "ring"}
    assert ring[25] > ring[50] > ring[100]  # faster links, shorter step


def test_the_three_tables_hold_the_same_rows(local_table):
    out = Path(local_table["output"])
    rows = local_table["rows"]
    with open(out / "results.csv") as f:
        by_csv = list(csv.DictReader(f))
    parquet = pq.read_table(out / "results.parquet").to_pylist()
    body = json.loads((out / "results.json").read_text())
    assert len(by_csv) == len(parquet) == len(body["rows"]) == 12
    assert body["sweep"]["parameters"] == ["system.network[0].bandwidth", "system.all-reduce-implementation",
                                          "input.options.npus"]
    for r, c, p, j in zip(rows, by_csv, parquet, body["rows"]):
        assert int(c["simpy.finish_ns"]) == p["simpy.finish_ns"] == j["simpy.finish_ns"] == r["simpy.finish_ns"]
        assert c["system.all-reduce-implementation"] == p["system.all-reduce-implementation"]
        assert (out / p["simpy.result_file"]).is_file()
    assert [c for c in body["columns"] if is_timing_column(c)] == body["columns"][-4:]


def test_the_input_is_converted_and_validated_once_per_width(local_table):
    cache = Path(local_table["output"]) / "cache"
    assert sorted(len(list(d.glob("trace.*.et"))) for d in cache.iterdir() if d.is_dir()) == [2, 4]
    assert sorted(p.name.split(".")[0] for p in cache.glob("*.valid-*")) == sorted(
        d.name for d in cache.iterdir() if d.is_dir())


#: the sweep's timeout in the failing-and-hanging tests: ten times what the ok point takes on an idle
#: machine (about 2 s), so that it passes at a load of several times the cores, while the hanging
#: points (10^6 passes: many minutes of work) never finish within it
HANG_TIMEOUT_S = 20


@pytest.fixture(scope="module", autouse=True)
def _hanging_points_allowed():
    """The hanging points of :func:`_fail_and_hang` unroll 10^6 passes, 215 million nodes a rank,
    past the ``nodes`` limit: raised for this module before its Ray and Dask clusters start, so
    that their workers, and the commands the tests run, inherit it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHAKRA_MAX_NODES", str(10**9))
        yield


def _fail_and_hang(tmp_path: Path) -> Path:
    """Four points: ok, failed (a ring of 3 NPUs for 2 ranks), and two that convert 10^6
    passes (minutes of work) and must be stopped by the timeout."""
    doc = {"input": {"format": "text", "paths": [str(WORKLOAD)], "options": {"npus": 2}},
           "system": SYSTEM, "backends": [{"name": "simpy"}],
           "sweep": {"grid": {"input.options.passes": [1, 1_000_000], "system.network[0].npus_count": [2, 3]},
                     "timeout_s": HANG_TIMEOUT_S}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def check_fail_and_hang(out: dict) -> None:
    """What a failing and a hanging point leave in the table (shared with the executor tests)."""
    status = {(r["input.options.passes"], r["system.network[0].npus_count"]): r for r in out["rows"]}
    assert status[(1, 2)]["status"] == "ok" and status[(1, 2)]["simpy.finish_ns"] > 0
    assert status[(1, 3)]["status"] == "failed"
    assert "the network has 3 NPUs but the trace set has 2 ranks" in status[(1, 3)]["error"]
    for npus in (2, 3):  # the two points share the input, converted in parts before the points run
        assert status[(1_000_000, npus)]["status"] == "timeout"
        assert status[(1_000_000, npus)]["error"] == f"converting the input: did not finish within {HANG_TIMEOUT_S} s"
        assert status[(1_000_000, npus)]["seconds"] < HANG_TIMEOUT_S + 26
    assert (out["ok"], out["failed"], out["timeout"]) == (1, 1, 2)


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "chakra_core.cli.main", *map(str, args)],
                          capture_output=True, text=True, **kw)


def test_resume_after_a_kill_reruns_only_the_missing_points(tmp_path, local_table):
    path = small_sweep(tmp_path)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "chakra_core.cli.main", "sweep", str(path), "-o", str(out),
                             "-j", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while len(list(out.glob("points/*/point.json"))) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("points/*/point.json")}
    assert 3 <= len(done) < 12, "the sweep was not killed half-way"
    resumed = chakra.sweep(path, out, resume=True, jobs=2)
    assert resumed["reused"] == len(done) and resumed["ok"] == 12
    after = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("points/*/point.json")}
    assert len(after) == 12 and all(after[k] == t for k, t in done.items())  # the done ones were not rerun
    same = [{k: v for k, v in r.items() if not is_timing_column(k)} for r in resumed["rows"]]
    assert same == [{k: v for k, v in r.items() if not is_timing_column(k)} for r in local_table["rows"]]


def test_cli_sweep_check_and_errors(tmp_path):
    path = small_sweep(tmp_path)
    r = _cli("sweep", path, "--check")
    assert r.returncode == 0 and "OK (12 point(s): 12 to run, 0 skipped by constraints)" in r.stdout
    r = _cli("sweep", path, "--executor", "rey")
    assert r.returncode == 2 and "unknown executor 'rey'" in r.stderr
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("x")
    r = _cli("sweep", path, "-o", tmp_path / "taken")
    assert r.returncode == 2 and "not a sweep's directory" in r.stderr
    assert (tmp_path / "taken" / "mine.txt").read_text() == "x"
    # a pool past 1,024 processes is refused before anything starts (-j 100000 started one
    # process per point); convert's -j is the same pool
    r = _cli("sweep", path, "-o", tmp_path / "many", "-j", "100000")
    assert r.returncode == 2 and "option 'workers' must be <= 1024, got 100000" in r.stderr
    assert not (tmp_path / "many").exists()
    r = _cli("convert", ROOT / "examples/text/dlrm_like.txt", "-I", "npus=4", "-o", tmp_path / "conv", "-j", "5000")
    assert r.returncode == 2 and "must be <= 1024, got 5000" in r.stderr and not (tmp_path / "conv").exists()


def test_failing_and_hanging_points_are_reported(tmp_path):
    # one worker: the ok point does not share the cores with the hanging conversion
    r = _cli("sweep", _fail_and_hang(tmp_path), "-o", tmp_path / "out", "-j", "1", "--json")
    assert r.returncode == 1, r.stderr
    check_fail_and_hang(json.loads(r.stdout))
    assert "point 1: failed: " in r.stderr and "point 3: timeout: converting the input: did not finish" in r.stderr
    assert not list((tmp_path / "out" / "cache").glob(".*"))  # no half-converted input left


@pytest.fixture(scope="module")
def ray_cluster():
    """A real local Ray cluster of 2 CPUs in this process, started once for the module."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    yield {}
    ray.shutdown()


@pytest.fixture(scope="module")
def dask_cluster():
    """A real local Dask cluster of 2 worker processes, started once for the module."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster:
        yield {"address": cluster.scheduler_address}


@pytest.fixture(params=["ray", "dask"])
def cluster(request):
    """``(executor name, its options)`` for each distributed executor."""
    return request.param, request.getfixturevalue(f"{request.param}_cluster")


def _untimed(rows):
    return [{k: v for k, v in r.items() if not is_timing_column(k)} for r in rows]


def test_ray_and_dask_give_the_local_table(cluster, local_table, tmp_path):
    name, options = cluster
    out = chakra.sweep(small_sweep(tmp_path), tmp_path / "out", executor=name, executor_options=options)
    assert out["ok"] == 12
    assert _untimed(out["rows"]) == _untimed(local_table["rows"])
    local = Path(local_table["output"])
    for row in out["rows"]:
        mine = json.loads((tmp_path / "out" / row["simpy.result_file"]).read_text())
        theirs = json.loads((local / row["simpy.result_file"]).read_text())
        assert mine["ranks"] == theirs["ranks"] and mine["summary"]["critical_path"] == theirs["summary"]["critical_path"]


def test_ray_and_dask_report_failing_and_hanging_points(cluster, tmp_path):
    name, options = cluster
    check_fail_and_hang(chakra.sweep(_fail_and_hang(tmp_path), tmp_path / "out", executor=name,
                                     executor_options=options))


def test_diff_takes_two_rows_of_the_table(tmp_path):
    """Two rows' result files (backend option spans: true) compare with chakra_core.diff."""
    path = small_sweep(tmp_path)
    doc = yaml.safe_load(path.read_text())
    doc["backends"][0]["options"] = {"spans": True}
    doc["sweep"]["grid"] = {"system.all-reduce-implementation": ["ring", "halvingDoubling"]}
    doc["sweep"].pop("derive")
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = chakra.sweep(path, tmp_path / "out", jobs=1)
    a, b = (tmp_path / "out" / r["simpy.result_file"] for r in out["rows"])
    finish = chakra.diff(str(a), str(b)).to_dict()["metrics"]["finish_ns"]
    assert (finish["a"], finish["b"]) == tuple(r["simpy.finish_ns"] for r in out["rows"])


def test_ray_and_dask_convert_in_parts_to_the_serial_bytes(cluster, tmp_path):
    name, options = cluster
    ddp = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp"
    for i, (inputs, input_options) in enumerate([(ddp, None), (WORKLOAD, {"npus": 8})]):
        serial = chakra.convert(str(inputs), f"{tmp_path}/serial{i}/", input_options=input_options)
        parts = chakra.convert(str(inputs), f"{tmp_path}/parts{i}/", input_options=input_options, executor=name,
                               executor_options={**options, "workers": 2})
        mine = {p.name: p.read_bytes() for p in (tmp_path / f"parts{i}").glob("*.et")}
        assert mine == {p.name: p.read_bytes() for p in (tmp_path / f"serial{i}").glob("*.et")}
        assert len(mine) == serial.summary["ranks"] == parts.summary["ranks"] > 1
        assert parts.provenance["implementations"] == serial.provenance["implementations"]
    bad = tmp_path / "bad"
    shutil.copytree(ddp, bad)
    host = bad / "pytorch_et.1.json.gz"
    host.write_bytes(gzip.compress(gzip.decompress(host.read_bytes())[:5000]))  # rank 1 cut short
    before = {p.name: p.read_bytes() for p in (tmp_path / "parts0").iterdir()}
    with pytest.raises(chakra.TraceFormatError) as e:
        chakra.convert(str(bad), f"{tmp_path}/parts0/", executor=name, executor_options={**options, "workers": 2})
    assert e.value.where == str(host)
    assert {p.name: p.read_bytes() for p in (tmp_path / "parts0").iterdir()} == before  # the earlier set is intact
