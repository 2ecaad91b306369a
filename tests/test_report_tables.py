"""The report's tables and critical path against the simulator's own results and closed forms:
group shapes of a symmetric run with and without its trace set, the path's categories against
the per-rank breakdown, the path of a symmetric run against the same run simulated rank by rank,
a rank that ran nothing, and the rows a table leaves out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chakra_core as chakra
from chakra_core import SpanBuilder, breakdown, critical_path
from chakra_core.analysis._rankroles import group_shapes, shape_label
from chakra_core.trace._traceset import open_traceset

SYSTEM = str(Path(__file__).resolve().parents[1] / "examples/system/any_size.yaml")
#: tp 2 x dp 2 x pp 2, Megatron's layout (tensor parallel fastest): groups named by the generator
PIPELINE = {"layers": 4, "tp": 2, "dp": 2, "pp": 2, "micro_batches": 2}
#: the four parts of a rank's breakdown, which a path staying on the rank has
PARTS = ("compute_ns", "exposed_comm_ns", "exposed_mem_ns", "idle_ns")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The generated pipeline set, simulated with symmetry (one rank per class) and without."""
    out = tmp_path_factory.mktemp("tables")
    chakra.generate("transformer", PIPELINE, output=out / "set")
    for name, sym in (("sym", True), ("full", False)):
        chakra.simulate(str(out / "set"), options={"spans": True, "symmetry": sym}, output=out / name,
                        system=SYSTEM)
    return out


def _shapes(rep: chakra.Report) -> dict[str, str]:
    return {c["group"]: c["group_shape"] for c in rep.to_dict()["collectives"] if "group_shape" in c}


def test_group_shapes_of_a_symmetric_run_are_the_sets_or_none(runs):
    groups = open_traceset(str(runs / "set")).process_groups
    with_set = _shapes(chakra.report(str(runs / "set"), result=str(runs / "sym" / "result.json")))
    assert with_set == {g: shape_label(groups[g]) for g in ("1", "3", "5", "7", "9")}
    assert with_set["1"] == "2 ranks 0-1, consecutive" and with_set["5"] == "2 ranks 0, 2 (stride 2)"
    assert with_set["9"] == "2 ranks 0, 4 (stride 4)"  # the first and last stage's embeddings
    alone = chakra.report(result=str(runs / "sym" / "result.json"))
    assert _shapes(alone) == {}  # one rank per class: who is in a group is not in the spans
    note = "members: unknown for 5 group(s) (1, 3, 5, 7, 9), a symmetric run without the trace set"
    assert [n for n in alone.to_dict()["notes"] if n.startswith(note)] == alone.to_dict()["notes"] != []
    assert alone.text().count("note: " + note) == 1
    full = _shapes(chakra.report(result=str(runs / "full" / "result.json")))  # every rank's spans: known
    assert full == {g: shape_label(m) for g, m in groups.items()}


def test_path_of_a_symmetric_run_is_that_of_the_run_rank_by_rank(runs):
    sym, full = (chakra.report(result=str(runs / d / "result.json")).to_dict() for d in ("sym", "full"))
    assert sym["finish_ns"] == full["finish_ns"] and sym["critical_path"]["crossings"] == 2
    assert sym["critical_path"]["ns_by_category"] == full["critical_path"]["ns_by_category"]


def test_path_on_one_rank_has_the_simulated_ranks_breakdown():
    # data parallel over 2 ranks: the gradient all-reduces overlap the backward pass
    res = chakra.simulate(chakra.generate("transformer", {"layers": 4, "dp": 2}), options={"spans": True},
                          system=SYSTEM)
    cp = critical_path(res.spans)
    assert cp.ns_by_rank() == {0: res.summary["finish_ns"]}
    row = res.ranks[0]
    assert row["overlap_ns"] > 0
    assert cp.ns_by_category() == {**{k: row[k] for k in PARTS}, "skew_ns": 0}


@pytest.mark.parametrize("seed", range(30))
def test_path_on_one_rank_has_its_breakdown(seed):
    rng = np.random.default_rng(seed)
    b = SpanBuilder()
    for _ in range(int(rng.integers(1, 30))):
        kind = str(rng.choice(["compute", "cpu", "collective", "memory", "other"]))
        b.add(0, "s", int(rng.integers(0, 80)), int(rng.choice([0, 1, 4, 9, 20])), "op", kind)
    spans = b.build()
    cp = critical_path(spans)
    (row,) = breakdown(spans)
    assert cp.ns_by_category() == {**{k: row[k] for k in PARTS}, "skew_ns": 0}
    assert cp.finish_ns == row["finish_ns"] and list(cp.start_ns[1:]) == list(cp.end_ns[:-1])


def _all_group_set(symmetric: bool) -> chakra.Spans:
    """Ranks 0, 1 compute 100 ns, ranks 2, 3 200 ns, then an all-reduce of every rank ends at
    250 ns and each computes 50 ns more; ``symmetric``: the spans of ranks 0 and 2 only, each
    standing for its pair."""
    b = SpanBuilder(nranks=4)
    for r in (0, 2) if symmetric else range(4):
        arrive = 100 if r < 2 else 200
        b.add(r, "compute", 0, arrive, "fwd", "compute")
        b.add(r, "comm", arrive, 250 - arrive, "grads", "collective", group="all", match=1)
        b.add(r, "compute", 250, 50, "opt", "compute")
    if symmetric:
        b.ranks_of.update({0: [0, 1], 2: [2, 3]})
    return b.build()


def test_the_members_a_rank_stands_for_arrive_with_it():
    # ranks 2 and 3 arrive together, last: nobody waited for one slower peer, so no skew
    for symmetric in (False, True):
        spans = _all_group_set(symmetric)
        assert critical_path(spans).ns_by_category() == {
            "compute_ns": 250, "exposed_comm_ns": 50, "exposed_mem_ns": 0, "skew_ns": 0, "idle_ns": 0}
        assert group_shapes(spans) == {"all": {"ranks": [0, 1, 2, 3], "label": "4 ranks 0-3, consecutive", "like": 1}}


def test_a_rank_that_ran_nothing_has_a_role_of_its_own():
    b = SpanBuilder(nranks=3)
    for r in (0, 2):
        b.add(r, "compute", 0, 43_000, "k", "compute")
    rep = chakra.report(b.build())
    d = rep.to_dict()
    assert d["roles"] == [{"role": 0, "ranks": [0, 2]}, {"role": 1, "ranks": [1]}]
    assert d["stragglers"] == []
    assert "stragglers: none" in rep.text()


def test_a_straggler_over_a_median_of_zero_has_no_percentage():
    b = SpanBuilder(nranks=3)
    for r, dur in ((0, 100), (1, 0), (2, 0)):
        b.add(r, "compute", 0, dur, "k", "compute")
    rep = chakra.report(b.build())
    assert [(s["rank"], s["excess_ns"], s["excess_pct"]) for s in rep.to_dict()["stragglers"]] == [
        (0, 100, None), (0, 100, None)]
    text = rep.text()
    assert "None" not in text and text.count("vs 0 ns (+100 ns)\n") == 2


def test_the_communication_table_says_how_many_rows_it_leaves_out():
    b = SpanBuilder(nranks=2)
    for g in range(13):
        for r in (0, 1):
            b.add(r, "comm", 10 * g, 10, "ar", "collective", group=f"g{g}", match=g, comm_type=0)
    rep = chakra.report(b.build())
    assert len(rep.to_dict()["collectives"]) == 13
    lines = rep.text().splitlines()
    at = lines.index(next(x for x in lines if x.startswith("communication by kind and group")))
    assert lines[at + 11] == "  ... 3 more (with --json)"
    assert [x.split()[1] for x in lines[at + 1:at + 11]] == [f"g{g}" for g in range(10)]
