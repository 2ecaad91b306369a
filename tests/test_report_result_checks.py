"""``chakra report SET --result R``: the what-if re-simulation runs on the system the result ran
on, and a result is checked against its spans and against the set given with it (review 25).

The expected values come from the simulator (the same set simulated without ``--result``) and from
the traces themselves (node durations and sizes), never from the report's own output."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import chakra_core as chakra
from chakra_core import NodeType, Spans

pytest.importorskip("chakra_pytorch")
pytest.importorskip("chakra_simpy")
pytest.importorskip("chakra_text")

ROOT = Path(__file__).resolve().parents[1]
DDP = ROOT / "plugins/chakra-pytorch/tests/data/ddp"
GPT3 = ROOT / "examples/text/gpt3_like.txt"
TWO_NODES = ROOT / "examples/system/two_nodes.yaml"
ANY_SIZE = ROOT / "examples/system/any_size.yaml"


@pytest.fixture(scope="module")
def gpt3(tmp_path_factory):
    """The gpt3 text example on 16 ranks, simulated on two 8-NPU nodes (not the default system)
    with its spans: ``(set, result.json)``."""
    d = tmp_path_factory.mktemp("gpt3")
    chakra.convert(str(GPT3), d / "set", input_options={"npus": 16})
    chakra.simulate(str(d / "set"), system=str(TWO_NODES), options={"spans": True}, output=d / "sim")
    return d / "set", d / "sim" / "result.json"


@pytest.fixture(scope="module")
def ddp_runs(tmp_path_factory):
    """The recorded DDP set, its copies with compute 2x faster and communication 2x smaller, and
    a result of each (with spans): ``{name: (set, result.json)}``."""
    d = tmp_path_factory.mktemp("ddp")
    runs = {"ddp": str(DDP)}
    for name, option in (("compute2x", {"compute_speedup": 2}), ("comm_half", {"comm_scale": 0.5})):
        chakra.transform(str(DDP), "scale", option).write(d / name / "trace")
        runs[name] = str(d / name)
    out = {}
    for name, path in runs.items():
        chakra.simulate(path, options={"spans": True}, output=d / f"sim_{name}")
        out[name] = (path, d / f"sim_{name}" / "result.json")
    return out


def _what_if(chakra_cli, *args):
    code, out, err = chakra_cli("report", *args, "--what-if", "compute=2", "--json")
    assert code == 0, err
    d = json.loads(out)
    return d["what_if"][0]["resimulated_finish_ns"], d["source"].get("notes", [])


def _one_error(code, err, *words):
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


# -- 1. the what-if re-simulation runs on the result's system -----------------------------------

def test_a_what_if_of_a_result_re_simulates_on_the_system_it_ran_on(gpt3, chakra_cli):
    """It ran on the default system: compute 2x faster re-simulated at 5.78 s for a 4.55 s step."""
    path, result = gpt3
    on_its_system, _ = _what_if(chakra_cli, path, "--system", TWO_NODES)
    with_result, notes = _what_if(chakra_cli, path, "--result", result)
    assert with_result == on_its_system
    assert with_result < json.loads(result.read_text())["summary"]["finish_ns"]  # faster compute: a shorter step
    assert notes == [f"what-if re-simulated with simpy on the result's system (--system {TWO_NODES}) and options"]


def test_a_system_given_with_a_result_wins_and_is_said(gpt3, chakra_cli):
    path, result = gpt3
    on_given, _ = _what_if(chakra_cli, path, "--system", ANY_SIZE)
    with_result, notes = _what_if(chakra_cli, path, "--result", result, "--system", ANY_SIZE)
    assert with_result == on_given
    assert notes[0].startswith(f"what-if re-simulated with simpy on the system given (--system {ANY_SIZE})")


def test_a_result_whose_system_is_not_there_is_refused(gpt3, tmp_path, chakra_cli):
    """A recorded system file that is gone (or a relative path from another directory) was
    replaced by the default system without a word; a result without provenance too."""
    path, _ = gpt3
    system = tmp_path / "mine.yaml"
    shutil.copy(TWO_NODES, system)
    chakra.simulate(str(path), system=str(system), options={"spans": True}, output=tmp_path / "sim")
    system.unlink()
    result = tmp_path / "sim" / "result.json"
    code, _, err = chakra_cli("report", path, "--result", result, "--what-if", "compute=2")
    _one_error(code, err, str(result), f"the result ran on --system {system}, which is not a file here",
               "give --system FILE")
    on_its_system, _ = _what_if(chakra_cli, path, "--system", TWO_NODES)
    assert _what_if(chakra_cli, path, "--result", result, "--system", TWO_NODES)[0] == on_its_system
    data = json.loads(result.read_text())
    del data["provenance"]
    result.write_text(json.dumps(data))
    code, _, err = chakra_cli("report", path, "--result", result, "--what-if", "compute=2")
    _one_error(code, err, str(result), "records no options of its backend (no provenance)", "--system")


# -- 2. a result of another set with the same nodes is refused ----------------------------------

def _named(err: str) -> tuple[int, int]:
    """The rank and node id an error names."""
    m = re.search(r"its rank (\d+) node (\d+) ", err)
    assert m, err
    return int(m[1]), int(m[2])


def _node(path, rank, node_id):
    return next(n for n in chakra.load_traces(path)[rank].nodes() if n.id == node_id)


def _span_of(result: Path, rank: int, node_id: int) -> tuple[int, int]:
    """``(dur_ns, bytes)`` of the span of ``node_id`` on ``rank`` in a result's spans."""
    s = Spans.load(result.parent / "spans.npz")
    i = int(np.flatnonzero((s.rank == rank) & (s.node_id == node_id))[0])
    return int(s.dur_ns[i]), int(s.bytes[i])


def test_a_result_of_the_set_with_compute_2x_faster_is_refused(ddp_runs, chakra_cli):
    """The same node ids and names, other durations: the report mixed the two sets."""
    ddp, _ = ddp_runs["ddp"]
    other, result = ddp_runs["compute2x"]
    code, _, err = chakra_cli("report", ddp, "--result", result, "--what-if", "compute=2")
    line = _one_error(code, err, f"{result}: the result is not a run of this trace set")
    rank, node_id = _named(line)
    mine, theirs = _node(ddp, rank, node_id), _node(other, rank, node_id)
    assert mine.type == NodeType.COMP_NODE and mine.duration_micros != theirs.duration_micros
    ran = _span_of(result, rank, node_id)[0]
    assert ran == theirs.duration_micros * 1000  # the result ran the other set's node (replay model)
    assert f"lasted {ran:,} ns, but " in line and f"records {mine.duration_micros:,} us" in line
    # each set with its own result is accepted
    for path, own in (ddp_runs["ddp"], ddp_runs["compute2x"]):
        code, _, err = chakra_cli("report", path, "--result", own)
        assert code == 0, err


def _roofline_run(tmp_path):
    """A generated set simulated on a roofline system (its compute timed from ``num_ops``):
    ``(set, result.json)``."""
    text = re.sub(r"(?m)^compute:.*$", "compute: {model: roofline, peak-perf: 100}", ANY_SIZE.read_text())
    assert "roofline" in text
    (tmp_path / "roofline.yaml").write_text(text)
    gen = chakra.generate("transformer", {"layers": 1, "hidden": 64, "heads": 4, "seq": 32, "vocab": 128})
    gen.write(tmp_path / "set" / "trace")
    chakra.simulate(str(tmp_path / "set"), system=str(tmp_path / "roofline.yaml"), options={"spans": True},
                    output=tmp_path / "sim")
    return tmp_path / "set", tmp_path / "sim" / "result.json"


def test_durations_are_compared_where_the_run_replayed_them(tmp_path, chakra_cli):
    """Under a roofline the compute spans do not last the nodes' durations, so they are not
    compared (the set is not refused); on a replay system the set's copy with compute 2x slower
    (its compute nodes last 1 us, the least the `scale` transform makes faster) is told apart."""
    path, result = _roofline_run(tmp_path)
    s = Spans.load(result.parent / "spans.npz")
    nodes = {n.id: n for n in chakra.load_traces(str(path))[0].nodes()}
    compute = chakra.SPAN_KINDS.index("compute")
    timed = [(int(d), nodes[int(i)].duration_micros * 1000) for d, i, k in zip(s.dur_ns, s.node_id, s.kind)
             if k == compute and i >= 0]
    assert any(d != us for d, us in timed)  # the roofline's times, not the trace's
    code, _, err = chakra_cli("report", path, "--result", result)
    assert code == 0, err
    # the set's copy with compute 2x slower simulated on a replay system: told apart
    slow = chakra.transform(str(path), "scale", {"compute_speedup": 0.5})
    chakra.simulate(slow, system=str(ANY_SIZE), options={"spans": True}, output=tmp_path / "slow")
    code, _, err = chakra_cli("report", path, "--result", tmp_path / "slow" / "result.json")
    _one_error(code, err, "the result is not a run of this trace set", "which the replay compute model it ran with")


def test_a_result_of_the_set_with_other_sizes_is_refused(ddp_runs, chakra_cli):
    ddp, _ = ddp_runs["ddp"]
    other, result = ddp_runs["comm_half"]
    code, _, err = chakra_cli("report", ddp, "--result", result)
    line = _one_error(code, err, f"{result}: the result is not a run of this trace set")
    rank, node_id = _named(line)
    mine, theirs = (chakra.get_attr(_node(p, rank, node_id), "comm_size") for p in (ddp, other))
    moved = _span_of(result, rank, node_id)[1]
    assert moved == theirs != mine
    assert f"moved {moved:,} bytes, but " in line and f"records comm_size {mine:,}" in line


# -- 3. a result edited against its spans is refused --------------------------------------------

@pytest.mark.parametrize("edit, key", [
    (lambda d: d["summary"].update(finish_ns=123), "summary.finish_ns"),
    (lambda d: d.update(ranks=d["ranks"][:1]), "ranks"),
    (lambda d: d["ranks"][5].update(finish_ns=d["ranks"][5]["finish_ns"] - 1), "ranks"),
])
def test_an_edited_result_is_refused(gpt3, tmp_path, chakra_cli, edit, key):
    _, result = gpt3
    # what is compared: the simulator's summary and rows are its spans' ends (a symmetric run:
    # rank 0's spans stand for all 16 ranks)
    data = json.loads(result.read_text())
    s = Spans.load(result.parent / "spans.npz")
    assert data["summary"]["finish_ns"] == int(s.end_ns.max())
    assert [r["finish_ns"] for r in data["ranks"]] == [int(s.end_ns[s.rank == 0].max())] * 16
    shutil.copytree(result.parent, tmp_path / "r")
    data = json.loads((tmp_path / "r" / "result.json").read_text())
    edit(data)
    (tmp_path / "r" / "result.json").write_text(json.dumps(data))
    code, _, err = chakra_cli("report", "--result", tmp_path / "r" / "result.json")
    _one_error(code, err, f"{tmp_path / 'r' / 'result.json'}:{key}: ", "an edited result or spans of another run")


# -- 4. -o writes by its suffix ----------------------------------------------------------------

def test_the_report_file_is_written_by_its_suffix(ddp_runs, tmp_path, chakra_cli):
    """``-o rep.json`` or ``rep.txt`` wrote the HTML page."""
    _, result = ddp_runs["ddp"]
    code, printed, err = chakra_cli("report", "--result", result, "--json")
    assert code == 0, err
    code, text, err = chakra_cli("report", "--result", result, "-o", tmp_path / "rep.json")
    assert code == 0, err
    assert json.loads((tmp_path / "rep.json").read_text()) == json.loads(printed)
    assert (tmp_path / "rep.json").read_text() == printed
    code, text, err = chakra_cli("report", "--result", result, "-o", tmp_path / "rep.txt")
    assert code == 0, err
    assert text == (tmp_path / "rep.txt").read_text() + f"wrote {tmp_path / 'rep.txt'}\n"
    code, _, err = chakra_cli("report", "--result", result, "-o", tmp_path / "rep.HTM")
    assert code == 0 and (tmp_path / "rep.HTM").read_text().startswith("<!DOCTYPE html>"), err
    for bad in ("rep.csv", "rep"):
        code, _, err = chakra_cli("report", DDP, "-o", tmp_path / bad)
        _one_error(code, err, str(tmp_path / bad), "by the file's suffix", ".html", ".json", "--json", ".txt")
        assert not (tmp_path / bad).exists()
