"""The simpy backend says when its run loads the core's compiled loops (``loads_compiled``), and
the validation before a simulation (``chakra simulate``, ``chakra_core.simulate``) takes them too
on such a set, which a validation alone reads as Python (under 8 MiB): numba's load is paid once,
not the per-node path on top of it. Whether the validation took them is seen from whether numba
is loaded as the backend starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chakra_core import load_traces, open_traceset

pytest.importorskip("numba")
from chakra_simpy import SimpyBackend  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SYSTEM = ROOT / "examples" / "system" / "system.yaml"

#: runs ``chakra_core.validate`` (argv: ``validate PATH``) or ``chakra_core.simulate`` (argv:
#: ``simulate PATH SYSTEM [novalidate]``) and prints whether numba is loaded as the backend starts
#: (``run True``/``False``) and at the end (``end ...``): before the backend runs, only the
#: validation may load it
_WATCH = """
import sys
import chakra_core
from chakra_core import get_host, hookimpl
class Watch:
    @hookimpl
    def chakra_stage_started(self, stage, name, context):
        if stage == "backend":
            print("run", "numba" in sys.modules)
get_host().add_plugin(Watch(), "watch")
if sys.argv[1] == "validate":
    chakra_core.validate(sys.argv[2])
else:
    chakra_core.simulate(sys.argv[2], system=sys.argv[3], validate=len(sys.argv) < 5)
print("end", "numba" in sys.modules)
"""


@pytest.fixture(scope="module")
def mid_set(tmp_path_factory) -> Path:
    """The GPT-3-like workload on 12 NPUs as .et files: 2.5 MB, between the simpy backend's
    bound (2 MiB) and a validation's own (8 MiB)."""
    out = tmp_path_factory.mktemp("mid") / "set"
    load_traces(str(ROOT / "examples" / "text" / "gpt3_like.txt"), "text", {"npus": 12, "mp_group": 4}).write(
        out / "trace")
    assert 2 << 20 <= sum(f.stat().st_size for f in out.glob("*.et")) < 8 << 20
    return out


def _numba_loaded(*argv: str) -> list[str]:
    r = subprocess.run([sys.executable, "-c", _WATCH, *argv], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # what plugins print while a stage runs goes to stderr (stdout is kept for a command's output)
    return [line for line in (r.stderr + r.stdout).splitlines() if line.startswith(("run ", "end "))]


def test_the_backend_says_when_it_loads_the_compiled_loops(mid_set):
    b = SimpyBackend()
    for symmetry in (True, False):  # the role keys' bound (2 MiB), the loading's (1 MiB)
        assert b.loads_compiled(open_traceset(str(mid_set)), b.check_options({"system": str(SYSTEM),
                                                                             "symmetry": symmetry}))


def test_validation_before_simulate_takes_the_compiled_loops(mid_set, tmp_path):
    """Alone, the validation reads the 2.5 MB set as Python; before a simulation of it, by the
    compiled loops; before a simulation of a small set (the DLRM-like one on 8 NPUs, 0.1 MB),
    as Python still (each in a process of its own, numba not loaded before)."""
    sys12 = tmp_path / "system.yaml"
    sys12.write_text(SYSTEM.read_text().replace("npus_count: 8", "npus_count: 12"))
    small = tmp_path / "small"
    load_traces(str(ROOT / "examples" / "text" / "dlrm_like.txt"), "text", {"npus": 8}).write(small / "trace")
    assert _numba_loaded("validate", str(mid_set)) == ["end False"]
    assert _numba_loaded("simulate", str(mid_set), str(sys12)) == ["run True", "end True"]
    assert _numba_loaded("simulate", str(small), str(SYSTEM)) == ["run False", "end False"]
    assert _numba_loaded("simulate", str(mid_set), str(sys12), "novalidate") == ["run False", "end True"]
