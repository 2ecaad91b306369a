"""Fixtures of the chakra-jax tests: the recorded programs under tests/data/ (see
tests/data/README.md and recording/) and a helper that converts one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra_core import NodeAttrs, load_traces

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def jax_data() -> Path:
    """The directory of the recorded programs."""
    return DATA


def convert(name: str, profile: str | None = None, **options):
    """The TraceSet of recorded program ``name`` (with ``profile.xplane.pb`` or another profile file)."""
    paths = [str(DATA / name / "program.hlo.txt")]
    if profile:
        paths.append(str(DATA / name / profile))
    return load_traces(paths, format="jax", options=options)


@pytest.fixture
def jax_convert():
    """``jax_convert(name, profile=None, **options)`` -> TraceSet of a recorded program."""
    return convert


def _comm_nodes(rank):
    return [(n, NodeAttrs(n)) for n in rank.nodes() if n.type in (5, 6, 7)]


@pytest.fixture
def comm_nodes():
    """``comm_nodes(rank)`` -> ``[(node, NodeAttrs)]`` of every communication node, in file order."""
    return _comm_nodes
