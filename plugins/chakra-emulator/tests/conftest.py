"""Shared inputs of the emulator tests: the recorded PyTorch fixtures converted once, and a
calibration cache of the test session's own (so that tests never read or write the user's)."""

from __future__ import annotations

from pathlib import Path

import pytest

import chakra_core

ROOT = Path(__file__).resolve().parents[3]
PYTORCH_DATA = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"


@pytest.fixture(scope="session", autouse=True)
def _own_cache(tmp_path_factory):
    """Point the calibration cache at a temporary directory for the whole session."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()


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
