"""Each validation rule caught on a small trace that breaks it; correct traces pass.

The traces are the 2-rank data-parallel set of conftest.py written through the wire format and
read back, each broken in one place.
"""

from __future__ import annotations

import pytest

from chakra_core.io._schema import CommType, GlobalMetadata, Node
from chakra_core.trace._attrs import set_attr
from chakra_core.trace._traceset import MemoryRank, TraceSet
from chakra_core.validation._validate import validate


def _broken(tmp_path, chakra_roundtrip, dp_set, rank, edit):
    ranks = []
    for rt in dp_set:
        nodes = [Node.FromString(n.SerializeToString()) for n in rt.nodes()]
        if rt.rank == rank:
            out = edit(nodes)
            nodes = nodes if out is None else out
        ranks.append(MemoryRank(rt.rank, GlobalMetadata(version="0.0.4"), nodes))
    return chakra_roundtrip(TraceSet(ranks, process_groups=dp_set.process_groups), tmp_path)


def _rules(findings):
    return sorted({(f.rule, f.rank) for f in findings if f.severity == "error"})


def _by_name(nodes, name):
    return next(n for n in nodes if n.name == name)


def test_correct_set_passes(tmp_path, chakra_roundtrip, dp_set):
    assert validate(chakra_roundtrip(dp_set, tmp_path)) == []


def test_golden_trace_reports_its_invalid_node(golden_path):
    from chakra_core.trace._traceset import open_traceset

    f = validate(open_traceset(golden_path))
    # one rank of a 2-rank job (its groups name rank 1): the warning says it is checked alone
    assert [(x.rule, x.node_id) for x in f] == [("invalid-type", 9), ("partial-set", None)]


def test_duplicate_id(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        nodes[2].id = nodes[1].id
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 0, edit))
    assert ("duplicate-id", 0) in _rules(f)
    assert next(x for x in f if x.rule == "duplicate-id").node_id == 2


def test_missing_dep(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        nodes[4].data_deps.append(999)
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 1, edit))
    assert _rules(f) == [("missing-dep", 1)]
    assert "999" in f[0].message and f[0].node_id == 5 and f[0].file.endswith("trace.1.et")


def test_cycle_prints_its_ids(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        nodes[0].ctrl_deps.append(3)  # fwd_0 <- fwd_2 <- fwd_1 <- fwd_0
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 0, edit))
    cyc = next(x for x in f if x.rule == "cycle")
    assert set(map(int, cyc.message.split(": ")[1].split(" -> "))) == {1, 2, 3}


def test_collective_without_comm_type(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        n = _by_name(nodes, "allreduce_1")
        keep = [a for a in n.attr if a.name != "comm_type"]
        del n.attr[:]
        n.attr.extend(keep)
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 0, edit))
    assert ("coll-attrs", 0) in _rules(f)


def test_send_without_tag(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        n = _by_name(nodes, "send")
        keep = [a for a in n.attr if a.name != "comm_tag"]
        del n.attr[:]
        n.attr.extend(keep)
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 0, edit))
    assert ("p2p-attrs", 0) in _rules(f)
    assert "comm_tag" in next(x for x in f if x.rule == "p2p-attrs").message


def test_negative_and_absurd_sizes(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        set_attr(_by_name(nodes, "allreduce_0"), "comm_size", -4)
        set_attr(_by_name(nodes, "fwd_0"), "tensor_size", 1 << 60)
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 1, edit))
    bad = [x for x in f if x.rule == "bad-size"]
    assert len(bad) == 1  # fwd_0 is a compute node: only comm/memory sizes are checked
    assert "-4" in bad[0].message


def test_bad_peer(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        set_attr(_by_name(nodes, "send"), "comm_dst", 5)
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 0, edit))
    assert ("bad-peer", 0) in _rules(f)


def test_collective_order_differs(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        set_attr(_by_name(nodes, "allreduce_1"), "comm_type", int(CommType.ALL_GATHER))
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 1, edit))
    assert _rules(f) == [("coll-order", 1)]
    assert "collective #2" in f[0].message and "ALL_GATHER" in f[0].message


def test_collective_size_differs(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        set_attr(_by_name(nodes, "allreduce_0"), "comm_size", 1)
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 1, edit))
    assert _rules(f) == [("coll-order", 1)]


@pytest.mark.parametrize("second, rules", [(1, []), (None, [("coll-order", 1)])])
def test_a_size_named_twice_is_read_as_its_first(tmp_path, chakra_roundtrip, dp_set, second, rules):
    """A collective of rank 1 naming ``comm_size`` twice, its own size then 1: read as the first,
    as ``get_attr``, the columns and the simulator read it (the last won here, a false
    ``coll-order``); the same size 1 written first is still a mismatch."""
    def edit(nodes):
        n = _by_name(nodes, "allreduce_0")
        size = next(a for a in n.attr if a.name == "comm_size").int64_val
        if second is None:  # 1 first, then its own size
            del n.attr[[a.name for a in n.attr].index("comm_size")]
            n.attr.add(name="comm_size", int64_val=1)
            n.attr.add(name="comm_size", int64_val=size)
        else:
            n.attr.add(name="comm_size", int64_val=second)
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 1, edit))
    assert _rules(f) == rules


def test_collective_count_differs(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        return [n for n in nodes if n.name != "allreduce_0"]
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 0, edit))
    # rank 1's third all-reduce (node 9) has no partner on rank 0: the finding names it; rank 1
    # then holds its communication slot there while rank 0 waits for rank 1's send (a deadlock)
    assert [(x.rule, x.rank, x.node_id) for x in f] == [("coll-order", 1, 9), ("deadlock", 0, 11)]
    assert "3 collectives" in f[0].message and "rank 0 issues 2" in f[0].message
    assert f[1].involved == [(0, 11), (1, 9)]


def test_collective_on_group_without_membership(tmp_path, chakra_roundtrip, dp_set):
    ts = TraceSet(list(dp_set), process_groups={"1": [0]})

    def edit(nodes):
        set_attr(_by_name(nodes, "allreduce_0"), "pg_name", "1")
    f = validate(_broken(tmp_path, chakra_roundtrip, ts, 1, edit))
    assert ("coll-not-member", 1) in _rules(f)


def test_unmatched_send(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        return [n for n in nodes if n.name != "recv"]
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 1, edit))
    assert _rules(f) == [("unmatched-p2p", 0)]
    assert "without a matching receive on rank 1" in f[0].message


def test_empty_rank_is_a_warning(tmp_path, chakra_roundtrip, dp_set):
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 1, lambda nodes: []), cross_rank=False)
    assert [(x.rule, x.severity) for x in f] == [("empty-rank", "warning")]


@pytest.mark.parametrize("typ, rule, severity", [(0, "invalid-type", "error"), (12, "unknown-type", "warning"),
                                                 (255, "unknown-type", "warning")])
def test_invalid_or_unknown_type(tmp_path, chakra_roundtrip, dp_set, typ, rule, severity):
    # a type number beyond our enum is a newer schema's node type: kept, warned about
    def edit(nodes):
        nodes[0].type = typ
        return nodes
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 0, edit), cross_rank=False)
    assert [(x.rule, x.rank, x.severity) for x in f] == [(rule, 0, severity)]


def test_cli_validate_exit_status_and_json(tmp_path, chakra_roundtrip, dp_set, chakra_cli):
    import json

    def edit(nodes):
        nodes[4].data_deps.append(999)
    _broken(tmp_path, chakra_roundtrip, dp_set, 1, edit)
    status, out, _ = chakra_cli("validate", tmp_path / "trace", "--json")
    doc = json.loads(out)
    assert status == 2 and doc["ok"] is False and doc["findings"][0]["rule"] == "missing-dep"


def test_many_findings_are_summarised_and_counted(tmp_path, chakra_roundtrip, dp_set, chakra_cli):
    import json

    def edit(nodes):
        for n in nodes[1:]:
            n.data_deps.append(999999)
    _broken(tmp_path, chakra_roundtrip, dp_set, 0, edit)
    status, out, _ = chakra_cli("validate", tmp_path / "trace", "--json")
    doc = json.loads(out)
    assert status == 2 and doc["errors"] == 10  # 10 nodes after the first
    edit_many = [n for n in dp_set[0].nodes()] * 3  # 33 nodes, ids repeated: 22 duplicate-id findings
    from chakra_core.trace._traceset import MemoryRank, TraceSet
    f = validate(TraceSet([MemoryRank(0, GlobalMetadata(), edit_many)]), cross_rank=False)
    dup = [x for x in f if x.rule == "duplicate-id"]
    assert len(dup) == 21 and dup[-1].count == 2 and sum(x.count for x in dup) == 22
    assert dup[-1].message == "2 more 'duplicate-id' finding(s) in this file not shown"


def test_group_naming_ranks_outside_the_set(dp_set):
    for members, shown in (([0, 5], "rank 5"), ([-1, 0], "rank -1"), ([0, 1, 1], "rank 1 twice")):
        f = validate(TraceSet(list(dp_set), process_groups={"1": members}))
        assert [(x.rule, x.node_id) for x in f] == [("pg-bad-rank", None)]
        assert "process group '1'" in f[0].message and shown in f[0].message


def test_collective_on_an_undefined_group(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        set_attr(_by_name(nodes, "allreduce_0"), "pg_name", "7")
    ts = _broken(tmp_path, chakra_roundtrip, dp_set, 0, edit)
    f = [x for x in validate(ts) if x.rule == "pg-undefined"]
    assert [(x.rank, x.node_id) for x in f] == [(0, 9)]  # allreduce_0 is node 9
    assert "process group '7', which the set does not define" in f[0].message


@pytest.mark.parametrize("text", ["[{", '{"pg_name": "1"}', '[{"pg_name": "1", "ranks": ["x"]}]'])
def test_unparseable_process_groups(dp_set, text):
    from chakra_core.trace._attrs import make_attr

    meta = GlobalMetadata(version="0.0.4")
    meta.attr.append(make_attr("process_groups", text))
    ts = TraceSet([MemoryRank(rt.rank, meta, list(rt.nodes())) for rt in dp_set])
    f = validate(ts)
    assert [(x.rule, x.file) for x in f] == [("pg-unparseable", "rank 0")]
    assert "bad process-group description" in f[0].message


def test_absurd_durations(dp_set):
    nodes = list(dp_set[0].nodes())
    nodes[0].duration_micros = 1 << 62
    f = validate(TraceSet([MemoryRank(0, GlobalMetadata(), nodes)]), cross_rank=False)
    assert [(x.rule, x.node_id) for x in f] == [("bad-duration", 1), ("bad-duration", 1)]
    assert "more than 2^40 us" in f[0].message and "add up to more than 2^50 us" in f[1].message
    # 1025 nodes of exactly 2^40 us each are allowed one by one; their sum passes 2^50 at node 1025
    chain = [Node(id=i, name="c", type=4, duration_micros=1 << 40) for i in range(1, 1026)]
    f = validate(TraceSet([MemoryRank(0, GlobalMetadata(), chain)]), cross_rank=False)
    assert [(x.rule, x.node_id) for x in f] == [("bad-duration", 1025)]


def test_negative_comm_size(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        set_attr(_by_name(nodes, "allreduce_0"), "comm_size", -1)
    ts = _broken(tmp_path, chakra_roundtrip, dp_set, 0, edit)
    f = [x for x in validate(ts) if x.rule == "bad-size"]
    assert [(x.rank, x.node_id, x.message) for x in f] == [(0, 9, "comm_size = -1 bytes")]


def test_every_finding_of_a_node_rule_names_its_node(tmp_path, chakra_roundtrip, dp_set):
    def edit(nodes):
        nodes[0].type = 0
        nodes[1].duration_micros = 1 << 41
        set_attr(_by_name(nodes, "send"), "comm_dst", 9)
        return [n for n in nodes if n.name != "allreduce_2"]
    f = validate(_broken(tmp_path, chakra_roundtrip, dp_set, 0, edit))
    assert {x.rule for x in f} >= {"invalid-type", "bad-duration", "bad-peer", "coll-order"}
    assert all(x.node_id is not None for x in f)


def test_every_rule_is_documented():
    from pathlib import Path

    from chakra_core.validation._validate import RULES

    page = (Path(__file__).resolve().parents[1] / "docs" / "validation.md").read_text()
    assert [r for r in RULES if f"| `{r}`" not in page] == []
