"""``chakra graph`` on a recorded trace (DDP on 2 gloo ranks, plugins/chakra-pytorch/recording/record_ddp.py)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import chakra_core as chakra
from chakra_core import NodeType

pytest.importorskip("chakra_pytorch")

DDP = Path(__file__).resolve().parents[1] / "plugins/chakra-pytorch/tests/data/ddp"


def neighbours(nodes, center, depth):
    """Ids within ``depth`` hops of ``center`` over data and control dependencies, both ways."""
    adj = {n.id: set() for n in nodes}
    for n in nodes:
        for d in list(n.data_deps) + list(n.ctrl_deps):
            if d in adj:
                adj[n.id].add(d)
                adj[d].add(n.id)
    seen, frontier = {center}, {center}
    for _ in range(depth):
        frontier = {m for x in frontier for m in adj[x]} - seen
        seen |= frontier
    return seen


def test_neighbourhood_in_dot_graphml_and_svg(tmp_path):
    nodes = list(chakra.load_traces(str(DDP))[1].nodes())
    coll = next(n for n in nodes if n.type == NodeType.COMM_COLL_NODE)
    want = neighbours(nodes, coll.id, 2)
    out = chakra.graph(str(DDP), tmp_path / "g.dot", rank=1, around=coll.id, depth=2)
    assert out["nodes"] == len(want) and out["rank_nodes"] == len(nodes)
    dot = (tmp_path / "g.dot").read_text()
    assert {int(m) for m in re.findall(r"^  n(\d+) \[", dot, re.M)} == want
    assert f"n{coll.id} [" in dot and "shape=ellipse" in dot and "penwidth=3" in dot
    by_id = {n.id: n for n in nodes}
    edges = [(int(a[1:]), int(b[1:].rstrip(";"))) for a, _, b, *_ in (line.split() for line in dot.splitlines() if "->" in line)]
    assert edges and all(a in by_id[b].data_deps or a in by_id[b].ctrl_deps for a, b in edges)
    chakra.graph(str(DDP), tmp_path / "g.graphml", rank=1, around=coll.id, depth=2)
    root = ET.parse(tmp_path / "g.graphml").getroot()
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    assert len(root.findall(".//g:node", ns)) == len(want) and len(root.findall(".//g:edge", ns)) == len(edges)
    chakra.graph(str(DDP), tmp_path / "g.svg", rank=1, around=coll.id, depth=2)
    svg = ET.parse(tmp_path / "g.svg").getroot()
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}rect")) == len(want)


def test_graph_cli_refuses_what_it_cannot_draw(tmp_path, chakra_cli):
    code, out, _ = chakra_cli("graph", DDP, "-o", tmp_path / "all.dot")
    total = len(list(chakra.load_traces(str(DDP))[0].nodes()))
    assert code == 0 and f"{total} of rank 0's {total} nodes" in out
    code, _, err = chakra_cli("graph", DDP, "-o", tmp_path / "x.dot", "--max-nodes", "10")
    assert code == 2 and "--around NODE" in err
    code, _, err = chakra_cli("graph", DDP, "-o", tmp_path / "x.dot", "--around", "999999")
    assert code == 2 and "no node 999999" in err
    code, _, err = chakra_cli("graph", DDP, "-o", tmp_path / "x.png")
    assert code == 2 and ".dot, .svg or .graphml" in err
    assert not (tmp_path / "x.dot").exists()


TRANSFORMER = Path(__file__).resolve().parents[1] / "plugins/chakra-pytorch/tests/data/transformer"


def _boxes(dot: str) -> dict[str, str]:
    """Box name -> its label (lines joined by newlines) of a DOT file."""
    return {m[0]: m[1].replace("\\n", "\n") for m in re.findall(r'^  (n\w+) \[label="((?:[^"\\]|\\.)*)"', dot, re.M)}


def _nodes_in(label: str) -> int:
    """Nodes a summary box stands for: ``K x N nodes (M in all)`` or ``M nodes``."""
    first = label.split("\n")[0]
    m = re.search(r"\((\d+) in all\)", first) or re.match(r"(\d+) nodes?", first)
    return int(m.group(1))


def _svg_fits_its_labels(path: Path) -> None:
    """Every box of an SVG drawing is at least 6 px per character of its longest line, and every
    line of its label (the tooltip) is written out whole."""
    ns = "{http://www.w3.org/2000/svg}"
    for g in ET.parse(path).getroot().iter(ns + "g"):
        lines = g.find(ns + "title").text.split("\n")
        assert [t.text for t in g.findall(ns + "text")] == lines
        assert float(g.find(ns + "rect").get("width")) >= 6 * max(map(len, lines))


def test_a_generated_transformer_is_drawn_with_its_layers_folded(tmp_path):
    pytest.importorskip("chakra_generate")
    chakra.generate("transformer", {"layers": 8, "tp": 2, "dp": 2}, output=tmp_path / "tf")
    nodes = list(chakra.load_traces(str(tmp_path / "tf"))[0].nodes())
    per_layer = sum(n.name.startswith("s0.F0.c0.L0.") for n in nodes)  # ln1 ... residual with 2 all-reduces
    out = chakra.graph(str(tmp_path / "tf"), tmp_path / "g.dot")
    assert out["summary"] and out["rank_nodes"] == len(nodes) and out["nodes"] <= 30
    boxes = _boxes((tmp_path / "g.dot").read_text())
    assert len(boxes) == out["nodes"] and sum(map(_nodes_in, boxes.values())) == len(nodes)
    # the forward layers of the last micro-batch: 8 layers of per_layer nodes
    assert any(label.startswith(f"8 x {per_layer} nodes ({8 * per_layer} in all)\ns0.F7.c0.L0.ln1")
               for label in boxes.values())
    # the first micro-batch drawn layer block by layer block, the 6 after it folded as one block
    # with their layers inside (the 8th, whose backward pass reduces the gradients, apart)
    assert any(label.startswith(f"8 x {per_layer} nodes ({8 * per_layer} in all)\ns0.F0.c0.L0.ln1")
               for label in boxes.values())
    middle = next(label for label in boxes.values() if label.startswith("6 x "))
    assert f"each with 8 x {per_layer} nodes: s#.F#.c#.L#.ln#" in middle and "s0.F1.c0.embedding" in middle
    assert {"repeats": 8, "nodes": 8 * per_layer, "first": "s0.F7.c0.L0.ln1"} in out["folded"]
    chakra.graph(str(tmp_path / "tf"), tmp_path / "g.svg")
    _svg_fits_its_labels(tmp_path / "g.svg")


def test_a_recorded_transformer_step_is_summarised_and_drawn_whole_on_request(tmp_path, chakra_cli):
    nodes = list(chakra.load_traces(str(TRANSFORMER))[0].nodes())
    adam_steps = sum(n.name == "aten::addcdiv_" for n in nodes)  # one per parameter tensor
    code, out, err = chakra_cli("graph", TRANSFORMER, "-o", tmp_path / "g.dot", "--max-boxes", "12")
    assert code == 0, err
    boxes = _boxes((tmp_path / "g.dot").read_text())
    assert f"summary of rank 0's {len(nodes)} nodes in {len(boxes)} boxes" in out and len(boxes) <= 12
    assert sum(map(_nodes_in, boxes.values())) == len(nodes)
    assert any(label.startswith(f"{adam_steps} x ") and "aten::addcdiv_" in label for label in boxes.values())
    code, out, _ = chakra_cli("graph", TRANSFORMER, "-o", tmp_path / "g.svg")
    assert code == 0
    _svg_fits_its_labels(tmp_path / "g.svg")
    code, out, _ = chakra_cli("graph", TRANSFORMER, "-o", tmp_path / "all.dot", "--full")
    assert code == 0 and f"{len(nodes)} of rank 0's {len(nodes)} nodes" in out
    code, _, err = chakra_cli("graph", TRANSFORMER, "-o", tmp_path / "x.dot", "--max-boxes", "0")
    assert code == 2 and "--max-boxes 0" in err


@pytest.mark.parametrize("suffix", ["svg", "graphml"])
def test_names_with_characters_xml_does_not_allow_give_well_formed_files(tmp_path, suffix):
    # hand-made (our JSON form, which no framework writes): control characters, U+FFFE and an
    # astral character in node names; the files must parse as XML, each bad character shown as U+FFFD
    names = ["a\x01b", "c\x00d\x1f", "e\ufffef", "g\U0001f600h"]
    nodes = [{"id": str(i + 1), "name": n, "type": "COMP_NODE", "duration_micros": "5",
              **({"data_deps": [str(i)]} if i else {})} for i, n in enumerate(names)]
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "trace.0.json").write_text(json.dumps(
        {"format": "chakra-et-json", "version": 1, "rank": 0, "metadata": {"version": "0.0.4"}, "nodes": nodes}))
    chakra.graph(str(tmp_path / "t"), tmp_path / f"g.{suffix}")
    text = "".join(ET.parse(tmp_path / f"g.{suffix}").getroot().itertext())
    for shown in ("a\ufffdb", "c\ufffdd\ufffd", "e\ufffdf", "g\U0001f600h"):
        assert shown in text
