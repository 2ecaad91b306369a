"""Process groups from PyTorch's ``## process_group:init ##`` node in a set without the
``process_groups`` attribute: every rank's node is read (a rank without one adds none), and
two ranks that describe one group with other members are a ``pg-unparseable`` finding naming
both files, as two ranks' attributes are."""

from __future__ import annotations

import json

import pytest

from chakra_core.io._etio import EtWriter
from chakra_core.io._schema import PG_INIT_NAME, CommType, GlobalMetadata, Node, NodeType
from chakra_core.trace._attrs import set_attr
from chakra_core.trace._traceset import open_traceset
from chakra_core.validation._validate import validate_as

pytest.importorskip("numba")


def _pg_init(ranks_of_a):
    """PyTorch's node: its inputs' values are the JSON list in a Python-literal list."""
    n = Node(id=1, name=PG_INIT_NAME, type=NodeType.METADATA_NODE)
    n.inputs.values = "['" + json.dumps([{"pg_name": "A", "ranks": ranks_of_a}]) + "']"
    return n


def _allreduce_on_a():
    n = Node(id=2, name="allreduce", type=NodeType.COMM_COLL_NODE, data_deps=[1])
    set_attr(n, "comm_type", int(CommType.ALL_REDUCE))
    set_attr(n, "comm_size", 1024)
    set_attr(n, "pg_name", "A")
    return n


def _set(tmp_path, *first_nodes):
    """A set with an all-reduce on group A in each rank, after its given first node, and a rank
    of compute; each file written as it is (writing a set would read its groups)."""
    ranks = [[first, _allreduce_on_a()] for first in first_nodes] + [[Node(id=1, name="c", type=NodeType.COMP_NODE)]]
    for r, nodes in enumerate(ranks):
        with EtWriter(tmp_path / f"t.{r}.et", GlobalMetadata(version="0.0.4")) as w:
            for n in nodes:
                w.write(n)
    return str(tmp_path)


def _found(path):
    plain = validate_as(open_traceset(path), False)
    assert [str(f) for f in validate_as(open_traceset(path), True)] == [str(f) for f in plain]
    return [(f.rule, f.rank, f.file, f.message) for f in plain]


def test_ranks_whose_nodes_disagree_are_reported(tmp_path):
    path = _set(tmp_path, _pg_init([0, 1]), _pg_init([0, 2]))
    assert _found(path) == [("pg-unparseable", 1, f"{path}/t.1.et",
                             f"process group 'A' has the ranks [0, 2] here but [0, 1] in {path}/t.0.et")]


def test_a_node_in_one_rank_only_defines_the_group(tmp_path):
    path = _set(tmp_path, Node(id=1, name="c", type=NodeType.COMP_NODE), _pg_init([0, 1]))
    assert open_traceset(path).process_groups == {"A": [0, 1]}
    assert _found(path) == []
