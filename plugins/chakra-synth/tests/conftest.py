"""The recorded sources the synthesizer tests fit on, converted once per session to ``.et`` sets.

PyTorch: the real recordings of chakra-pytorch (``plugins/chakra-pytorch/tests/data``, recorded
by the scripts in its ``recording/``); text: the bundled ASTRA-sim workloads of ``examples/text``;
JAX: the recorded 8-device mesh program of chakra-jax (``plugins/chakra-jax/tests/data/mesh8``);
second recordings of the every-collective and the JAX mesh jobs (``tests/data``, its README).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chakra_core as chakra

REPO = Path(__file__).resolve().parents[3]
PYTORCH = REPO / "plugins" / "chakra-pytorch" / "tests" / "data"
TEXT = REPO / "examples" / "text"
JAX = REPO / "plugins" / "chakra-jax" / "tests" / "data" / "mesh8"
RERUNS = Path(__file__).resolve().parent / "data"

#: source name -> (input paths, input format or None, input options)
SOURCES = {
    "transformer": ([PYTORCH / "transformer"], None, {}),
    "ddp": ([PYTORCH / "ddp"], None, {}),
    "ddp_buckets": ([PYTORCH / "ddp_buckets"], None, {}),
    "ddp_buckets_queued": ([PYTORCH / "ddp_buckets_queued"], None, {}),
    "collectives": ([PYTORCH / "collectives"], None, {}),
    "gpt3_text": ([TEXT / "gpt3_like.txt"], None, {"npus": 8}),
    "resnet50_text": ([TEXT / "resnet50_like.txt"], None, {"npus": 4}),
    "jax_mesh8": ([JAX / "program.hlo.txt", JAX / "profile.xplane.pb"], "jax", {}),
    **{f"collectives_rerun{i}": ([RERUNS / f"collectives_rerun{i}"], None, {}) for i in (1, 2)},
    **{f"jax_mesh8_rerun{i}": ([RERUNS / f"jax_mesh8_rerun{i}" / f for f in ("program.hlo.txt", "profile.xplane.pb")],
                               "jax", {}) for i in (1, 2)},
}


@pytest.fixture(scope="session")
def recorded(tmp_path_factory) -> dict[str, Path]:
    """``{source name: directory of its .et set}``."""
    base = tmp_path_factory.mktemp("recorded")
    out = {}
    for name, (paths, fmt, opts) in SOURCES.items():
        chakra.convert([str(p) for p in paths], base / name / "", format=fmt, input_options=opts)
        out[name] = base / name
    return out


@pytest.fixture(scope="module")
def models(recorded, tmp_path_factory):
    """``{synthesizer: model dict}`` fitted on the recorded DDP set (once a test module)."""
    base = tmp_path_factory.mktemp("models")
    out = {}
    for name in ("learned", "structural", "markov"):
        chakra.synth_fit([str(recorded["ddp"])], base / f"{name}.json", synthesizer=name)
        out[name] = json.loads((base / f"{name}.json").read_text())
    return out
