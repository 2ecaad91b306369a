"""Sweeps: what a failed or interrupted run leaves of an earlier table, refused sweep sections
(a derived swept path, an ambiguous short name, a misspelt path, a missing input), integer draws
on the log scale, tables with numbers past 64 bits, --json without NaN, and a quiet Ctrl-C."""

from __future__ import annotations

import csv
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

import chakra_core as chakra
from chakra_core import ConfigError, Executor, Option, PluginError, hookimpl
from chakra_core.base import _progress
from chakra_core.cli._common import print_json
from chakra_core.sweeps._spec import expand, parse_sweep
from chakra_core.sweeps._table import TABLE_FILES, is_timing_column, write_tables
from chakra_core.sweeps._workerpool import _serve

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "examples" / "text" / "resnet50_like.txt"
SYSTEM = {"network": [{"topology": "Ring", "npus_count": 2, "bandwidth": 50, "latency": 500}],
          "all-reduce-implementation": "ring", "local-mem-bw": 50}


def four_points(tmp_path: Path, **sweep) -> Path:
    """A 4-point sweep (2 bandwidths x 2 all-reduce algorithms) of the text workload on 2 NPUs."""
    doc = {"input": {"format": "text", "paths": [str(WORKLOAD)], "options": {"npus": 2}},
           "system": SYSTEM, "backends": [{"name": "simpy"}],
           "sweep": {"grid": {"system.network[0].bandwidth": [25, 50],
                              "system.all-reduce-implementation": ["ring", "direct"]}, **sweep}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class Unreachable(Executor):
    """An executor whose cluster cannot be reached: its session fails before anything runs."""

    description = "a cluster that cannot be reached"
    options = {"workers": Option("int", None, "points at once", minimum=1)}

    def map(self, fn, tasks, options):
        raise AssertionError("no point runs without a session")

    @contextmanager
    def session(self, options) -> Iterator[None]:
        raise PluginError("executor 'unreachable': cannot use the cluster at 'garbage'")
        yield


class StopsAfterOne(Executor):
    """An executor interrupted (Ctrl-C) after running the first point in this process."""

    description = "runs one point, then is interrupted"
    options = {"workers": Option("int", None, "points at once", minimum=1)}

    def map(self, fn, tasks, options):
        yield 0, fn(tasks[0])
        raise KeyboardInterrupt


class Executors:
    """Registers the two test executors."""

    @hookimpl
    def chakra_register_executors(self, register):
        register("unreachable", Unreachable, description=Unreachable.description)
        register("stops-after-one", StopsAfterOne, description=StopsAfterOne.description)


def _untimed(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not is_timing_column(k)} for r in rows]


@pytest.fixture
def finished(tmp_path, chakra_register, monkeypatch):
    """A finished 4-point sweep (local executor), the test executors registered, and the bytes
    of its sweep.json and tables."""
    monkeypatch.setattr(_progress, "_ENABLED", [True])  # a point run in this process turns it off
    chakra_register(Executors(), name="test-executors")
    path = four_points(tmp_path)
    out = chakra.sweep(path, tmp_path / "out", jobs=2)
    assert out["ok"] == 4
    files = {n: (tmp_path / "out" / n).read_bytes() for n in ("sweep.json", *TABLE_FILES)}
    return path, tmp_path / "out", out, files


def test_an_executor_that_cannot_start_leaves_the_earlier_tables(finished):
    path, out, _, before = finished
    with pytest.raises(PluginError, match="cannot use the cluster"):
        chakra.sweep(path, out, executor="unreachable")
    # before: results.csv held only its header, results.json no rows, sweep.json the new executor
    assert {n: (out / n).read_bytes() for n in before} == before


def test_an_interrupted_sweep_keeps_the_earlier_points_of_the_same_key(finished):
    path, out, first, _ = finished
    with pytest.raises(KeyboardInterrupt):
        chakra.sweep(path, out, executor="stops-after-one")
    body = json.loads((out / "results.json").read_text())
    # before: 1 row, the point this run finished; the 3 others still had valid ok records
    assert [r["point"] for r in body["rows"]] == [0, 1, 2, 3]
    assert _untimed(body["rows"]) == _untimed(json.loads(json.dumps(first["rows"])))
    assert body["sweep"]["executor"] == "stops-after-one"
    assert len(list(csv.DictReader((out / "results.csv").open()))) == 4 == pq.read_table(out / "results.parquet").num_rows


def test_a_derived_path_that_is_also_swept_is_refused_with_its_line(tmp_path):
    path = four_points(tmp_path, derive={"system.network[0].bandwidth": "100"})
    line = path.read_text().splitlines().index("    system.network[0].bandwidth: '100'") + 1
    with pytest.raises(ConfigError, match=rf"sweep.yaml:line {line}: sweep.derive: system.network\[0\].bandwidth "
                                          r"is swept \(in grid\) and derived"):
        chakra.sweep(path, tmp_path / "out", check=True)
    with pytest.raises(ConfigError, match=r"^p.yaml: sweep.derive: a.n is swept \(in random.params\)"):
        parse_sweep({"random": {"count": 2, "params": {"a.n": [1, 2]}}, "derive": {"a.n": "3"}}, "p.yaml")


def test_integer_draws_on_the_log_scale_stay_within_low_and_high():
    def draws(low: float, high: float) -> list[int]:
        spec = parse_sweep({"random": {"seed": 3, "count": 400, "params": {
            "a.n": {"low": low, "high": high, "integer": True, "log": True}}}}, "p.yaml")
        return [p.params["a.n"] for p in expand({"a": {}}, spec, "p.yaml")]

    assert set(draws(1.2, 2.2)) == {2}  # before: 1 (round(exp(u)) for u near log 1.2)
    wide = draws(1.2, 9.7)
    assert set(wide) == set(range(2, 10)) and all(isinstance(n, int) for n in wide)
    # each k takes the share log((k + 1) / k) / log(10 / 2) of the draws: 2 about 25%, 9 about 6.5%
    assert wide.count(2) > 2 * wide.count(9) > 0
    spec = parse_sweep({"random": {"seed": 1, "count": 200, "params": {
        "a.n": {"low": 0.5, "high": 3.5, "integer": True}}}}, "p.yaml")
    assert {p.params["a.n"] for p in expand({"a": {}}, spec, "p.yaml")} == {1, 2, 3}


def _rows(v: object) -> list[dict]:
    return [{"point": 0, "key": "k0", "status": "ok", "error": None, "b.v": v, "b.x": 1.5},
            {"point": 1, "key": "k1", "status": "ok", "error": None, "b.v": 7, "b.x": float("nan")}]


def test_numbers_past_64_bits_are_written_exactly(tmp_path):
    files, notes = write_tables(tmp_path, _rows(2**70), {"executor": "local"})  # before: OverflowError
    assert files == [str(tmp_path / n) for n in TABLE_FILES]
    assert pq.read_table(tmp_path / "results.parquet").column("b.v").to_pylist() == [2**70, 7]
    assert notes == ["column 'b.v' has whole numbers past 64 bits: written as decimal(38, 0)"]
    body = json.loads((tmp_path / "results.json").read_text())
    assert [r["b.v"] for r in body["rows"]] == [2**70, 7] and body["notes"] == notes
    assert [r["b.x"] for r in body["rows"]] == [1.5, None]
    assert [r["b.v"] for r in csv.DictReader((tmp_path / "results.csv").open())] == [str(2**70), "7"]
    _, notes = write_tables(tmp_path, _rows(10**40), {})
    assert pq.read_table(tmp_path / "results.parquet").column("b.v").to_pylist() == [str(10**40), "7"]
    assert notes == ["column 'b.v' has whole numbers past 38 digits: written as text"]


def test_the_three_tables_are_replaced_together_or_not_at_all(tmp_path, monkeypatch):
    write_tables(tmp_path, _rows(1), {})
    before = {n: (tmp_path / n).read_bytes() for n in TABLE_FILES}

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", disk_full)
    with pytest.raises(OSError):
        write_tables(tmp_path, _rows(2), {})
    assert {n: (tmp_path / n).read_bytes() for n in TABLE_FILES} == before  # before: a new results.csv
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(TABLE_FILES)  # no staging left


def test_json_output_has_null_for_nan_and_infinity(capsys):
    print_json({"rows": [{"v": float("nan"), "w": [float("inf"), -float("inf"), 1.5]}], "n": (2, float("nan"))})

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    assert json.loads(capsys.readouterr().out, parse_constant=refuse) == \
        {"rows": [{"v": None, "w": [None, None, 1.5]}], "n": [2, None]}


def test_a_missing_input_file_is_refused_at_planning(tmp_path):
    path = four_points(tmp_path)
    path.write_text(path.read_text().replace(str(WORKLOAD), str(tmp_path / "missing.txt")))
    with pytest.raises(ConfigError, match=rf"sweep.yaml: point 0 \(.*\): {tmp_path / 'missing.txt'}: no such file"):
        chakra.sweep(path, tmp_path / "out", check=True)
    assert not (tmp_path / "out").exists()


def test_a_short_name_two_paths_share_is_named_ambiguous(tmp_path):
    spec = parse_sweep({"grid": {"s.net[0].bandwidth": [25, 50], "s.net[1].bandwidth": [25]},
                        "constraints": ["bandwidth >= 50"]}, "p.yaml")
    with pytest.raises(ConfigError, match=r"'bandwidth >= 50': 'bandwidth' is ambiguous: the last key of "
                                          r"s.net\[0\].bandwidth and s.net\[1\].bandwidth; write the full path"):
        expand({"s": {"net": [{}, {}]}}, spec, "p.yaml")


def test_a_misspelt_swept_path_gets_did_you_mean(tmp_path):
    spec = parse_sweep({"grid": {"sytem.network[0].bandwidth": [25]}}, "p.yaml")
    with pytest.raises(ConfigError, match=r"no item \[0\] \(a list of 0\); the pipeline has no 'sytem' "
                                          r"\(did you mean 'system'\?\)"):
        expand({"system": SYSTEM}, spec, "p.yaml")


def test_the_workers_are_said(finished, chakra_cli):
    path, out, first, _ = finished
    assert first["workers"] == 2 == json.loads((out / "sweep.json").read_text())["workers"]
    assert json.loads((out / "results.json").read_text())["sweep"]["workers"] == 2
    code, text, err = chakra_cli("sweep", path, "-o", out.with_name("again"), "-j", "2")
    assert code == 0, err
    assert "executor local: 2 worker(s) (-j 2)" in text.splitlines()
    code, text, err = chakra_cli("sweep", path, "-o", out, "--resume")
    assert code == 0 and "executor local: no point to run" in text.splitlines(), err


def _raise_keyboard_interrupt(task: object) -> None:
    raise KeyboardInterrupt


def test_a_worker_ends_quietly_on_ctrl_c():
    parent, child = multiprocessing.Pipe()
    parent.send((_raise_keyboard_interrupt, None))
    try:
        _serve(child, None)  # before: the KeyboardInterrupt went up, printed by multiprocessing
    except KeyboardInterrupt:
        pytest.fail("the worker let KeyboardInterrupt out")
    assert parent.recv() == ("ready", None) and not parent.poll()


def test_ctrl_c_on_a_local_sweep_is_one_line_and_exit_130(tmp_path):
    doc = yaml.safe_load(four_points(tmp_path).read_text())
    # minutes a point (1,000 passes of 512 ranks): Ctrl-C finds the workers running
    # (the clock given: the workers state no default on stderr)
    doc["input"]["options"].update(npus=512, passes=1000, cycle_ns=1.0)
    doc["system"]["network"][0]["npus_count"] = 512
    doc["system"]["all-reduce-implementation"] = "doubleBinaryTree"
    (tmp_path / "slow.yaml").write_text(yaml.safe_dump(doc))
    proc = subprocess.Popen([sys.executable, "-m", "chakra_core.cli.main", "sweep", str(tmp_path / "slow.yaml"),
                             "-o", str(tmp_path / "out"), "-j", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "out" / "sweep.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C does: the whole process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "chakra: interrupted\n"
