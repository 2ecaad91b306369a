"""Shared inputs of the emulator tests: the recorded PyTorch fixtures converted once (the session's
own cache folder, for the calibration, is set up by the repository's root ``conftest.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import chakra_core

ROOT = Path(__file__).resolve().parents[3]
PYTORCH_DATA = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"


@pytest.fixture(scope="session")
def recorded(tmp_path_factory):
    """``name -> .et set directory`` of the recorded 2-rank gloo fixtures (ddp, ddp_buckets,
    collectives)."""
    out = {}
    base = tmp_path_factory.mktemp("recorded")
    for name in ("ddp", "ddp_buckets", "collectives"):
        chakra_core.convert(str(PYTORCH_DATA / name), f"{base / name}/")
        out[name] = base / name
    return out
