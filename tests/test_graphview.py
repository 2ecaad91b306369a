"""``chakra graph`` on a recorded trace (DDP on 2 gloo ranks, plugins/chakra-pytorch/recording/record_ddp.py)."""

from __future__ import annotations

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
