"""``Backend.loads_compiled`` is a hint for the way the validation before a run reads the set: a
backend registered without the method (an object that does not subclass ``Backend``), or whose
answer fails, runs as before, and a True answer where numba is not installed leaves the
validation to the per-node path instead of asking for numba.  Each case runs in a process of its
own (the backends are added to that process's plugin host only)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from chakra_core import GlobalMetadata, MemoryRank, Node, TraceSet

#: a set, and two backends that answer nothing usable: ``duck`` has no ``loads_compiled``, ``sour``
#: raises in it; then ``chakra simulate --backend NAME`` (NAME from argv)
_RUN = """
import sys
from chakra_core import Backend, Result, get_host, hookimpl

class Duck:  # registered without subclassing Backend: what the registry and a run need
    kind = "simulator"
    description = "no loads_compiled"
    options = {}
    def check_options(self, options):
        return dict(options or {})
    def algorithms(self):
        return ()
    def run(self, traces, options, output):
        return Result("duck", self.kind, {"ranks": len(traces)})

class Sour(Backend):
    kind = "simulator"
    def loads_compiled(self, traces, options):
        raise RuntimeError("a bug in the hint")
    def run(self, traces, options, output):
        return Result("sour", self.kind, {"ranks": len(traces)})

class Plugin:
    @hookimpl
    def chakra_register_backends(self, register):
        register("duck", Duck)
        register("sour", Sour)

get_host().add_plugin(Plugin(), "hints")
from chakra_core.cli.main import main
sys.exit(main(["simulate", sys.argv[1], "--backend", sys.argv[2], "--json"]))
"""


@pytest.fixture
def job(tmp_path, dp_set):
    dp_set.write(tmp_path / "job" / "trace")
    return str(tmp_path / "job")


@pytest.mark.parametrize("backend", ["duck", "sour"])
def test_a_backend_without_an_answer_runs_validated(job, backend):
    r = subprocess.run([sys.executable, "-c", _RUN, job, backend], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert '"ranks": 2' in r.stdout


def test_a_true_answer_without_numba_validates_per_node(job, tmp_path):
    """With numba not importable, the validation runs as Python and still refuses a bad set (a
    dependency on a node the file does not hold)."""
    bad = tmp_path / "bad"
    TraceSet([MemoryRank(0, GlobalMetadata(version="0.0.4"),
                         [Node(id=1, name="a", type=4, duration_micros=1, data_deps=[7])])]).write(bad / "trace")
    code = ("import sys; sys.modules['numba'] = None\n"
            "from chakra_core import open_traceset, TraceFormatError\n"
            "from chakra_core.pipeline._pipeline import refuse_invalid\n"
            f"refuse_invalid(open_traceset({job!r}), ['x'], compiled=True)\n"
            "print('valid')\n"
            "try:\n"
            f"    refuse_invalid(open_traceset({str(bad)!r}), ['x'], compiled=True)\n"
            "except TraceFormatError as e:\n"
            "    print('refused', 'missing-dep' in str(e))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["valid", "refused", "True"], r.stderr
