"""``chakra graph`` / ``chakra_core.graph``: an option given explicitly is judged the same whatever
its value, its default's too, on the recorded DDP step (2 gloo ranks, 86 nodes on rank 0, drawn
node by node) and the recorded transformer step (274 nodes, drawn as a summary), both from
plugins/chakra-pytorch/recording/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import chakra_core as chakra
from chakra_core import ConfigError

pytest.importorskip("chakra_pytorch")

ROOT = Path(__file__).resolve().parents[1]
DDP = ROOT / "plugins/chakra-pytorch/tests/data/ddp"
TRANSFORMER = ROOT / "plugins/chakra-pytorch/tests/data/transformer"


@pytest.mark.parametrize("boxes", ["30", "31"])
def test_max_boxes_for_a_rank_drawn_node_by_node_is_refused_whatever_its_value(tmp_path, chakra_cli, boxes):
    nodes = sum(1 for _ in chakra.load_traces(str(DDP))[0].nodes())
    status, _, err = chakra_cli("graph", DDP, "-o", tmp_path / "g.dot", "--max-boxes", boxes)
    assert status == 2 and f"--max-boxes: rank 0 has {nodes} nodes and is drawn node by node" in err, err
    assert not (tmp_path / "g.dot").exists()


@pytest.mark.parametrize("kwargs, said", [
    ({"max_boxes": 30}, "--max-boxes: rank 0 has"),
    ({"max_boxes": 30, "summary": False}, "--max-boxes: --full draws every node"),
    ({"max_boxes": 30, "around": 13}, "--max-boxes: a neighbourhood (--around)"),
    ({"depth": 2}, "--depth: it sets the hops drawn around --around NODE"),
])
def test_the_api_refuses_a_default_value_given_where_it_would_be_ignored(tmp_path, kwargs, said):
    with pytest.raises(ConfigError, match="^" + re.escape(said)):
        chakra.graph(str(DDP), tmp_path / "g.dot", **kwargs)
    assert not (tmp_path / "g.dot").exists()


def test_an_explicit_default_is_used_and_not_called_the_default(tmp_path, chakra_cli):
    status, out, err = chakra_cli("graph", DDP, "-o", tmp_path / "s.dot", "--summary", "--max-boxes", "30")
    assert status == 0 and "(at most 30)" in out, err
    status, out, err = chakra_cli("graph", DDP, "-o", tmp_path / "n.dot", "--around", "13", "--depth", "2")
    assert status == 0 and "within 2 hops of node 13," in out, err


def test_options_left_out_take_their_defaults_where_they_are_used(tmp_path):
    assert chakra.graph(str(TRANSFORMER), tmp_path / "s.dot")["max_boxes"] == 30
    assert chakra.graph(str(DDP), tmp_path / "n.dot", around=13)["depth"] == 2
    whole = chakra.graph(str(DDP), tmp_path / "w.dot")
    nodes = sum(1 for _ in chakra.load_traces(str(DDP))[0].nodes())
    assert whole["summary"] is False and whole["nodes"] == whole["rank_nodes"] == nodes
    assert "max_boxes" not in whole and "depth" not in whole
