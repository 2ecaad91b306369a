"""Every bundled example exports to a directory ASTRA-sim runs, with replay and roofline systems.

Inputs: the text workloads of examples/text/ (written by examples/text/make_examples.py) and the
PyTorch traces recorded by plugins/chakra-pytorch/recording/ (DDP and every collective kind on
2 ranks); systems: every description under examples/system/ (replay: system.yaml,
two_nodes.yaml, ASTRA-sim's own files in astra/; roofline: system_2d.yaml, 1,024 NPUs with
400 TFLOPS, where a 0-us node would be a 0.5 ns event) and system.yaml with roofline compute.
Each export is checked against every rule of the spec (conftest.check_export), including
"no roofline compute event of 0 ns"; when an ASTRA-sim binary is found
(``CHAKRA_ASTRASIM_BIN`` or the PATH) each export is also run and every rank must finish.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from chakra_astrasim import export_astrasim
from chakra_core import load_traces

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
PYTORCH = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"
SYSTEMS = {  # name -> (options, NPUs of the network)
    "system.yaml": ({"system": str(EXAMPLES / "system" / "system.yaml")}, 8),
    "two_nodes.yaml": ({"system": str(EXAMPLES / "system" / "two_nodes.yaml")}, 16),
    "astra": ({k: str(EXAMPLES / "system" / "astra" / f) for k, f in
               (("system", "system.json"), ("network", "network.yml"), ("memory", "memory.json"))}, 8),
    "system_2d.yaml": ({"system": str(EXAMPLES / "system" / "system_2d.yaml")}, 1024),
    "system.yaml roofline": (None, 8),
}
TEXT = {"resnet50_like.txt": {}, "dlrm_like.txt": {}, "gpt3_like.txt": {"mp_group": 8}}
#: ranks of the text sets on the 1,024-NPU system (the others pad the network with idle ranks)
RANKS_2D = 16


def _system(name: str, tmp_path: Path) -> dict:
    opts, _ = SYSTEMS[name]
    if opts is None:  # our reference machine with roofline compute (the file's comment says how)
        text = (EXAMPLES / "system" / "system.yaml").read_text()
        text = text.replace("compute: replay", "compute: {model: roofline, peak-perf: 400}")
        assert "roofline" in text
        path = tmp_path / "roofline.yaml"
        path.write_text(text)
        opts = {"system": str(path)}
    return opts


def _inputs():
    for name, extra in TEXT.items():
        for system, (_opts, npus) in SYSTEMS.items():
            yield pytest.param(("text", name, extra, system, min(npus, RANKS_2D)), id=f"{name}-{system}")
    for name in ("ddp", "collectives"):
        for system in ("system.yaml", "system.yaml roofline", "system_2d.yaml"):
            yield pytest.param(("pytorch", name, {}, system, 2), id=f"pytorch-{name}-{system}")


def _export(case, tmp_path: Path) -> tuple[Path, dict]:
    fmt, name, extra, system, ranks = case
    if fmt == "text":
        pytest.importorskip("chakra_text")
        ts = load_traces([str(EXAMPLES / "text" / name)], "text", {"npus": ranks, **extra})
    else:
        pytest.importorskip("chakra_pytorch.format")
        ts = load_traces([str(PYTORCH / name)], "pytorch", {})
    out = tmp_path / "out"
    res = export_astrasim(ts, out, _system(system, tmp_path))
    return out, res.summary


@pytest.mark.parametrize("case", list(_inputs()))
def test_every_example_exports(tmp_path, case, astrasim_check):
    out, summary = _export(case, tmp_path)
    astrasim_check(out)
    sysj = json.loads((out / "system.json").read_text())
    assert summary["ranks"] == SYSTEMS[case[3]][1]
    assert sysj["roofline-enabled"] == (1 if case[3] in ("system_2d.yaml", "system.yaml roofline") else 0)


def test_zero_time_roofline_nodes_are_counted(tmp_path):
    """gpt3_like has compute times below 1 us (a 63-cycle embedding): against 400 TFLOPS each
    would be a 0.5 ns event; the export raises them to 1 ns and counts them."""
    pytest.importorskip("chakra_text")
    out, summary = _export(("text", "gpt3_like.txt", {"mp_group": 8}, "system_2d.yaml", 16), tmp_path)
    changed = summary["report"]["changed"]
    assert changed["roofline_zero_time_raised_to_1ns"] > 0


def _finished(text: str) -> set[int]:
    return {int(m.group(1)) for m in re.finditer(r"sys\[(\d+)\] finished, \d+ cycles", text)}


@pytest.mark.parametrize("mode", ["unaware", "aware"])
@pytest.mark.parametrize("case", list(_inputs()))
def test_every_example_runs_in_astrasim(tmp_path, case, mode, astrasim_binary):
    binary = astrasim_binary(mode)
    out, summary = _export(case, tmp_path)
    args = json.loads((out / "report.json").read_text())["commands"][f"congestion_{mode}"]
    if args is None:
        pytest.skip("the congestion-aware binary runs 1-D networks only")
    proc = subprocess.run([binary, *args[1:]], cwd=out, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert _finished(proc.stdout + proc.stderr) == set(range(summary["ranks"]))
