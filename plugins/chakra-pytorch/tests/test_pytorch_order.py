"""The converted graph's order: dependencies first, then the earliest issue, then the lowest id;
repeated and dangling dependencies dropped; a cycle refused."""

from __future__ import annotations

import random

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
    assert [(n.id, n.ctrl, list(n.data)) for n in order] == [(9, [], []), (1, [], []), (5, [], []), (3, [5, 9], []),
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


def _greedy_order(out: dict[int, OutNode]) -> list[int] | None:
    """The order the docstring defines, found the slow way: at every step, of the nodes whose
    every (existing) dependency is placed, the one with the earliest issue, then the lowest id;
    None when nodes remain and none is ready (a cycle)."""
    def key(n: OutNode) -> tuple[int, int]:
        return (n.issued if n.issued >= 0 else max(n.start, 0), n.id)
    left, placed, order = dict(out), set(), []
    while left:
        ready = [n for n in left.values() if all(d in placed or d not in out for d in (*n.ctrl, *n.data))]
        if not ready:
            return None
        best = min(ready, key=key)
        order.append(best.id)
        placed.add(best.id)
        del left[best.id]
    return order


@pytest.mark.parametrize("seed", range(40))
def test_order_is_the_greedy_one_on_random_graphs(seed):
    """Random graphs (repeated, dangling and forward dependencies, equal issue times, cycles):
    the order is the greedy one found step by step, each node's lists keep its existing
    dependencies once each (data ones not also control), and a cycle is refused."""
    rng = random.Random(seed)
    ids = rng.sample(range(1000), rng.randint(1, 80))
    out = {}
    for k, nid in enumerate(ids):
        pool = ids[:k] + [rng.randint(0, 1100)] + ([rng.choice(ids)] if rng.random() < 0.03 else [])
        out[nid] = OutNode(nid, "op", NodeType.COMP_NODE, start=rng.choice([-1, 0, 7, rng.randint(0, 40)]),
                           issued=rng.choice([-1, -1, 5, rng.randint(0, 40)]),
                           ctrl=[rng.choice(pool) for _ in range(rng.choice([0, 1, 1, 2, 3]))],
                           data=[rng.choice(pool) for _ in range(rng.choice([0, 0, 1, 2]))])
    want = _greedy_order(out)
    deps = {nid: ([d for d in dict.fromkeys(n.ctrl) if d in out],
                  [d for d in dict.fromkeys(n.data) if d in out and d not in n.ctrl]) for nid, n in out.items()}
    if want is None:
        with pytest.raises(TraceFormatError, match="dependency cycle"):
            toposort(out)
        return
    order = toposort(out)
    assert [n.id for n in order] == want
    assert all((list(n.ctrl), list(n.data)) == deps[n.id] for n in order)
