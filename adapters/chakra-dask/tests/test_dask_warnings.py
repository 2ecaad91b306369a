"""The ``dask`` executor's workers word their warnings as the process that runs the sweep does:
``chakra sweep``'s one ``chakra: warning:`` line, or the wording a Python caller set.

A local cluster's workers write on the sweep's standard error.  The points read the text
workload without ``cycle_ns``, so its input warns of the default clock (a ``TextWarning``).  The
backend ``count`` of a small distribution written into the test's folder and put on
``PYTHONPATH`` (the cluster's workers inherit it) returns at once; the distribution's module
also holds the wording a Python caller sets.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "text" / "resnet50_like.txt"

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
    sweep(sys.argv[1], sys.argv[2], executor="dask", executor_options={"workers": 1})
'''

WARNING = "time_unit=cycles of cycle_ns=1.0"


@pytest.fixture
def count_env(chakra_fake_dist) -> dict[str, str]:
    """The environment of a subprocess that finds the ``count`` distribution."""
    return chakra_fake_dist("chakra-count", "1.0", {"count": "count_plugin"}, {"count_plugin": PLUGIN})


def _sweep(tmp_path: Path) -> Path:
    """A sweep of two points whose input warns (no ``cycle_ns``)."""
    path = tmp_path / "warns.yaml"
    path.write_text(json.dumps({"input": {"format": "text", "paths": [str(EXAMPLE)], "options": {"npus": 2}},
                                "backends": [{"name": "count"}],
                                "sweep": {"grid": {"backends.count.options.tag": [1, 2]}, "timeout_s": 60}}))
    return path


def _run(env: dict[str, str], *args: object) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *map(str, args)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_a_worker_s_warning_is_one_chakra_line(tmp_path, count_env):
    err = _run(count_env, "-m", "chakra_core.cli.main", "sweep", _sweep(tmp_path), "-o", tmp_path / "out",
               "-j", "1", "--executor", "dask").stderr
    assert WARNING in err
    assert all(line.startswith("chakra: warning: ") for line in err.splitlines()), err


def test_a_python_caller_s_wording_reaches_the_workers(tmp_path, count_env):
    script = tmp_path / "run_sweep.py"
    script.write_text(SCRIPT)
    err = _run(count_env, script, _sweep(tmp_path), tmp_path / "out").stderr
    assert WARNING in err
    assert all(line.startswith("mine: ") for line in err.splitlines()), err
