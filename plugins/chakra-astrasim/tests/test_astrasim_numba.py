"""A small set is exported without loading numba (about 0.35-1 s of CPU and 125 MB a process):
its role keys are taken by the same loops run as Python, with the same files as the compiled
loops; a set whose .et files hold the threshold's bytes takes the compiled loops.  The set:
examples/text/gpt3_like.txt on 16 NPUs in model-parallel groups of 8, written as .et files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chakra_astrasim import backend, export_astrasim
from chakra_core import load_traces, open_traceset

TEXT = Path(__file__).resolve().parents[3] / "examples" / "text" / "gpt3_like.txt"
#: export the set argv[1] to argv[2] in a fresh interpreter, with argv[3] (when given) as the
#: threshold of compiled role keys; prints whether numba was loaded
_EXPORT = """
import sys
import chakra_core
from chakra_astrasim import reuse
if len(sys.argv) > 3:
    reuse.KEYS_COMPILED_FROM = int(sys.argv[3])
chakra_core.export(sys.argv[1], "astrasim", sys.argv[2])
print("numba" in sys.modules)
"""

pytest.importorskip("chakra_text")


@pytest.fixture(scope="module")
def et_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gpt3") / "trace"
    load_traces([str(TEXT)], "text", {"npus": 16, "mp_group": 8}).write(out)
    return out.parent


def _numba_loaded(et_set: Path, out: Path, *threshold: int) -> bool:
    r = subprocess.run([sys.executable, "-c", _EXPORT, str(et_set), str(out), *map(str, threshold)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (out / "run.sh").is_file()
    return r.stdout.split()[-1] == "True"


def test_a_small_export_loads_no_numba(et_set, tmp_path):
    assert not _numba_loaded(et_set, tmp_path / "out")


def test_a_set_of_the_threshold_takes_the_compiled_loops(et_set, tmp_path):
    pytest.importorskip("numba")
    size = sum(f.stat().st_size for f in et_set.glob("*.et"))
    assert size > 1 << 20  # 16 ranks of about 170 KB
    assert not _numba_loaded(et_set, tmp_path / "below", size + 1)
    assert _numba_loaded(et_set, tmp_path / "at", size)


def test_plain_and_compiled_role_keys_export_alike(et_set, tmp_path, monkeypatch):
    pytest.importorskip("numba")
    traces = open_traceset(str(et_set))
    reports = []
    for compile_it in (False, True):
        monkeypatch.setattr(backend, "keys_compiled", lambda *_a, c=compile_it: c)
        reports.append(export_astrasim(traces, tmp_path / str(compile_it), {}).summary["report"]["ranks"])
    assert reports[0] == reports[1]
    # one role up to the groups' names: rank 0 converted in full, the other 15 from its template
    assert (reports[0]["converted_once_reused"], reports[0]["converted_from_template"]) == (0, 15)
    files = sorted(f.relative_to(tmp_path / "False") for f in (tmp_path / "False").rglob("*") if f.is_file())
    # the workload, four configuration files (groups.json: the model-parallel groups), run.sh,
    # report.json and the output directory's marker
    assert len(files) == 16 + 4 + 3
    for f in files:
        assert (tmp_path / "False" / f).read_bytes() == (tmp_path / "True" / f).read_bytes(), f
