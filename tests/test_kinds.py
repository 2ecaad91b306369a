"""classify_nodes against what each node's type and ``is_cpu_op`` say (read by protobuf's
decoder and the node getters), on the recorded collectives of chakra-pytorch (every collective
and point-to-point kind, CPU and accelerator compute), on the golden trace (every node type)
and on its memory nodes marked as CPU operations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chakra_core import (
    FileRank,
    GlobalMetadata,
    MemoryRank,
    Node,
    NodeClasses,
    NodeKind,
    NodeResource,
    NodeType,
    RankTrace,
    classify_nodes,
    get_bool,
    load_traces,
    node_columns,
    set_attr,
)

ROOT = Path(__file__).resolve().parents[1]
COLLECTIVES = ROOT / "plugins/chakra-pytorch/tests/data/collectives"
GOLDEN = ROOT / "tests/data/golden.0.et"
K, R, T = NodeKind, NodeResource, NodeType
#: (node type, is_cpu_op) -> (kind, resource): the simulator's and the emulator's rule
RULE = {
    (T.COMP_NODE, False): (K.COMPUTE, R.COMPUTE), (T.COMP_NODE, True): (K.COMPUTE, R.CPU),
    (T.MEM_LOAD_NODE, False): (K.MEMORY, R.COMM), (T.MEM_LOAD_NODE, True): (K.MEMORY, R.CPU),
    (T.MEM_STORE_NODE, False): (K.MEMORY, R.COMM), (T.MEM_STORE_NODE, True): (K.MEMORY, R.CPU),
    (T.COMM_COLL_NODE, False): (K.COLLECTIVE, R.COMM), (T.COMM_COLL_NODE, True): (K.COLLECTIVE, R.COMM),
    (T.COMM_SEND_NODE, False): (K.SEND, R.COMM), (T.COMM_SEND_NODE, True): (K.SEND, R.COMM),
    (T.COMM_RECV_NODE, False): (K.RECV, R.NONE), (T.COMM_RECV_NODE, True): (K.RECV, R.NONE),
}


def _classified(rt: RankTrace) -> tuple[NodeClasses, list[Node]]:
    return classify_nodes(node_columns(rt, ["is_cpu_op"])), list(rt.nodes())


def _check(classes: NodeClasses, nodes: list[Node]) -> None:
    assert len(classes) == len(nodes)
    for i, n in enumerate(nodes):
        cpu = bool(get_bool(n, "is_cpu_op", False))
        kind, resource = RULE.get((n.type, cpu), (K.OTHER, R.NONE))
        assert (classes.kind[i], classes.resource[i], classes.is_cpu[i]) == (kind, resource, cpu), (i, n)
    assert classes.kind.dtype == classes.resource.dtype == np.uint8


def test_recorded_collectives():
    pytest.importorskip("chakra_pytorch")
    for rt in load_traces(str(COLLECTIVES)):
        classes, nodes = _classified(rt)
        _check(classes, nodes)
        kinds = np.bincount(classes.kind, minlength=len(K))
        # record_collectives.py: a blocking send or recv, an isend or irecv, and one of each in a batch
        assert (kinds[K.SEND], kinds[K.RECV]) == (2, 2)
        assert kinds[K.COMPUTE] and kinds[K.COLLECTIVE] and kinds[K.OTHER]
        compute = classes.kind == K.COMPUTE
        assert set(classes.resource[compute].tolist()) == {R.CPU, R.COMPUTE}


def test_every_node_type_of_the_golden_trace():
    classes, nodes = _classified(FileRank(0, GOLDEN))
    _check(classes, nodes)
    assert set(classes.kind.tolist()) == set(K)


def test_memory_on_the_cpu_and_unknown_types():
    _, nodes = _classified(FileRank(0, GOLDEN))
    for n in nodes:
        if n.type in (T.MEM_LOAD_NODE, T.MEM_STORE_NODE):
            set_attr(n, "is_cpu_op", True)
    nodes.append(Node(id=99, type=max(T) + 1))
    classes, _ = _classified(MemoryRank(0, GlobalMetadata(), nodes))
    _check(classes, nodes)
    memory = classes.kind == K.MEMORY
    assert memory.sum() == 2 and (classes.resource[memory] == R.CPU).all()
    assert (classes.kind[-1], classes.resource[-1]) == (K.OTHER, R.NONE)


def test_columns_without_is_cpu_op():
    with pytest.raises(ValueError, match="is_cpu_op"):
        classify_nodes(node_columns(FileRank(0, GOLDEN)))
