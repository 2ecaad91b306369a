"""Converting a recorded PyTorch pair imports only what the conversion uses: no YAML (system
descriptions and pipelines), and without validation no numpy (the graph is ordered in Python)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
CODE = """
import sys
import chakra_core
chakra_core.convert(sys.argv[1], sys.argv[2] + "/", validate=sys.argv[3] == "1")
print(sorted(m for m in ("yaml", "numpy", "numba") if m in sys.modules))
"""


@pytest.mark.parametrize("validate,loaded", [(True, "['numpy']"), (False, "[]")])
def test_convert_imports(tmp_path, validate, loaded):
    r = subprocess.run([sys.executable, "-c", CODE, str(DATA / "ddp"), str(tmp_path / "et"), str(int(validate))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[-2] == loaded
    assert sorted(p.name for p in (tmp_path / "et").iterdir()) == ["trace.0.et", "trace.1.et"]
