"""The core dependency graph (DepGraph) and the critical path of ``chakra stats``: closed-form
answers on small graphs, in file orders that stream and in orders that need the whole graph."""

from __future__ import annotations

import json

import numpy as np
import pytest

from chakra_core import DepGraph, Node, NodeType, compute_stats, open_traceset, write_et


def _node(nid: int, dur: int = 0, data=(), ctrl=()) -> Node:
    return Node(id=nid, type=NodeType.COMP_NODE, duration_micros=dur, data_deps=list(data),
                ctrl_deps=list(ctrl))


def _diamond() -> list[Node]:
    """1 (1 us) -> 2 (5 us), 3 (3 us) -> 4 (2 us): the longest path is 1, 2, 4 = 8 us."""
    return [_node(1, 1), _node(2, 5, [1]), _node(3, 3, [1]), _node(4, 2, [2], [3])]


def _stats(tmp_path, nodes: list[Node]) -> dict:
    write_et(tmp_path / "t.0.et", None, nodes)
    return compute_stats(open_traceset(tmp_path / "t.0.et"))["per_rank"][0]


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [3, 2, 1, 0], [0, 3, 1, 2]])
def test_longest_path_of_a_diamond_in_any_file_order(tmp_path, order):
    row = _stats(tmp_path, [_diamond()[i] for i in order])
    assert (row["longest_path_us"], row["longest_path_nodes"]) == (8, 3)


def test_longest_path_with_sparse_ids_and_a_missing_dep(tmp_path):
    nodes = [_node(10, 4), _node(20, 6, [10, 99]), _node(35, 1, [10])]  # 99 is not in the file
    row = _stats(tmp_path, nodes)
    assert (row["longest_path_us"], row["longest_path_nodes"]) == (10, 2)


def test_longest_path_of_a_long_chain(tmp_path):
    n = 10_000
    nodes = [_node(i, i % 7, [i - 1] if i > 1 else []) for i in range(1, n + 1)]
    expected = sum(i % 7 for i in range(1, n + 1))
    assert _stats(tmp_path, nodes)["longest_path_us"] == expected
    assert _stats(tmp_path, nodes[::-1])["longest_path_us"] == expected


@pytest.mark.parametrize("reverse", [False, True])
def test_durations_past_int64_are_a_located_error(tmp_path, chakra_cli, reverse):
    nodes = [_node(1, 1 << 62), _node(2, 1 << 62, [1]), _node(3, 5)]
    write_et(tmp_path / "t.0.et", None, nodes[::-1] if reverse else nodes)
    status, _, err = chakra_cli("stats", tmp_path / "t.0.et")
    assert status == 2 and "t.0.et:node 2:" in err and "2^63-1" in err
    write_et(tmp_path / "u.0.et", None, [_node(7, 1 << 63)])
    status, _, err = chakra_cli("stats", tmp_path / "u.0.et")
    assert status == 2 and "u.0.et:node 7:" in err
    status, out, _ = chakra_cli("stats", tmp_path / "u.0.et", "--no-longest-path", "--json")
    assert status == 0 and json.loads(out)["per_rank"][0]["compute_us"] == 1 << 63


def test_dep_graph_arrays():
    g = DepGraph(np.array([5, 3, 9], np.uint64), np.array([0, 0, 2, 4]), np.array([5, 5, 3, 7], np.uint64))
    assert g.deps.tolist() == [0, 0, 1, -1] and g.missing == [(9, 7)]
    assert g.in_degree().tolist() == [0, 2, 1]
    ptr, kids = g.children()
    assert ptr.tolist() == [0, 2, 3, 3] and kids.tolist() == [1, 1, 2]
    assert g.in_file_order()
    order, left = g.topo_order()
    assert order.tolist() == [0, 1, 2] and left == []


def test_topo_order_priority_and_cycles():
    # 0 and 1 are roots; 2 depends on 1; priority runs 2 before the root 0
    g = DepGraph(np.array([1, 2, 3], np.uint64), np.array([0, 0, 0, 1]), np.array([2], np.uint64))
    assert g.topo_order()[0].tolist() == [0, 1, 2]
    assert g.topo_order(np.array([5, 0, 1]))[0].tolist() == [1, 2, 0]
    # 3 -> 4 -> 3 is a cycle; 5 waits behind it
    g = DepGraph(np.array([3, 4, 5], np.uint64), np.array([0, 1, 2, 3]), np.array([4, 3, 4], np.uint64))
    order, left = g.topo_order()
    assert len(order) == 0 and left == [0, 1, 2]
    assert sorted(g.find_cycle(left)) == [3, 4]
    g = DepGraph(np.array([8], np.uint64), np.array([0, 1]), np.array([8], np.uint64))
    assert g.drop_self_deps() == 1 and g.topo_order()[0].tolist() == [0]
