"""Roles, stragglers within a role and group shapes on a generated 2-stage pipeline (tp 2 x dp 2 x
pp 2, Megatron's layout: tensor parallel fastest): stage 2 computes more (the output layer), which
is structure, not slowness; a rank slowed by 1.5x is a straggler against its own stage."""

from __future__ import annotations

import pytest

import chakra_core as chakra
from chakra_core.analysis._tables import stragglers


@pytest.fixture(scope="module")
def pipeline_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("pp")
    chakra.generate("transformer", {"layers": 4, "tp": 2, "dp": 2, "pp": 2}, output=out / "set")
    chakra.transform(str(out / "set"), "straggler", {"ranks": "1", "factor": 1.5}, output=out / "slow")
    return out


def test_stages_are_roles_and_only_the_slowed_rank_straggles(pipeline_set):
    d = chakra.report(str(pipeline_set / "set")).to_dict()
    assert d["roles"] == [{"role": 0, "ranks": [0, 1, 2, 3]}, {"role": 1, "ranks": [4, 5, 6, 7]}]
    assert {s["rank"] for s in stragglers(d["ranks"])} == {4, 5, 6, 7}  # judged against every rank: stage 2
    assert d["stragglers"] == []  # judged within the stage: nobody
    slow = chakra.report(str(pipeline_set / "slow")).to_dict()
    found = [s for s in slow["stragglers"] if s["metric"] == "compute_ns"]
    assert [(s["rank"], s["role"], s["role_ranks"]) for s in found] == [(1, 0, 4)]
    assert found[0]["excess_pct"] == pytest.approx(50, abs=1)


def test_group_shapes_follow_the_layout(pipeline_set):
    d = chakra.report(str(pipeline_set / "set")).to_dict()
    shapes = {c["group_shape"] for c in d["collectives"] if c.get("group_shape")}
    assert "2 ranks 0-1, consecutive" in shapes and "2 ranks 4-5, consecutive" in shapes  # tensor parallel
    assert "2 ranks 0, 2 (stride 2)" in shapes  # data parallel
    like = {c["group_shape"]: c["groups_like_it"] for c in d["collectives"] if c.get("group_shape")}
    assert like["2 ranks 0-1, consecutive"] == 4 and like["2 ranks 0, 2 (stride 2)"] == 4  # 4 tp and 4 dp groups
