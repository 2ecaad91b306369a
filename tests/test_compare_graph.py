"""``chakra compare``'s graph figures on sets a writer gets wrong: a dependency cycle, and
durations whose path sum passes 2^63-1 us.

The sets are hand-made: no framework here records a cycle or such durations.
"""

from __future__ import annotations

import json

import chakra_core as chakra
from chakra_core import GlobalMetadata, MemoryRank, Node, NodeType, TraceSet


def _rank(spec: list[tuple[int, int, list[int]]]) -> TraceSet:
    """One rank of compute nodes ``(id, duration us, data deps)``."""
    nodes = []
    for nid, us, deps in spec:
        n = Node(id=nid, name=f"c{nid}", type=NodeType.COMP_NODE, duration_micros=us)
        n.data_deps.extend(deps)
        nodes.append(n)
    return TraceSet([MemoryRank(0, GlobalMetadata(version="0.0.4"), nodes)])


CHAIN = [(1, 10, []), (2, 20, [1]), (3, 30, [2]), (4, 40, [3])]
# 1 -> 2 -> 3 -> 1 is a cycle and 4 waits behind it; 5 -> 6 is a chain of 5 + 7 us
CYCLE = [(1, 10, [3]), (2, 20, [1]), (3, 30, [2]), (4, 40, [3]), (5, 5, []), (6, 7, [5])]


def test_nodes_on_or_behind_a_cycle_are_counted_and_named_as_left_out(chakra_cli, tmp_path):
    r = chakra.compare(_rank(CHAIN), _rank(CYCLE), simulate=False)
    g = r["graph"]
    assert g["left_out"] == {"a": 0, "b": 4}
    # B's figures are those of the chain 5 -> 6 alone (they were depth 1, width 4, 0 us)
    assert (g["depth"]["b"], g["width"]["b"], g["critical_path_us"]["b"]) == (2, 1, 12)
    assert (g["depth"]["a"], g["width"]["a"], g["critical_path_us"]["a"]) == (4, 1, 100)
    _rank(CHAIN).write(tmp_path / "a" / "trace")
    _rank(CYCLE).write(tmp_path / "b" / "trace")
    status, out, _ = chakra_cli("compare", tmp_path / "a", tmp_path / "b", "--no-simulate")
    assert status == 0
    assert ("note: B: 4 node(s) on or behind a dependency cycle are left out of depth, width and "
            "critical_path_us (chakra validate names the cycle)") in out
    status, out, _ = chakra_cli("compare", tmp_path / "a", tmp_path / "b", "--no-simulate", "--json")
    assert json.loads(out)["graph"]["left_out"] == {"a": 0, "b": 4}


def test_a_path_past_2_63_us_is_an_error_naming_the_node(chakra_cli, tmp_path):
    _rank(CHAIN).write(tmp_path / "a" / "trace")
    cases: list[tuple[str, list[tuple[int, int, list[int]]], int]] = [
        ("sum", [(1, 2**63 - 1, []), (2, 5, [1])], 2), ("one", [(1, 2**64 - 1, [])], 1)]
    for name, spec, node in cases:
        _rank(spec).write(tmp_path / name / "trace")
        for args in ((tmp_path / "a", tmp_path / name), (tmp_path / name, tmp_path / "a")):
            status, _, err = chakra_cli("compare", *args, "--no-simulate")
            assert status == 2, err
            assert err.strip().endswith(f"{tmp_path / name / 'trace.0.et'}:node {node}: the durations on a path "
                                        "to this node sum past 2^63-1 us (duration_micros out of range?)")
