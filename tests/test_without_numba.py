"""``chakra stats`` and ``jsonize`` with numba absent (the node-by-node paths and the plain-Python
loops): the same statistics and the same JSON bytes as in this process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chakra_core.io._etio import EtReader
from chakra_core.io._jsonform import write_json
from chakra_core.trace._stats import compute_stats
from chakra_core.trace._traceset import open_traceset

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "data" / "golden.0.et"

_HIDDEN = r"""
import importlib.util, json, sys
found = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.split(".")[0] == "numba" else found(name, *a)
sys.modules["numba"] = None  # import numba fails
from chakra_core.base._kernels import INSTALLED as COMPILED
from chakra_core.io._etio import EtReader
from chakra_core.io._jsonform import write_json
from chakra_core.trace._stats import compute_stats
from chakra_core.trace._traceset import open_traceset
golden, out = sys.argv[1], sys.argv[2]
write_json(out, EtReader(golden).metadata, EtReader(golden), rank=0)
print(json.dumps({"compiled": COMPILED, "stats": compute_stats(open_traceset(golden))}))
"""


def test_same_without_numba(tmp_path):
    done = subprocess.run([sys.executable, "-c", _HIDDEN, str(GOLDEN), str(tmp_path / "plain.json")],
                          capture_output=True, text=True, check=True)
    got = json.loads(done.stdout)
    assert got["compiled"] is False
    assert got["stats"] == json.loads(json.dumps(compute_stats(open_traceset(str(GOLDEN)))))
    assert got["stats"]["longest_path_us"] == 30
    write_json(tmp_path / "here.json", EtReader(str(GOLDEN)).metadata, EtReader(str(GOLDEN)), rank=0)
    assert (tmp_path / "plain.json").read_bytes() == (tmp_path / "here.json").read_bytes()
