"""Ranks in dependency order whose ids do not ascend (the PyTorch converter's order): read once,
with the same findings, in the same order, as the second read into a DepGraph gives them.

The ranks are the 2-rank data-parallel set of conftest.py with ids relabelled ``100 - id`` (every
dependency still names an earlier node, the ids descend), broken in one place or several.
"""

from __future__ import annotations

import pytest

from chakra_core.io._schema import GlobalMetadata, Node
from chakra_core.trace._attrs import set_attr
from chakra_core.trace._traceset import MemoryRank, TraceSet
from chakra_core.validation import _skeleton
from chakra_core.validation import _validate as V


def _relabelled(nodes: list[Node]) -> list[Node]:
    out = []
    for n in nodes:
        m = Node.FromString(n.SerializeToString())
        m.id = 100 - n.id
        m.data_deps[:] = [100 - d for d in n.data_deps]
        out.append(m)
    return out


def _set(dp_set, edit=None) -> TraceSet:
    ranks = []
    for rt in dp_set:
        nodes = _relabelled(list(rt.nodes()))
        if rt.rank == 0 and edit:
            nodes = edit(nodes) or nodes
        ranks.append(MemoryRank(rt.rank, GlobalMetadata(version="0.0.4"), nodes))
    return TraceSet(ranks, process_groups=dp_set.process_groups)


def _second_read(monkeypatch):
    """Make every rank whose ids do not ascend take the DepGraph read (the route before the
    one-pass reading of such ranks)."""
    graphs = []
    real = _skeleton._graph
    monkeypatch.setattr(_skeleton, "_frontier_by_id", lambda *a: -1)
    monkeypatch.setattr(_skeleton, "_graph", lambda nodes: graphs.append(1) or real(nodes))
    return graphs


def _found(findings):
    return [(f.rule, f.file, f.node_id, f.message, f.severity, f.rank, f.count, f.involved) for f in findings]


def _missing(nodes):
    nodes[4].data_deps.append(55)
    nodes[6].data_deps.append(44)


def _duplicate(nodes):
    nodes[5].id = nodes[2].id


def _forward(nodes):
    nodes[1].data_deps.append(nodes[3].id)


def _sizes_and_missing(nodes):
    set_attr(nodes[6], "comm_size", -1)
    nodes[8].data_deps.append(3)


def _node_types(nodes):
    nodes[9].type = 0  # INVALID_NODE


CASES = {
    "missing": (_missing, [("missing-dep", 95), ("missing-dep", 93)]),
    "duplicate": (_duplicate, [("duplicate-id", 97)]),
    "forward": (_forward, [("cycle", 97)]),
    "sizes_and_missing": (_sizes_and_missing, [("bad-size", 93), ("missing-dep", 91)]),
    "invalid_type": (_node_types, [("invalid-type", 90)]),
}


def test_clean_set_read_once_same_record(dp_set, monkeypatch):
    ts = _set(dp_set)
    graphs = _second_read(monkeypatch)
    before = V._check_ranks(ts, V._Collector(), [""], None, False)
    old = V.validate_as(ts, False)
    assert len(graphs) == 4  # two ranks, read twice
    monkeypatch.undo()
    after = V._check_ranks(ts, V._Collector(), [""], None, False)
    assert V.validate_as(ts, False) == old == []
    assert after[1] == before[1] and sorted(after[1]) == [0, 1]
    for r in (0, 1):
        assert after[0][r].skel_ids == before[0][r].skel_ids
        assert list(after[0][r].skel_ids) == [95, 93, 91, 90, 89]


@pytest.mark.parametrize("name", sorted(CASES))
def test_findings_as_the_second_read_gives_them(dp_set, monkeypatch, name):
    edit, expected = CASES[name]
    ts = _set(dp_set, edit)
    graphs = _second_read(monkeypatch)
    old = V.validate_as(ts, False)
    assert graphs
    monkeypatch.undo()
    new = V.validate_as(ts, False)
    assert _found(new) == _found(old)
    assert [(f.rule, f.node_id) for f in new if f.severity == "error" and f.rank == 0][:len(expected)] == expected
