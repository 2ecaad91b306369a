"""``chakra graph`` and ``chakra compare`` on the recorded DDP step (2 gloo ranks,
plugins/chakra-pytorch/recording/record_ddp.py), the recorded transformer step
(record_transformer.py) and the text workload of examples/text/make_examples.py: the step change's
sign, summary boxes' durations, options the drawing would ignore, repeated ids and dependencies on
missing nodes, a set with no nodes, backend and input options of ``compare`` and the recorded
process group of a partial set.

Sets with a repeated id, a missing dependency or no nodes are the recorded DDP rank edited here:
no framework writes them.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import chakra_core as chakra
from chakra_core import ConfigError, GlobalMetadata, MemoryRank, TraceSet

pytest.importorskip("chakra_pytorch")

ROOT = Path(__file__).resolve().parents[1]
DDP = ROOT / "plugins/chakra-pytorch/tests/data/ddp"
TRANSFORMER = ROOT / "plugins/chakra-pytorch/tests/data/transformer"
RESNET_TEXT = ROOT / "examples/text/resnet50_like.txt"


def _ddp_rank0(tmp_path: Path, name: str, edit) -> Path:
    """The recorded DDP rank 0 with ``edit(nodes)`` applied, written as ``name/trace.0.et``."""
    rt = chakra.load_traces(str(DDP))[0]
    nodes = list(rt.nodes())
    edit(nodes)
    TraceSet([MemoryRank(0, rt.metadata(), nodes)]).write(tmp_path / name / "trace")
    return tmp_path / name


def test_the_text_gives_the_signed_step_change_and_json_keeps_the_absolute_one(tmp_path, chakra_cli):
    chakra.transform(str(DDP), "scale", {"compute_speedup": 2}, output=tmp_path / "fast")
    status, out, err = chakra_cli("compare", DDP, tmp_path / "fast", "--json")
    assert status == 0, err
    sim = json.loads(out)["simulated"]
    a, b = sim["a_ns"], sim["b_ns"]
    assert b < a and sim["relative_error"] == round((a - b) / a, 6)  # docs/synth.md: |b - a| / a
    status, out, _ = chakra_cli("compare", DDP, tmp_path / "fast")
    assert f"relative error (B - A) / A {(b - a) / a:+.2%} (B is faster)" in out
    status, out, _ = chakra_cli("compare", tmp_path / "fast", DDP)
    assert f"relative error (B - A) / A {(a - b) / b:+.2%} (B is slower)" in out


def _graphml_nodes(path: Path) -> list[dict[str, str]]:
    ns = "{http://graphml.graphdrawing.org/xmlns}"
    return [{d.get("key"): d.text for d in n.iter(ns + "data")} for n in ET.parse(path).getroot().iter(ns + "node")]


def test_summary_boxes_carry_their_summed_duration(tmp_path):
    recorded = [n.duration_micros for n in chakra.load_traces(str(TRANSFORMER))[0].nodes()]
    out = chakra.graph(str(TRANSFORMER), tmp_path / "s.graphml", summary=True)
    boxes = _graphml_nodes(tmp_path / "s.graphml")
    assert len(boxes) == out["nodes"] > 1
    assert sum(int(b["duration_micros"]) for b in boxes) == sum(recorded) > 0
    for b in boxes:  # each box's label ends with the time its nodes took
        assert b["name"].split("\n")[-1] == f"{int(b['duration_micros']):,} us"


@pytest.mark.parametrize("args, said", [
    (["--around", "13", "--summary"], "--summary: a neighbourhood (--around) is always drawn node by node"),
    (["--around", "13", "--full", "--max-boxes", "4"], "--full, --max-boxes: a neighbourhood (--around)"),
    (["--depth", "3"], "--depth: it sets the hops drawn around --around NODE"),
    (["--max-boxes", "4", "--full"], "--max-boxes: --full draws every node"),
    (["--max-boxes", "4"], "--max-boxes: rank 0 has 86 nodes and is drawn node by node"),
])
def test_options_the_drawing_would_ignore_are_refused(tmp_path, chakra_cli, args, said):
    status, _, err = chakra_cli("graph", DDP, "-o", tmp_path / "g.dot", *args)
    assert status == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "g.dot").exists()


def test_options_the_api_would_ignore_are_refused_and_defaults_are_said(tmp_path, chakra_cli):
    for kwargs in ({"around": 13, "summary": False}, {"depth": 3}, {"max_boxes": 4, "summary": False}):
        with pytest.raises(ConfigError, match="would be ignored"):
            chakra.graph(str(DDP), tmp_path / "g.dot", **kwargs)
    assert not (tmp_path / "g.dot").exists()
    status, out, _ = chakra_cli("graph", DDP, "-o", tmp_path / "n.dot", "--around", "13")
    assert status == 0 and "within 2 hops of node 13 (the default --depth)" in out
    status, out, _ = chakra_cli("graph", TRANSFORMER, "-o", tmp_path / "s.dot")
    assert status == 0 and "(at most 30, the default --max-boxes)" in out
    assert "(a summary: the default past 100 nodes; --full draws every node)" in out


def test_a_repeated_id_is_refused_by_graph_and_compare(tmp_path, chakra_cli):
    taken = {}

    def repeat(nodes):
        taken["id"] = nodes[4].id
        nodes[5].id = nodes[4].id

    bad = _ddp_rank0(tmp_path, "dup", repeat)
    node = taken["id"]
    want = f"{bad / 'trace.0.et'}:node {node}: id {node} is used by more than one node"
    for args in (["graph", bad, "-o", tmp_path / "g.dot"], ["graph", bad, "--around", node, "-o", tmp_path / "g.dot"],
                 ["compare", DDP, bad, "--no-simulate"]):
        status, _, err = chakra_cli(*args)
        assert status == 2 and want in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "g.dot").exists()


def test_dependencies_on_missing_nodes_are_counted(tmp_path, chakra_cli):
    rt = chakra.load_traces(str(DDP))[0]
    ids = [n.id for n in rt.nodes()]
    absent = max(ids) + 1000
    held = {}

    def dangle(nodes):
        held["id"] = nodes[-1].id
        nodes[-1].data_deps.append(absent)
        nodes[-2].ctrl_deps.append(absent + 1)

    bad = _ddp_rank0(tmp_path, "dang", dangle)
    status, out, _ = chakra_cli("graph", bad, "-o", tmp_path / "g.dot")
    assert status == 0 and "note: 2 dependencies on ids not in rank 0 not drawn" in out
    status, out, _ = chakra_cli("graph", bad, "--around", held["id"], "--depth", "0", "-o", tmp_path / "n.dot",
                                "--json")
    assert json.loads(out)["missing_deps"] == 1 and json.loads(out)["nodes"] == 1


def test_a_set_with_no_nodes_has_no_statistics(tmp_path, chakra_cli):
    TraceSet([MemoryRank(0, GlobalMetadata(version="0.0.4"), [])]).write(tmp_path / "empty" / "trace")
    r = chakra.compare(str(tmp_path / "empty"), str(DDP), simulate=False)
    assert r["kinds"]["histogram_distance"] is None and r["max_ks"] is None
    for key in ("in_degree", "out_degree"):
        assert r["graph"][key]["ks"] is None and r["graph"][key]["mean_a"] is None
        assert r["graph"][key]["mean_b"] > 0
    status, out, _ = chakra_cli("compare", tmp_path / "empty", DDP, "--no-simulate")
    assert status == 0 and "node-kind histogram distance (total variation): n/a" in out
    assert re.search(r"in_degree mean +n/a +[\d.]+ +KS n/a", out)


def test_compare_passes_backend_options_to_both_sides(tmp_path, chakra_cli):
    status, out, err = chakra_cli("compare", DDP, DDP, "--json")
    assert status == 0, err
    plain = json.loads(out)["simulated"]
    # both ranks of both sets start 1000 ns late: each step ends 1000 ns later
    status, out, err = chakra_cli("compare", DDP, DDP, "-O", "start_ns=1000,1000", "--json")
    assert status == 0, err
    late = json.loads(out)["simulated"]
    assert (late["a_ns"], late["b_ns"]) == (plain["a_ns"] + 1000, plain["b_ns"] + 1000)
    status, _, err = chakra_cli("compare", DDP, DDP, "--no-simulate", "-O", "start_ns=1000")
    assert status == 2 and "-O: nothing is simulated with --no-simulate" in err


def test_input_options_go_to_the_side_whose_format_declares_them(chakra_cli):
    status, out, err = chakra_cli("compare", RESNET_TEXT, DDP, "--no-simulate", "-I", "npus=4", "--json")
    assert status == 0, err
    r = json.loads(out)
    assert (r["a"]["ranks"], r["b"]["ranks"]) == (4, 2)
    status, _, err = chakra_cli("compare", RESNET_TEXT, DDP, "--no-simulate", "-I", "bogus=1")
    assert status == 2 and f"-I bogus: no input declares this option; A's input format 'text' ({RESNET_TEXT})" in err
    assert f"B's input format 'pytorch' ({DDP})" in err
    status, _, err = chakra_cli("compare", RESNET_TEXT, DDP, "--no-simulate", "-I", "npus=abc")
    assert status == 2 and f"A ({RESNET_TEXT}): input format 'text': option 'npus' wants int" in err


def test_a_partial_set_keeps_its_recorded_default_group(tmp_path, chakra_cli):
    chakra.convert(str(DDP), f"{tmp_path}/ddp/")
    one = tmp_path / "ddp" / "trace.0.et"
    assert chakra.load_traces(str(one)).group_members("0") == [0, 1]  # record_ddp.py runs 2 ranks
    status, out, err = chakra_cli("compare", one, one, "--no-simulate", "--json")
    assert status == 0, err
    assert {k.split("@")[1] for k in json.loads(out)["collectives"]["a"]} == {"2"}
