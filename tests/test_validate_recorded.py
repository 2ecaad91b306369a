"""Validation rules on real traces: the 2-rank gloo recordings of the PyTorch plugin
(plugins/chakra-pytorch/recording/), converted, written as .et, then broken in one place."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra_core.io._schema import GlobalMetadata, NodeType
from chakra_core.pipeline._pipeline import load_traces
from chakra_core.trace._attrs import get_int, set_attr
from chakra_core.trace._traceset import MemoryRank, TraceSet, open_traceset
from chakra_core.validation._validate import validate

DATA = Path(__file__).resolve().parents[1] / "plugins" / "chakra-pytorch" / "tests" / "data"
pytest.importorskip("chakra_pytorch")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The every-collective recording as an .et set on disk."""
    out = tmp_path_factory.mktemp("rec")
    load_traces([str(DATA / "collectives")], "pytorch").write(out / "coll")
    return out / "coll"


def _edit(prefix, tmp_path, rank, edit):
    src = open_traceset(str(prefix))
    ranks = []
    for rt in src:
        nodes = list(rt.nodes())
        if rt.rank == rank:
            nodes = edit(nodes)
        ranks.append(MemoryRank(rt.rank, GlobalMetadata(), nodes))
    TraceSet(ranks, process_groups=src.process_groups).write(tmp_path / "t")
    return open_traceset(str(tmp_path / "t"))


def _drop(nodes, victim):
    """Remove ``victim`` and every reference to it."""
    for n in nodes:
        for deps in (n.data_deps, n.ctrl_deps):
            keep = [d for d in deps if d != victim.id]
            del deps[:]
            deps.extend(keep)
    return [n for n in nodes if n is not victim]


def test_recorded_set_is_clean(recorded):
    assert [f for f in validate(open_traceset(str(recorded))) if f.severity == "error"] == []


def test_dropped_collective_breaks_the_order(recorded, tmp_path):
    def edit(nodes):
        return _drop(nodes, next(n for n in nodes if n.type == NodeType.COMM_COLL_NODE))
    f = validate(_edit(recorded, tmp_path, 1, edit))
    assert {x.rule for x in f if x.severity == "error"} <= {"coll-order", "deadlock", "never-reached"}
    assert [x.rank for x in f if x.rule == "coll-order"] == [1]
    assert all(x.node_id is not None for x in f)


def test_changed_size_breaks_the_order(recorded, tmp_path):
    def edit(nodes):
        c = next(n for n in nodes if n.type == NodeType.COMM_COLL_NODE)
        set_attr(c, "comm_size", get_int(c, "comm_size") + 4)
        return nodes
    f = [x for x in validate(_edit(recorded, tmp_path, 0, edit)) if x.severity == "error"]
    assert [x.rule for x in f] == ["coll-order"] and f[0].rank == 1


def test_dropped_receive_leaves_a_send_unmatched(recorded, tmp_path):
    def edit(nodes):
        return _drop(nodes, next(n for n in nodes if n.type == NodeType.COMM_RECV_NODE))
    f = [x for x in validate(_edit(recorded, tmp_path, 1, edit)) if x.severity == "error"]
    assert [x.rule for x in f] == ["unmatched-p2p"] and "without a matching receive on rank 1" in f[0].message


def test_missing_dep_and_cycle_on_a_real_rank(recorded, tmp_path):
    def edit(nodes):
        comp = [n for n in nodes if n.type == NodeType.COMP_NODE and (n.data_deps or n.ctrl_deps)]
        a = comp[5]
        parent = (list(a.data_deps) + list(a.ctrl_deps))[0]
        p = next(n for n in nodes if n.id == parent)
        p.ctrl_deps.append(a.id)  # parent now waits for its child: a cycle
        comp[6].data_deps.append(10**9)
        return nodes
    rules = sorted({x.rule for x in validate(_edit(recorded, tmp_path, 0, edit), cross_rank=False)})
    assert rules == ["cycle", "missing-dep"]


def test_send_without_peer_on_a_real_rank(recorded, tmp_path):
    def edit(nodes):
        send = next(n for n in nodes if n.type == NodeType.COMM_SEND_NODE)
        keep = [a for a in send.attr if a.name != "comm_dst"]
        del send.attr[:]
        send.attr.extend(keep)
        return nodes
    f = validate(_edit(recorded, tmp_path, 0, edit), cross_rank=False)
    assert [x.rule for x in f if x.severity == "error"] == ["p2p-attrs"]


@pytest.mark.parametrize("kind,key", [(NodeType.COMM_SEND_NODE, "comm_src"), (NodeType.COMM_RECV_NODE, "comm_dst")])
def test_own_endpoint_of_another_rank(recorded, tmp_path, kind, key):
    # rank 1's send claims comm_src 0 (its receive comm_dst 0): what resize_dp once wrote for
    # the copies of a recorded rank
    def edit(nodes):
        node = next(n for n in nodes if n.type == kind)
        assert get_int(node, key) == 1
        set_attr(node, key, 0)
        return nodes
    f = [x for x in validate(_edit(recorded, tmp_path, 1, edit)) if x.severity == "error"]
    assert [(x.rule, x.rank) for x in f] == [("own-endpoint", 1)]
    assert f"{key} = 0" in f[0].message


def test_one_rank_of_the_recording_alone_is_said_to_be_part_of_a_job(recorded, tmp_path, chakra_cli):
    """Rank 1 of the 2-rank recording, alone: it validates (the cross-rank rules cannot see rank
    0) with one warning saying so, and the simulator's refusal says what the set is."""
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "trace.1.et").write_bytes(Path(f"{recorded}.1.et").read_bytes())
    findings = validate(open_traceset(str(alone)))
    assert [(f.rule, f.severity, f.rank) for f in findings] == [("partial-set", "warning", 1)]
    assert "holds rank 1 only, but its process groups name 1 other rank(s), up to rank 0" in findings[0].message
    status, out, _ = chakra_cli("validate", alone)
    assert status == 0 and "OK: 1 rank(s), 0 error(s), 1 warning(s)" in out
    assert not validate(open_traceset(str(recorded)))  # both ranks: nothing to say
    (alone / "trace.1.et").unlink()
    (alone / "trace.0.et").write_bytes(Path(f"{recorded}.0.et").read_bytes())
    status, _, err = chakra_cli("simulate", alone)
    assert status == 2 and "names rank 1 but there are ranks 0 to 0 (the set looks like part of a job of 2 or more " \
        "ranks: give every rank's file)" in err, err
