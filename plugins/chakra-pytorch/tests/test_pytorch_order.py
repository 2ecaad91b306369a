"""The converted graph's order: dependencies first, then the earliest issue, then the lowest id;
repeated and dangling dependencies dropped; a cycle refused."""

from __future__ import annotations

import pytest

from chakra_core import NodeType, TraceFormatError
from chakra_pytorch.outnode import OutNode, toposort


def _graph(*nodes: tuple[int, int, list[int], list[int]]) -> dict[int, OutNode]:
    return {nid: OutNode(nid, f"op{nid}", NodeType.COMP_NODE, start=start, ctrl=ctrl, data=data)
            for nid, start, ctrl, data in nodes}


def test_order_and_cleaned_dependencies():
    out = _graph((5, 10, [], []), (3, 10, [5, 5, 9], [5, 11, 9, 11]), (7, 1, [], [3]), (9, 0, [], []),
                 (1, 10, [], []))
    order = toposort(out)
    # 9 starts first; 1 and 5 tie at 10 (lowest id first); 3 waits for 5 and 9; 7 (start 1) for 3
    assert [(n.id, n.ctrl, n.data) for n in order] == [(9, [], []), (1, [], []), (5, [], []), (3, [5, 9], []),
                                                       (7, [], [3])]
    assert out == {}


def test_issue_time_before_start():
    out = _graph((1, 5, [], []), (2, 9, [], []))
    out[2].issued = 2
    assert [n.id for n in toposort(out)] == [2, 1]


@pytest.mark.parametrize("nodes", [((1, 0, [2], []), (2, 0, [], [1]), (3, 0, [], [])), ((1, 0, [1], []),)])
def test_cycle_is_refused(nodes):
    with pytest.raises(TraceFormatError, match="dependency cycle"):
        toposort(_graph(*nodes))
