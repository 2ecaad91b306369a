"""The ``ray`` and ``dask`` executors' workers word their warnings as the process that runs the
sweep does: ``chakra sweep``'s one ``chakra: warning:`` line, or the wording a Python caller set
(:func:`chakra_core.worker_function`), on the sweep's standard error.

A local Dask cluster's workers write on the sweep's standard error; the Ray executor starts Ray
with ``log_to_driver`` off (a Ray worker's standard error is its log, under ``$RAY_TMPDIR/ray``:
a short folder of its own per test, Ray's socket paths must stay under 108 characters), so its
tasks send their warnings back and the executor gives them again in the sweep's process, each
message once.  The points read the text workload without ``cycle_ns``, so its input warns of
the default clock (a ``TextWarning``).  The backend ``count`` of a small distribution written
into the test's folder and put on ``PYTHONPATH`` (the cluster's workers inherit it) returns at
once; the distribution's module also holds the wording a Python caller sets.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "text" / "resnet50_like.txt"
ENGINES = [pytest.param(name, marks=pytest.mark.skipif(importlib.util.find_spec(module) is None,
                                                       reason=f"{module} is not installed"))
           for name, module in (("dask", "distributed"), ("ray", "ray"))]

PLUGIN = '''
from chakra_core import Backend, Option, Result, hookimpl

class Count(Backend):
    kind = "simulator"
    description = "counts the ranks"
    options = {"tag": Option("int", 0, "a number that tells the points apart")}

    def run(self, traces, options, output):
        return Result("count", self.kind, {"ranks": len(traces)})

def mine(message, category, filename, lineno, file=None, line=None):
    return f"mine: {message}\\n"

@hookimpl
def chakra_register_backends(register):
    register("count", Count, description=Count.description)
'''

SCRIPT = '''
import sys, warnings

import count_plugin
from chakra_core import sweep

if __name__ == "__main__":
    warnings.formatwarning = count_plugin.mine
    sweep(sys.argv[1], sys.argv[2], executor=sys.argv[3], executor_options={"workers": 1})
'''

WARNING = "time_unit=cycles of cycle_ns=1.0"


@pytest.fixture
def count_env(chakra_fake_dist) -> Iterator[dict[str, str]]:
    """The environment of a subprocess that finds the ``count`` distribution and keeps Ray's
    session in a folder of its own."""
    env = chakra_fake_dist("chakra-count", "1.0", {"count": "count_plugin"}, {"count_plugin": PLUGIN})
    temp = tempfile.mkdtemp(prefix="rw", dir="/tmp")
    try:
        yield {**env, "RAY_TMPDIR": temp}
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _sweep(tmp_path: Path) -> Path:
    """A sweep of two points whose input warns (no ``cycle_ns``)."""
    path = tmp_path / "warns.yaml"
    path.write_text(json.dumps({"input": {"format": "text", "paths": [str(EXAMPLE)], "options": {"npus": 2}},
                                "backends": [{"name": "count"}],
                                "sweep": {"grid": {"backends.count.options.tag": [1, 2]}, "timeout_s": 120}}))
    return path


def _worker_lines(env: dict[str, str], *args: object) -> list[str]:
    """Run ``python ARGS`` in ``env``; the lines of its standard error."""
    done = subprocess.run([sys.executable, *map(str, args)], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_worker_s_warning_is_one_chakra_line(tmp_path, count_env, engine):
    lines = _worker_lines(count_env, "-m", "chakra_core.cli.main", "sweep", _sweep(tmp_path), "-o",
                          tmp_path / "out", "-j", "1", "--executor", engine)
    said = [line for line in lines if WARNING in line]
    assert said and all(line.startswith("chakra: warning: ") for line in lines), lines
    if engine == "ray":  # the sweep's own process as it plans, then the executor once for the two points
        assert len(said) == 2, lines


@pytest.mark.parametrize("engine", ENGINES)
def test_a_python_caller_s_wording_reaches_the_workers(tmp_path, count_env, engine):
    script = tmp_path / "run_sweep.py"
    script.write_text(SCRIPT)
    lines = _worker_lines(count_env, script, _sweep(tmp_path), tmp_path / "out", engine)
    assert any(WARNING in line for line in lines), lines
    assert all(line.startswith("mine: ") for line in lines), lines
