"""What a command writes never replaces what it reads; outputs that cannot be written are named
as given; options that would hold or print garbage are refused (exit 2, one line)."""

from __future__ import annotations

import filecmp
import json
import re
from pathlib import Path

import pytest

import chakra_core as chakra

ROOT = Path(__file__).resolve().parent.parent
TEXT = ROOT / "examples" / "text" / "resnet50_like.txt"
SYSTEM = ROOT / "examples" / "system" / "any_size.yaml"
DDP = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp"

pytest.importorskip("chakra_text")


def _one_error(status: int, err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1, err
    assert "internal error" not in err and all(w in lines[0] for w in words), lines[0]


@pytest.fixture
def ets(tmp_path, chakra_cli):
    """A 2-rank set converted from the text example, and a copy of its bytes to compare with."""
    code, _, err = chakra_cli("convert", TEXT, "-I", "npus=2", "-o", f"{tmp_path / 'set'}/")
    assert code == 0, err
    return tmp_path / "set", {p.name: p.read_bytes() for p in (tmp_path / "set").iterdir()}


@pytest.mark.parametrize("args", [
    ["jsonize", "{set}/trace.0.et", "-o", "{set}/trace.0.et"],
    ["simulate", "{set}", "--system", str(SYSTEM), "--timeline", "{set}/trace.1.et"],
    ["report", "{set}", "--system", str(SYSTEM), "-o", "{set}/trace.0.et"],
    ["convert", "{set}", "-o", "{set}/"],
    ["convert", "{set}/trace", "-o", "{set}/trace", "--gzip"],  # the .et files would be stale: deleted
])
def test_an_output_never_replaces_an_input(ets, chakra_cli, args):
    path, before = ets
    code, _, err = chakra_cli(*[a.format(set=path) for a in args])
    _one_error(code, err, "is an input of this command", str(path))
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before


def test_a_pipelines_timeline_over_its_input_is_refused(ets, tmp_path, chakra_cli):
    path, before = ets
    (tmp_path / "p.yaml").write_text(json.dumps({
        "input": {"paths": [str(path)]},
        "backends": [{"name": "simpy", "output": str(tmp_path / "out"),
                      "options": {"system": str(SYSTEM), "timeline": str(path / "trace.0.et")}}]}))
    code, _, err = chakra_cli("run", tmp_path / "p.yaml")
    _one_error(code, err, "trace.0.et", "is an input of this command")
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before


def test_writing_beside_the_inputs_is_still_allowed(ets, chakra_cli):
    path, _ = ets
    code, _, err = chakra_cli("jsonize", path, "-o", f"{path}/")
    assert code == 0, err
    assert sorted(p.name for p in path.iterdir()) == ["trace.0.et", "trace.0.json", "trace.1.et", "trace.1.json"]


def test_an_output_that_cannot_be_created_is_named_as_given(ets, chakra_cli):
    path, _ = ets
    code, _, err = chakra_cli("graph", path, "-o", "/proc/chakra-no-such.dot")
    _one_error(code, err, "/proc/chakra-no-such.dot:")
    assert ".tmp" not in err


@pytest.mark.parametrize("args", [
    ["transform", "{set}", "scale", "-O", "ranks=0-1000000000", "-O", "compute_speedup=2", "-o", "{out}/"],
    ["simulate", "{set}", "--system", str(SYSTEM), "--timeline", "{out}.json", "-O", "timeline_ranks=0-99999999999"],
])
def test_a_rank_range_past_the_bound_is_refused(ets, tmp_path, chakra_cli, args):
    path, _ = ets
    code, _, err = chakra_cli(*[a.format(set=path, out=tmp_path / "o") for a in args])
    _one_error(code, err, "spans more than 16,777,216 ranks")


def test_report_top_below_zero_is_refused(ets, chakra_cli):
    path, _ = ets
    code, _, err = chakra_cli("report", path, "--system", SYSTEM, "--top", "-1", "--json")
    _one_error(code, err, "top: -1")


def test_a_pytorch_conversion_round_trips_through_json_byte_for_byte(tmp_path, chakra_cli):
    pytest.importorskip("chakra_pytorch")
    for args in (["convert", DDP, "-o", f"{tmp_path / 'et'}/"], ["jsonize", tmp_path / "et", "-o", f"{tmp_path / 'js'}/"],
                 ["convert", tmp_path / "js", "-o", f"{tmp_path / 'back'}/"]):
        code, _, err = chakra_cli(*args)
        assert code == 0, err
    names = sorted(p.name for p in (tmp_path / "et").iterdir())
    assert names == ["trace.0.et", "trace.1.et"]
    assert all(filecmp.cmp(tmp_path / "et" / n, tmp_path / "back" / n, shallow=False) for n in names)


@pytest.mark.parametrize("transform", [["scale", "-O", "compute_speedup=2"], ["straggler"]])
def test_a_transform_on_a_rank_not_in_the_set_is_refused(ets, tmp_path, chakra_cli, transform):
    # it would select nothing there and write the set unchanged
    path, _ = ets
    code, _, err = chakra_cli("transform", path, *transform, "-O", "ranks=9", "-o", f"{tmp_path / 'out'}/")
    _one_error(code, err, "rank 9 is not in the set (ranks 0..1)")
    assert not (tmp_path / "out").exists()


def test_a_rank_given_twice_names_both_files(ets, tmp_path, chakra_cli):
    path, _ = ets
    code, _, err = chakra_cli("convert", TEXT, "-I", "npus=3", "-o", f"{tmp_path / 's3'}/")
    assert code == 0, err
    code, _, err = chakra_cli("jsonize", tmp_path / "s3", "-o", f"{tmp_path / 'j'}/")
    assert code == 0, err
    one = tmp_path / "j" / "trace.1.json"
    one.write_text(one.read_text().replace('"rank": 1', '"rank": 2', 1))
    code, _, err = chakra_cli("validate", tmp_path / "j")
    _one_error(code, err, f"{tmp_path / 'j' / 'trace.2.json'}: rank 2 given twice", f"also by {one}")


def test_a_what_if_on_a_name_no_operation_has_says_so(ets, chakra_cli):
    path, _ = ets
    code, out, err = chakra_cli("report", path, "--system", SYSTEM, "--what-if", "name:NOSUCH=2", "--json")
    assert code == 0, err
    w = json.loads(out)["what_if"][0]
    assert w["estimated_change_ns"] == 0 and "no operation is named 'NOSUCH'" in w["note"]
    code, _, err = chakra_cli("report", path, "--system", SYSTEM, "--what-if", "name:=2")
    _one_error(code, err, "'name:'", "name:OPERATOR")


def test_a_timeline_that_selects_no_span_says_so(ets, tmp_path, chakra_cli):
    path, _ = ets
    code, out, err = chakra_cli("simulate", path, "--system", SYSTEM, "--timeline", tmp_path / "t.json",
                                "-O", "timeline_window=99999999999:999999999999")
    assert code == 0, err
    assert re.search(r"timeline empty: none of the \d+ spans is on the ranks and in the time window selected", out)
    assert "(the run: ranks 0-1, ending at" in out
    # a rank outside the run is a mistake, not an empty selection
    code, out, err = chakra_cli("simulate", path, "--system", SYSTEM, "--timeline", tmp_path / "r.json",
                                "-O", "timeline_ranks=9")
    _one_error(code, err, "timeline_ranks: rank 9 is not in the run (ranks 0-1)")
    assert not (tmp_path / "r.json").exists()


def test_replaying_communication_that_was_never_recorded_says_so(ets, chakra_cli):
    # the text workload records no communication durations: 54 all-reduces on each of 2 ranks;
    # the DDP recording (gloo, plugins/chakra-pytorch/recording) records all of its own
    path, _ = ets
    code, out, err = chakra_cli("simulate", path, "--system", SYSTEM, "-O", "comm=replay")
    assert code == 0, err
    assert "comm=replay: 108 communication node(s) have no recorded duration and took 0 ns" in out
    pytest.importorskip("chakra_pytorch")
    code, out, err = chakra_cli("simulate", DDP, "-O", "comm=replay")
    assert code == 0, err
    assert "comm=replay: communication lasted" in out and "no recorded duration" not in out


def test_stats_says_which_nodes_a_cycle_keeps_off_the_longest_path(tmp_path, chakra_cli):
    # hand-made (our JSON form): 1 <- 2 <-> 3; only node 1 (10 us) is on no cycle
    nodes = [{"id": "1", "name": "a", "type": "COMP_NODE", "duration_micros": "10"},
             {"id": "2", "name": "b", "type": "COMP_NODE", "data_deps": ["1", "3"], "duration_micros": "20"},
             {"id": "3", "name": "c", "type": "COMP_NODE", "data_deps": ["2"], "duration_micros": "30"}]
    (tmp_path / "trace.0.json").write_text(json.dumps(
        {"format": "chakra-et-json", "version": 1, "rank": 0, "metadata": {"version": "0.0.4"}, "nodes": nodes}))
    code, out, err = chakra_cli("stats", tmp_path / "trace.0.json")
    assert code == 0, err
    assert "note: rank 0: 2 node(s) on or behind a dependency cycle are left out of its longest path" in out
    row = chakra.stats(str(tmp_path / "trace.0.json"))["per_rank"][0]
    assert (row["longest_path_us"], row["longest_path_nodes"], row["longest_path_left_out"]) == (10, 1, 2)


@pytest.mark.parametrize("lines", [[], ["--lines"]])
def test_jsonize_replaces_an_earlier_set_whole(tmp_path, chakra_cli, lines):
    # an 8-rank set jsonized where a 2-rank one had been left ranks 2-7 behind: the folder then
    # read as one set of 8 mixed ranks (as convert does, the ranks the new set lacks are removed)
    for npus in (8, 2):
        assert chakra_cli("convert", TEXT, "-I", f"npus={npus}", "-o", f"{tmp_path / f'set{npus}'}/")[0] == 0
    assert chakra_cli("jsonize", tmp_path / "set8", "-o", f"{tmp_path / 'js'}/", *lines)[0] == 0
    (tmp_path / "js" / "notes.txt").write_text("kept")
    assert chakra_cli("jsonize", tmp_path / "set2", "-o", f"{tmp_path / 'js'}/")[0] == 0
    assert sorted(p.name for p in (tmp_path / "js").iterdir()) == ["notes.txt", "trace.0.json", "trace.1.json"]
    status, out, err = chakra_cli("stats", "--format", "json", f"{tmp_path / 'js'}/", "--json")
    assert status == 0 and json.loads(out)["ranks"] == 2, err
