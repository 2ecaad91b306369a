"""``coll-root``: a rooted collective whose root is not a member of its group, on the real DDP
recording (two gloo ranks; its two broadcasts have root 0 in the group of both ranks), both by
the per-node scan and by the columnar one."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra_core import CommType, get_attr, set_attr
from chakra_core.pipeline._pipeline import load_traces
from chakra_core.trace._traceset import open_traceset
from chakra_core.validation._rank_rules import RankCheck
from chakra_core.validation._validate import validate_as

ROOT = Path(__file__).resolve().parents[1]
DDP = ROOT / "plugins/chakra-pytorch/tests/data/ddp"


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp") / "t"
    load_traces(str(DDP)).write(out)
    return open_traceset(str(out))


def _broadcasts(traces):
    return [(r, n.id, get_attr(n, "root")) for r in traces.ranks for n in traces[r].nodes()
            if get_attr(n, "comm_type") == CommType.BROADCAST]


def test_the_recording_s_roots_are_read_alike_by_both_scans(ddp, same_scan):
    casts = _broadcasts(ddp)
    assert len(casts) == 4 and {root for _, _, root in casts} == {0}
    for rt in ddp:
        fast, slow = (RankCheck(rt.rank, rt.label, 2, None, lambda pg: 0, True) for _ in range(2))
        same_scan(rt, fast, slow)
        assert [(nid, root) for _, nid, _, root in fast.roots] == [(i, 0) for r, i, _ in casts if r == rt.rank]
    for compiled in (False, True):
        assert [f for f in validate_as(ddp, compiled) if f.rule == "coll-root"] == []


@pytest.mark.parametrize("compiled", [False, True])
def test_a_root_outside_the_group_is_a_warning(ddp, tmp_path, compiled):
    first = _broadcasts(ddp)[0][1]

    def outside(rank, node):
        if node.id == first:
            set_attr(node, "root", 5)
        return node

    ddp.map_nodes(outside).write(tmp_path / "t")
    bad = open_traceset(str(tmp_path / "t"))
    found = [f for f in validate_as(bad, compiled) if f.rule == "coll-root"]
    assert [(f.rank, f.node_id, f.severity) for f in found] == [(0, first, "warning"), (1, first, "warning")]
    assert "BROADCAST with root 5, which is not a member of the default group (all ranks) (its 2 ranks: 0, 1)" in found[0].message
