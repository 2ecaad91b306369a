"""Shared helpers of the chakra-pytorch tests."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def data_dir() -> Path:
    """The folder of the committed fixtures (see tests/data/README.md)."""
    return DATA
