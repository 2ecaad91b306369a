"""Converting a recorded PyTorch pair imports only what the conversion uses: no YAML (system
descriptions and pipelines), not the Kineto-only route's modules (a host ET is among the inputs),
and without validation no numpy (the graph is ordered in Python)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import chakra_core

DATA = Path(__file__).resolve().parent / "data"
CODE = """
import sys
import chakra_core
chakra_core.convert(sys.argv[1], sys.argv[2] + "/", validate=sys.argv[3] == "1")
print(sorted(m for m in ("yaml", "numpy", "numba", "chakra_pytorch.kineto_graph") if m in sys.modules))
"""


@pytest.mark.parametrize("validate,loaded", [(True, "['numpy']"), (False, "[]")])
def test_convert_imports(tmp_path, validate, loaded):
    r = subprocess.run([sys.executable, "-c", CODE, str(DATA / "ddp"), str(tmp_path / "et"), str(int(validate))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[-2] == loaded
    assert sorted(p.name for p in (tmp_path / "et").iterdir()) == ["trace.0.et", "trace.1.et"]


VALIDATE = """
import sys
import chakra_core
v = chakra_core.validate(sys.argv[1])
print(len(v), sorted(m for m in ("numpy", "numba") if m in sys.modules))
"""


@pytest.mark.parametrize("name", ["mlp", "transformer", "threads"])
def test_one_rank_validates_without_numpy(tmp_path, name):
    """A converted rank is in dependency order with its ids not ascending: converting it with
    validation, and validating the written file, read it once (no DepGraph) and load no numpy."""
    r = subprocess.run([sys.executable, "-c", CODE, str(DATA / name), str(tmp_path / "et"), "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[-2] == "[]"
    ids = [n.id for n in chakra_core.open_traceset(str(tmp_path / "et" / "trace.0.et"))[0].nodes()]
    assert ids != sorted(ids)
    r = subprocess.run([sys.executable, "-c", VALIDATE, str(tmp_path / "et" / "trace.0.et")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[-2] == "0 []"


def test_plain_json_inputs_load_no_yaml(tmp_path):
    """Plain ``.json`` inputs are told apart from Chakra's own JSON form by their first bytes:
    detecting the format loads neither YAML nor protobuf's JSON mapping (the JSON form's reader)."""
    code = CODE.replace('print(', 'print("google.protobuf.json_format" in sys.modules, "yaml" in sys.modules, ')
    r = subprocess.run([sys.executable, "-c", code, str(DATA / "nccl"), str(tmp_path / "et"), "0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[-2] == "False False []"
    assert sorted(p.name for p in (tmp_path / "et").iterdir()) == ["trace.0.et", "trace.1.et"]
