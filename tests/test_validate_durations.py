"""``bad-duration``: a node longer than 2^40 us is one finding; a rank whose durations add up to
more than 2^50 us is one more, on the node where the sum first passes it; the same on the
per-node path and by the compiled loops (which leave such a rank to the per-node path)."""

from __future__ import annotations

import pytest

from chakra_core.io._schema import GlobalMetadata, Node, NodeType
from chakra_core.trace._traceset import MemoryRank, TraceSet, open_traceset
from chakra_core.validation._validate import MAX_DURATION_US, MAX_RANK_DURATION_US, validate_as

pytest.importorskip("numba")

LONG = "duration_micros = 2199023255552 us, more than 2^40 us (12.7 days)"
SUM = "the durations of this rank add up to more than 2^50 us (35.7 years) at this node"


def _found(tmp_path, durations):
    """The findings, as (node id, message), of a 2-rank set whose rank 0 is a chain of compute
    nodes of ``durations`` us (rank 1: one node of 5 us), the same both ways."""
    chain = [Node(id=i + 1, name=f"c{i + 1}", type=NodeType.COMP_NODE, duration_micros=d, data_deps=[i] if i else [])
             for i, d in enumerate(durations)]
    other = [Node(id=1, name="c1", type=NodeType.COMP_NODE, duration_micros=5)]
    TraceSet([MemoryRank(0, GlobalMetadata(), chain), MemoryRank(1, GlobalMetadata(), other)]).write(tmp_path / "t")
    plain = validate_as(open_traceset(str(tmp_path)), False)
    assert [str(f) for f in validate_as(open_traceset(str(tmp_path)), True)] == [str(f) for f in plain]
    assert {(f.rule, f.rank) for f in plain} <= {("bad-duration", 0)}
    return [(f.node_id, f.message) for f in plain]


def test_one_long_node_is_one_finding(tmp_path):
    assert _found(tmp_path, [2 * MAX_DURATION_US]) == [(1, LONG)]


def test_three_long_nodes_whose_sum_is_far_below_the_rank_limit(tmp_path):
    assert _found(tmp_path, [2 * MAX_DURATION_US] * 3) == [(1, LONG), (2, LONG), (3, LONG)]


def test_the_sum_is_reported_once_where_it_passes_the_limit(tmp_path):
    # 1,024 nodes of 2^40 us make 2^50 us exactly (not more); the 1,025th passes it
    count = MAX_RANK_DURATION_US // MAX_DURATION_US
    assert _found(tmp_path, [MAX_DURATION_US] * (count + 3)) == [(count + 1, SUM)]


def test_a_long_node_that_takes_the_sum_past_the_limit_has_both_findings(tmp_path):
    count = MAX_RANK_DURATION_US // MAX_DURATION_US
    found = _found(tmp_path, [MAX_DURATION_US] * count + [2 * MAX_DURATION_US, 7])
    assert found == [(count + 1, LONG), (count + 1, SUM)]
