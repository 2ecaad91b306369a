"""The recorded sources the synthesizer tests fit on, converted once per session to ``.et`` sets.

PyTorch: the real recordings of chakra-pytorch (``plugins/chakra-pytorch/tests/data``, recorded
by the scripts in its ``recording/``); text: the bundled ASTRA-sim workloads of ``examples/text``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import chakra_core as chakra

REPO = Path(__file__).resolve().parents[3]
PYTORCH = REPO / "plugins" / "chakra-pytorch" / "tests" / "data"
TEXT = REPO / "examples" / "text"

#: source name -> (input path, input options)
SOURCES = {
    "transformer": (PYTORCH / "transformer", {}),
    "ddp": (PYTORCH / "ddp", {}),
    "ddp_buckets": (PYTORCH / "ddp_buckets", {}),
    "collectives": (PYTORCH / "collectives", {}),
    "gpt3_text": (TEXT / "gpt3_like.txt", {"npus": 8}),
    "resnet50_text": (TEXT / "resnet50_like.txt", {"npus": 4}),
}


@pytest.fixture(scope="session")
def recorded(tmp_path_factory) -> dict[str, Path]:
    """``{source name: directory of its .et set}``."""
    base = tmp_path_factory.mktemp("recorded")
    out = {}
    for name, (path, opts) in SOURCES.items():
        chakra.convert(str(path), base / name / "", input_options=opts)
        out[name] = base / name
    return out
