"""A small set is simulated without numba, by the same loops run as Python, with the results of
the compiled loops: PyTorch's recorded two-rank DDP run (chakra-pytorch's tests/data/ddp)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chakra_core import convert, simulate
from chakra_simpy import backend, symmetry

ROOT = Path(__file__).resolve().parents[3]
DDP = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp"
SYSTEM = ROOT / "examples" / "system" / "any_size.yaml"


@pytest.fixture(scope="module")
def ddp_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ddp") / "et"
    convert(str(DDP), f"{out}/")
    return out


def test_a_small_simulate_loads_no_numba(ddp_set, tmp_path):
    code = ("import sys\nimport chakra_core\n"
            "chakra_core.simulate(sys.argv[1], system=sys.argv[2], output=sys.argv[3])\n"
            "print('numba' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code, str(ddp_set), str(SYSTEM), str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.split()[-1:] == ["False"], r.stderr
    assert (tmp_path / "out" / "result.json").is_file()


@pytest.mark.parametrize("symmetric", [True, False])
def test_the_python_and_compiled_loops_simulate_alike(ddp_set, monkeypatch, tmp_path, symmetric):
    pytest.importorskip("numba")
    results = []
    for compile_it in (False, True):
        monkeypatch.setattr(backend, "ranks_compiled_worthwhile", lambda *_a, c=compile_it: c)
        monkeypatch.setattr(symmetry, "keys_compiled_worthwhile", lambda *_a, c=compile_it: c)
        timeline = tmp_path / f"timeline_{compile_it}.json"
        got = simulate(str(ddp_set), system=str(SYSTEM), timeline=str(timeline), options={"symmetry": symmetric})
        summary = {k: v for k, v in got.summary.items() if k not in ("wall_s", "events_per_s")}
        results.append((summary, got.ranks, timeline.read_bytes()))
    assert results[0] == results[1]
    assert results[0][0]["events"] > 0 and len(results[0][1]) == 2
