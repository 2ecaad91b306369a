"""What validation says and where: a long deadlock says how many ranks it leaves out, a bad peer
which limit it breaks, a bad process-group description what is wrong with it; ``--json`` prints
only documented keys; ``--no-cross-rank`` keeps the rules of the set's process groups."""

from __future__ import annotations

import json
from pathlib import Path

from chakra_core.io._schema import CommType, GlobalMetadata, Node, NodeType
from chakra_core.trace._attrs import make_attr, set_attr
from chakra_core.trace._traceset import MemoryRank, TraceSet
from chakra_core.validation._validate import validate

DOCS = Path(__file__).resolve().parents[1] / "docs" / "validation.md"


def _p2p(i, send, peer, deps=()):
    n = Node(id=i, name=f"{'send' if send else 'recv'}{i}",
             type=NodeType.COMM_SEND_NODE if send else NodeType.COMM_RECV_NODE, data_deps=list(deps))
    set_attr(n, "comm_dst" if send else "comm_src", peer)
    set_attr(n, "comm_tag", 0)
    set_attr(n, "comm_size", 64)
    return n


def _allreduce(pg):
    n = Node(id=1, name="allreduce", type=NodeType.COMM_COLL_NODE)
    set_attr(n, "comm_type", int(CommType.ALL_REDUCE))
    set_attr(n, "comm_size", 1024)
    set_attr(n, "pg_name", pg)
    return n


def _messages(traces):
    return [(f.rule, f.message) for f in validate(traces)]


def test_a_long_deadlock_names_eight_ranks_and_how_many_more():
    # 20 ranks in a ring, each receiving from the previous one before it sends to the next
    ring = TraceSet([MemoryRank(r, GlobalMetadata(), [_p2p(1, False, (r - 1) % 20), _p2p(2, True, (r + 1) % 20, [1])])
                     for r in range(20)])
    (rule, message), = _messages(ring)
    assert rule == "deadlock"
    assert message.startswith("ranks 0, 1, 2, 3, 4, 5, 6, 7 and 12 more wait on each other: rank 0 node 1 ")


def test_a_bad_peer_says_which_limit():
    one = TraceSet([MemoryRank(0, GlobalMetadata(), [_p2p(1, True, -3), _p2p(2, True, 0), _p2p(3, False, 0)])])
    assert _messages(one) == [("bad-peer", "comm_dst = -3, a negative rank"),
                              ("bad-peer", "comm_dst = 0, a send to its own rank"),
                              ("bad-peer", "comm_src = 0, a receive from its own rank")]


def _described(text):
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.append(make_attr("process_groups", text))
    return TraceSet([MemoryRank(r, meta, [_allreduce("A")]) for r in range(2)])


def test_a_bad_description_says_what_is_wrong():
    assert _messages(_described("{not json")) == [
        ("pg-unparseable", "bad process-group description: not JSON (line 1, column 2: Expecting property name "
                           "enclosed in double quotes)")]
    for text in ('[{"pg_name": "A"}]', '{"pg_name": "A", "ranks": [0, 1]}', '[{"pg_name": "A", "ranks": [1e999]}]'):
        assert _messages(_described(text)) == [
            ("pg-unparseable", 'bad process-group description: not a list of {"pg_name": NAME, "ranks": '
                               "[whole numbers]} objects")], text


def test_json_prints_the_documented_keys(tmp_path, chakra_cli):
    TraceSet([MemoryRank(0, GlobalMetadata(), [_p2p(1, True, 0)])]).write(tmp_path / "t")
    status, out, _ = chakra_cli("validate", tmp_path, "--json")
    assert status == 2
    described = DOCS.read_text().split("`--json` prints", 1)[1].split("`involved`", 1)[0]
    keys = list(json.loads(out))
    assert keys == ["ok", "ranks", "errors", "warnings", "findings", "provenance"]
    assert [k for k in keys if f'"{k}"' not in described] == []


def test_no_cross_rank_keeps_the_rules_of_the_groups(tmp_path, chakra_cli):
    # rank 0 of a job of 3 alone: partial-set; two ranks on a group the set does not define:
    # pg-undefined (coll-order, which compares ranks, is skipped)
    TraceSet([MemoryRank(0, GlobalMetadata(), [_allreduce("A")])], {"A": [0, 1, 2]}).write(tmp_path / "one" / "t")
    status, out, _ = chakra_cli("validate", "--no-cross-rank", tmp_path / "one")
    assert status == 0 and "warning: [partial-set] the set holds rank 0 only" in out
    two = TraceSet([MemoryRank(0, GlobalMetadata(), [_allreduce("B")]), MemoryRank(1, GlobalMetadata(), [])])
    assert [(f.rule, f.rank) for f in validate(two, cross_rank=False)] == [("empty-rank", 1), ("pg-undefined", 0)]
