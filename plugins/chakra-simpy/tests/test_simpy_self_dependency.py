"""A compute node that depends on itself, run without validation: it never becomes ready, so the
simulator reports its rank as stuck in one line (exit 2).  It was taken for a compute chain of
one link that never ends, and the chain's tables failed with an internal IndexError (found by
fuzzing simulate with ``--no-validate``).  Hand-made nodes: no framework writes a self-loop."""

from __future__ import annotations

from chakra_core import GlobalMetadata, MemoryRank, Node, NodeType, TraceSet, make_attr


def _comp(i, deps=()):
    n = Node(id=i, name=f"n{i}", type=NodeType.COMP_NODE, duration_micros=5)
    n.data_deps.extend(deps)
    n.attr.append(make_attr("is_cpu_op", False))
    return n


def test_a_node_that_depends_on_itself_is_reported_in_one_line(chakra_cli, tmp_path):
    nodes = [_comp(0), _comp(1, (1,))]
    TraceSet([MemoryRank(0, GlobalMetadata(), nodes)]).write(tmp_path / "t")
    status, out, err = chakra_cli("-q", "simulate", tmp_path, "--backend", "simpy", "--no-validate")
    assert status == 2 and out == "", err
    assert err.startswith("chakra simulate: error: ") and err.count("\n") == 1, err
    assert "a dependency cycle; rank 0: node 1 never became ready" in err, err
