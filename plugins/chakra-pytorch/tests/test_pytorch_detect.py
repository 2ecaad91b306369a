"""Detection: a JSON file is claimed only when it is a PyTorch trace, and never beside an XLA program."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from chakra_core import detect_format
from chakra_pytorch.plugin import chakra_detect_format
from chakra_pytorch.sniff import sniff_kind

DATA = Path(__file__).resolve().parent / "data"
KINETO = DATA / "ddp" / "kineto.0.json.gz"
MESH8 = Path(__file__).resolve().parents[2] / "chakra-jax" / "tests" / "data" / "mesh8"
needs_mesh8 = pytest.mark.skipif(not MESH8.is_dir(), reason="the chakra-jax recordings are not here")


def _events_only(path: Path, out: Path) -> Path:
    """The Kineto trace at ``path`` with only its ``traceEvents`` key (no schemaVersion etc.)."""
    doc = json.loads(gzip.open(path).read())
    out.write_text(json.dumps({"traceEvents": doc["traceEvents"]}))
    return out


@needs_mesh8
def test_jax_chrome_trace_is_not_kineto():
    assert sniff_kind(str(MESH8 / "profile.trace.json.gz")) is None


def test_kineto_trace_with_only_trace_events_is_kineto(tmp_path):
    assert sniff_kind(str(_events_only(KINETO, tmp_path / "k.json"))) == "kineto"


@needs_mesh8
def test_jax_folder_is_jax():
    assert detect_format([str(MESH8)]) == "jax"
    assert detect_format([str(MESH8 / n) for n in ("program.hlo.txt", "profile.trace.json.gz")]) == "jax"


@needs_mesh8
def test_folder_with_an_hlo_program_is_not_pytorch(tmp_path):
    shutil.copy(KINETO, tmp_path / "kineto.0.json.gz")
    assert chakra_detect_format([str(tmp_path)]) == "pytorch"
    shutil.copy(MESH8 / "program.hlo.txt", tmp_path / "program.hlo.txt")
    assert chakra_detect_format([str(tmp_path)]) is None


@needs_mesh8
def test_cli_converts_the_jax_folder_to_eight_devices(tmp_path, chakra_cli):
    status, _, err = chakra_cli("convert", str(MESH8), "-o", str(tmp_path / "j"))
    assert status == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"j.{d}.et" for d in range(8)]
