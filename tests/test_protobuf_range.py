"""The bindings load and work with the lowest protobuf runtime that pyproject.toml declares.

Installs that version into a private folder (from the package index) and runs a golden-trace
round trip in a subprocess with it first on the path.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lowest() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    return re.search(r'"protobuf>=([0-9.]+),<\d+"', text).group(1)


def test_bindings_with_lowest_protobuf(tmp_path, golden_path):
    version = _lowest()
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(tmp_path),
                        f"protobuf=={version}"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"cannot install protobuf=={version}: {r.stderr[-500:]}")
    code = (
        "import sys, warnings; warnings.simplefilter('error')\n"
        "import google.protobuf as g\n"
        "from chakra_core import read_et, write_et\n"
        f"meta, nodes = read_et({str(golden_path)!r})\n"
        f"write_et({str(tmp_path / 'copy.et')!r}, meta, nodes)\n"
        "print(g.__version__, len(nodes))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [version, "9"]
    assert (tmp_path / "copy.et").read_bytes() == golden_path.read_bytes()
