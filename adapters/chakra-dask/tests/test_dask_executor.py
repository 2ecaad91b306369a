"""The ``dask`` executor on a real local cluster (loopback only), run as ``chakra sweep`` does.

The sweeps use the backend ``fault`` of a small distribution written into the test's folder and
put on ``PYTHONPATH`` (the cluster's workers inherit it): ``mode`` ``ok`` returns at once,
``die`` kills its worker with SIGKILL, ``exit`` calls ``sys.exit(3)``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "text" / "resnet50_like.txt"

PLUGIN = '''
import os, signal, sys
from chakra_core import Backend, Option, Result, hookimpl

class Fault(Backend):
    kind = "simulator"
    description = "misbehaves on request"
    options = {"mode": Option("str", "ok", "ok, die or exit")}

    def run(self, traces, options, output):
        if options["mode"] == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if options["mode"] == "exit":
            sys.exit(3)
        return Result("fault", self.kind, {"ranks": len(traces)})

@hookimpl
def chakra_register_backends(register):
    register("fault", Fault, description=Fault.description)
'''


def _sweep(tmp_path: Path, modes: list[str]) -> Path:
    """A sweep file of one point per mode of the ``fault`` backend."""
    path = tmp_path / "faults.yaml"
    options = {"npus": 2, "cycle_ns": 1.0}  # the clock given: the workers warn of no default
    path.write_text(json.dumps({"input": {"format": "text", "paths": [str(EXAMPLE)], "options": options},
                                "backends": [{"name": "fault"}],
                                "sweep": {"grid": {"backends.fault.options.mode": modes}, "timeout_s": 60}}))
    return path


def _chakra(env: dict[str, str], *args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "chakra_core.cli.main", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)


def _untimed(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("seconds", "error", "provenance")} for r in rows]


def test_a_dead_worker_fails_its_point_only_as_on_the_local_executor(tmp_path, chakra_fake_dist):
    """By default Dask's scheduler ran a point whose worker died on 3 more workers, which it killed
    in turn, with the points queued on them; and it logged each death, with tracebacks."""
    env = chakra_fake_dist("chakra-fault", "1.0", {"fault": "fault_plugin"}, {"fault_plugin": PLUGIN})
    path = _sweep(tmp_path, ["die", "ok", "exit", "ok"])
    dask = _chakra(env, "sweep", path, "-o", tmp_path / "dask", "-j", "1", "--executor", "dask", "--json")
    local = _chakra(env, "sweep", path, "-o", tmp_path / "local", "-j", "1", "--json")
    assert dask.returncode == local.returncode == 1, dask.stderr
    rows = json.loads(dask.stdout)["rows"]
    assert [r["status"] for r in rows] == ["failed", "ok", "failed", "ok"]
    assert _untimed(rows) == _untimed(json.loads(local.stdout)["rows"])
    died = r"point (0|2): failed: the executor lost the point: RuntimeError: the worker process died " \
           r"\(Dask worker tcp://127\.0\.0\.1:\d+\)"
    assert [bool(re.fullmatch(died, line)) for line in dask.stderr.splitlines()] == [True, True], dask.stderr
