"""Conversion fanned out per rank (``chakra convert -j N``, a sweep's inputs) gives the serial
conversion's bytes; a bad rank fails it whole; the local pool kills a worker stuck in native code."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import chakra_core as chakra
from chakra_core import TraceFormatError

ROOT = Path(__file__).resolve().parents[1]
DDP = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp"
WORKLOAD = ROOT / "examples" / "text" / "resnet50_like.txt"


def files_of(directory: Path) -> dict[str, bytes]:
    """Every file of a directory by name (the chakra output marker aside)."""
    return {p.name: p.read_bytes() for p in sorted(Path(directory).iterdir()) if p.name != ".chakra-output"}


def check_parts_equal_serial(tmp_path: Path, inputs: str | list[str], input_options: dict | None = None,
                             **fan) -> None:
    """Convert serially and fanned out; the files and the provenance must be the same."""
    serial = chakra.convert(inputs, f"{tmp_path}/serial/", input_options=input_options)
    parts = chakra.convert(inputs, f"{tmp_path}/parts/", input_options=input_options, **fan)
    mine, theirs = files_of(tmp_path / "parts"), files_of(tmp_path / "serial")
    assert list(mine) == list(theirs) and len(mine) == serial.summary["ranks"] > 1
    assert all(mine[k] == theirs[k] for k in mine)
    assert parts.summary == serial.summary and not parts.notes
    assert [Path(f).name for f in parts.files] == [Path(f).name for f in serial.files]
    assert parts.provenance["implementations"] == serial.provenance["implementations"]
    assert parts.provenance["inputs"] == serial.provenance["inputs"]


def test_recorded_pytorch_set_in_parts_is_the_serial_set(tmp_path):
    check_parts_equal_serial(tmp_path, str(DDP), jobs=2)


@pytest.mark.parametrize("jobs", [2, 3])
def test_text_workload_in_parts_is_the_serial_set(tmp_path, jobs):
    check_parts_equal_serial(tmp_path, str(WORKLOAD), {"npus": 8}, jobs=jobs)  # 3 parts of 8 ranks: 3, 3, 2


def _bad_rank(tmp_path: Path) -> Path:
    """The recorded DDP set with rank 1's host execution trace cut in the middle (valid gzip)."""
    bad = tmp_path / "ddp"
    shutil.copytree(DDP, bad)
    host = bad / "pytorch_et.1.json.gz"
    text = gzip.decompress(host.read_bytes())
    host.write_bytes(gzip.compress(text[: len(text) // 2]))
    return bad


def test_a_bad_rank_fails_the_conversion_naming_its_file(tmp_path):
    bad = _bad_rank(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "trace.0.et").write_bytes(b"earlier")
    with pytest.raises(TraceFormatError) as e:
        chakra.convert(str(bad), out, jobs=2)
    assert e.value.where == str(bad / "pytorch_et.1.json.gz")
    assert "\n" not in str(e.value)
    assert sorted(p.name for p in out.iterdir()) == ["trace.0.et"]  # nothing half written
    assert (out / "trace.0.et").read_bytes() == b"earlier"
    r = subprocess.run([sys.executable, "-m", "chakra_core.cli.main", "convert", str(bad), "-o", str(out), "-j", "2"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert str(bad / "pytorch_et.1.json.gz") in r.stderr and "Traceback" not in r.stderr


def test_recorded_jax_program_with_its_profile_in_parts_is_the_serial_set(tmp_path):
    mesh8 = ROOT / "plugins" / "chakra-jax" / "tests" / "data" / "mesh8"
    check_parts_equal_serial(tmp_path, [str(mesh8 / "program.hlo.txt"), str(mesh8 / "profile.xplane.pb")], jobs=3)


def test_a_format_without_per_rank_is_converted_in_one_process(tmp_path):
    chakra.export(str(WORKLOAD), "json", tmp_path / "json", input_options={"npus": 4})
    serial = chakra.convert(str(tmp_path / "json"), f"{tmp_path}/serial/", format="json")
    one = chakra.convert(str(tmp_path / "json"), f"{tmp_path}/one/", format="json", jobs=2)
    assert files_of(tmp_path / "one") == files_of(tmp_path / "serial") and serial.summary["ranks"] == 4
    assert one.notes == ["format json does not convert its ranks independently: converted in one process"]


def _sweep(tmp_path: Path, paths: list[str], fmt: str, grid: dict, **extra) -> Path:
    doc = {"input": {"format": fmt, "paths": paths, "options": extra.pop("options", {})},
           "system": {"network": [{"topology": "Ring", "npus_count": 2, "bandwidth": 50, "latency": 500}],
                      "all-reduce-implementation": "ring", "local-mem-bw": 50},
           "backends": [{"name": "simpy"}], "sweep": {"grid": grid, **extra}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_sweep_converts_each_input_once_in_parts_to_the_serial_bytes(tmp_path):
    path = _sweep(tmp_path, [str(WORKLOAD)], "text", {"system.network[0].bandwidth": [25, 50],
                                                       "input.options.npus": [2, 4]},
                  derive={"system.network[0].npus_count": "input.options.npus"},
                  options={"npus": 2})
    out = chakra.sweep(path, tmp_path / "out", jobs=2)
    assert out["ok"] == 4
    cache = tmp_path / "out" / "cache"
    sets = sorted((d for d in cache.iterdir() if d.is_dir()), key=lambda d: len(list(d.glob("*.et"))))
    assert len(sets) == 2 and not [p for p in cache.iterdir() if p.name.startswith(".")]
    for npus, cached in zip((2, 4), sets):
        chakra.convert(str(WORKLOAD), f"{tmp_path}/serial{npus}/", input_options={"npus": npus})
        mine = {k: v for k, v in files_of(cached).items() if k.endswith(".et")}
        assert mine == files_of(tmp_path / f"serial{npus}")
        assert json.loads((cached / "ready.json").read_text()) == {"ranks": list(range(npus))}


def test_sweep_point_with_a_bad_rank_fails_with_its_file(tmp_path):
    bad = _bad_rank(tmp_path)
    path = _sweep(tmp_path, [str(bad)], "pytorch", {"system.network[0].bandwidth": [25, 50]})
    out = chakra.sweep(path, tmp_path / "out", jobs=2)
    assert (out["ok"], out["failed"]) == (0, 2)
    for row in out["rows"]:
        assert row["error"].startswith(f"converting the input: {bad / 'pytorch_et.1.json.gz'}:after node ")
    assert list((tmp_path / "out" / "cache").iterdir()) == []  # nothing half converted is kept


STUCK = '''
import os
import signal
import time

from chakra_core import Backend, Option, Result, hookimpl


class Stuck(Backend):
    kind = "simulator"
    description = "a simulator stuck in native code, or killing its process, when asked"
    options = {"mode": Option("str", "ok", "ok; stuck: block the point's alarm and sleep in C; die: SIGKILL itself")}

    def run(self, traces, options, output):
        if options["mode"] == "stuck":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(3600)
        elif options["mode"] == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        return Result("stuck", self.kind, {"ranks": len(traces)})


@hookimpl
def chakra_register_backends(register):
    register("stuck", Stuck, description=Stuck.description)
'''


#: the sweep's timeout there: ten times what a point takes before its backend runs on an idle machine
#: (reading its cached input, under 1 s), so that the stuck backend always blocks the alarm before it
#: rings, and the ok points always finish, at a load of several times the cores
STUCK_TIMEOUT_S = 8


def test_sweep_points_stuck_in_native_code_or_dying_fail_alone(tmp_path, chakra_fake_dist):
    env = chakra_fake_dist("chakra-stuck", "1.0", {"stuck": "stuck_plugin"}, {"stuck_plugin": STUCK})
    doc = {"input": {"format": "text", "paths": [str(WORKLOAD)], "options": {"npus": 2}},
           "backends": [{"name": "stuck"}],
           "sweep": {"grid": {"backends.stuck.options.mode": ["stuck", "ok", "die"], "input.options.passes": [1, 2]},
                     "timeout_s": STUCK_TIMEOUT_S}}
    path = tmp_path / "stuck.yaml"
    path.write_text(yaml.safe_dump(doc))
    r = subprocess.run([sys.executable, "-m", "chakra_core.cli.main", "sweep", str(path), "-o", str(tmp_path / "out"),
                        "-j", "1", "-O", "kill_after_s=0.5", "--json"], capture_output=True, text=True, env=env,
                       timeout=240)
    assert r.returncode == 1, r.stderr
    rows = json.loads(r.stdout)["rows"]
    by = {(row["backends.stuck.options.mode"], row["input.options.passes"]): row for row in rows}
    for passes in (1, 2):  # one worker (-j 1): each point after a kill or a death ran on a new one
        assert by[("ok", passes)]["status"] == "ok" and by[("ok", passes)]["stuck.ranks"] == 2
        assert by[("stuck", passes)]["status"] == "timeout"
        assert by[("stuck", passes)]["error"] == f"did not finish within {STUCK_TIMEOUT_S} s (killed 0.5 s after its timeout)"
        assert by[("die", passes)]["status"] == "failed"
        assert by[("die", passes)]["error"] == ("the executor lost the point: RuntimeError: the worker process died "
                                                "(exit code -9)")


def test_a_script_without_a_main_guard_is_told_to_add_one(tmp_path):
    """The local executor's workers import the caller's script as ``multiprocessing`` does: a
    script whose top level calls ``convert(jobs=2)`` ran again in each worker, whose own call
    printed multiprocessing's RuntimeError traceback; they now die quietly and the call says why."""
    script = tmp_path / "noguard.py"
    script.write_text(f"import chakra_core\nchakra_core.convert({str(DDP)!r}, {str(tmp_path / 'out')!r} + '/', jobs=2)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("chakra_core.base._errors.PluginError: executor 'local': worker processes die as they "
                           "start"), done.stderr
    assert "must guard its top level with 'if __name__ == \"__main__\":'" in last
    assert "bootstrapping phase" not in done.stderr and done.stderr.count("Traceback") == 1, done.stderr
    assert not (tmp_path / "out").exists()
