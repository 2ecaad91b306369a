"""``chakra compare`` of two sets that share no node kind: the recorded PyTorch transformer step
(plugins/chakra-pytorch/recording/record_transformer.py: every node a CPU operation) against the
recorded JAX scan (plugins/chakra-jax/recording/record_scan_cond.py: device compute, no CPU
operation). No kind is in both, so no per-kind KS statistic exists: ``max_ks`` is None (``n/a``
with the reason in the text), not 0, which would read as "the same distributions"; the kind
mixes are disjoint, a total variation distance of exactly 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chakra_core as chakra

pytest.importorskip("chakra_pytorch")
pytest.importorskip("chakra_jax")

ROOT = Path(__file__).resolve().parents[1]
TRANSFORMER = ROOT / "plugins/chakra-pytorch/tests/data/transformer"
SCAN_COND = ROOT / "plugins/chakra-jax/tests/data/scan_cond/program.hlo.txt"


def _is_cpu_op(node) -> bool:
    return chakra.NodeAttrs(node).get_bool("is_cpu_op", False)


def test_the_two_recordings_share_no_kind():
    """The premise, read from the recordings: every transformer node is a CPU operation, no JAX one is."""
    assert all(map(_is_cpu_op, chakra.load_traces(str(TRANSFORMER))[0].nodes()))
    with pytest.warns(UserWarning):
        assert not any(map(_is_cpu_op, chakra.load_traces(str(SCAN_COND))[0].nodes()))


def test_sets_with_no_kind_in_common_have_no_largest_ks(tmp_path):
    with pytest.warns(UserWarning):
        r = chakra.compare(str(TRANSFORMER), str(SCAN_COND), simulate=False)
    assert r["a"]["nodes"] > 0 and r["b"]["nodes"] > 0
    assert r["kinds"]["histogram_distance"] == 1.0
    assert r["durations"] == {} and r["sizes"] == {}
    assert r["max_ks"] is None


def test_the_text_and_the_json_say_the_same(chakra_cli):
    status, out, err = chakra_cli("compare", TRANSFORMER, SCAN_COND, "--no-simulate", "--json")
    assert status == 0, err
    assert json.loads(out)["max_ks"] is None
    status, out, err = chakra_cli("compare", TRANSFORMER, SCAN_COND, "--no-simulate")
    assert status == 0, err
    assert "node-kind histogram distance (total variation): 1.0000" in out
    assert "largest KS statistic over kinds: n/a (no node kind is in both sets)" in out
