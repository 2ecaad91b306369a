"""Integers past int64 (a ``uint64_val`` of 2**63 or more) in the attributes validation reads,
and sizes in a slot of another kind: each is a one-line finding, the same on the per-node path
and by the compiled loops (which leave such a rank to the per-node path), never an internal
error; the set goes on to the rules after it (the deadlock search included)."""

from __future__ import annotations

import pytest

from chakra_core.io._schema import CommType, GlobalMetadata, Node, NodeType
from chakra_core.trace._attrs import make_attr
from chakra_core.trace._traceset import MemoryRank, TraceSet, open_traceset
from chakra_core.validation._validate import validate_as

pytest.importorskip("numba")

U64_MAX = (1 << 64) - 1


def _coll(i, size=1024, size_slot=None, deps=()):
    n = Node(id=i, name=f"allreduce{i}", type=NodeType.COMM_COLL_NODE)
    n.attr.extend([make_attr("comm_type", int(CommType.ALL_REDUCE)), make_attr("comm_size", size, size_slot)])
    n.data_deps.extend(deps)
    return n


def _p2p(i, send, peer, tag=0, size=64, deps=(), wide=()):
    """A send or receive; the attributes named in ``wide`` are written as ``uint64_val``, the
    others as ``int64_val``."""
    n = Node(id=i, name=f"{'send' if send else 'recv'}{i}",
             type=NodeType.COMM_SEND_NODE if send else NodeType.COMM_RECV_NODE)
    values = {"comm_dst" if send else "comm_src": peer, "comm_tag": tag, "comm_size": size}
    n.attr.extend(make_attr(k, v, "uint64_val" if k in wide else "int64_val") for k, v in values.items())
    n.data_deps.extend(deps)
    return n


def _found(tmp_path, per_rank):
    """The findings of the set as (rule, rank, node id, message), the same both ways."""
    TraceSet([MemoryRank(r, GlobalMetadata(), nodes) for r, nodes in enumerate(per_rank)]).write(tmp_path / "t")
    plain = validate_as(open_traceset(str(tmp_path)), False)
    assert [str(f) for f in validate_as(open_traceset(str(tmp_path)), True)] == [str(f) for f in plain]
    return [(f.rule, f.rank, f.node_id, f.message) for f in plain]


def test_a_tag_past_int64_is_a_p2p_attrs_finding(tmp_path):
    found = _found(tmp_path, [[_p2p(1, True, 1, tag=U64_MAX, wide=("comm_tag",))],
                              [_p2p(1, False, 0, tag=U64_MAX, wide=("comm_tag",))]])
    says = f"comm_tag = {U64_MAX} does not fit int64 (ASTRA-sim reads 32 bits)"
    assert found == [("p2p-attrs", 0, 1, says), ("p2p-attrs", 1, 1, says)]


def test_a_tag_of_2_63_is_not_the_int64_tag_of_the_same_bits(tmp_path):
    found = _found(tmp_path, [[_p2p(1, True, 1, tag=1 << 63, wide=("comm_tag",))],
                              [_p2p(1, False, 0, tag=-(1 << 63))]])
    assert [(rule, rank) for rule, rank, _, _ in found] == [("p2p-attrs", 0), ("unmatched-p2p", 1)]


def test_a_collective_size_past_int64_is_bad_size(tmp_path):
    found = _found(tmp_path, [[_coll(1, U64_MAX, "uint64_val")], [_coll(1, U64_MAX, "uint64_val")]])
    says = f"comm_size = {U64_MAX} bytes"
    assert found == [("bad-size", 0, 1, says), ("bad-size", 1, 1, says)]


def test_message_sizes_past_int64_still_meet_in_the_deadlock_search(tmp_path):
    # each rank receives (a size past int64) before it sends: the search, which runs after
    # bad-size, pairs the messages by their sizes and finds the cycle
    def rank(peer):
        return [_p2p(1, False, peer, size=U64_MAX, wide=("comm_size",)),
                _p2p(2, True, peer, size=U64_MAX, deps=[1], wide=("comm_size",))]

    found = _found(tmp_path, [rank(1), rank(0)])
    assert [(rule, rank, nid) for rule, rank, nid, _ in found] == [
        ("bad-size", 0, 1), ("bad-size", 0, 2), ("bad-size", 1, 1), ("bad-size", 1, 2), ("deadlock", 0, 1)]


def test_a_peer_past_the_rank_limit_in_a_single_file(tmp_path):
    found = _found(tmp_path, [[_p2p(1, True, U64_MAX, wide=("comm_dst",))]])
    assert [(rule, rank, nid) for rule, rank, nid, _ in found] == [("bad-peer", 0, 1)]
    assert found[0][3].startswith(f"comm_dst {U64_MAX} exceeds the limit of 1048575 (highest rank number")
    assert "CHAKRA_MAX_RANK" in found[0][3]


@pytest.mark.parametrize("wide", ["comm_tag", "comm_size"])
def test_the_cli_says_it_in_one_line_each_and_exits_2(tmp_path, chakra_cli, wide):
    value = {"comm_tag": 1 << 63, "comm_size": 1 << 63}[wide]
    per_rank = [[_p2p(1, True, 1, **{wide[5:]: value}, wide=(wide,))],
                [_p2p(1, False, 0, **{wide[5:]: value}, wide=(wide,))]]
    TraceSet([MemoryRank(r, GlobalMetadata(), nodes) for r, nodes in enumerate(per_rank)]).write(tmp_path / "t")
    status, out, err = chakra_cli("validate", tmp_path)
    assert status == 2 and "internal error" not in err
    assert [line.split(": ", 2)[1] for line in out.splitlines()] == ["error", "error"]
    assert err.strip() == "FAILED: 2 rank(s), 2 error(s), 0 warning(s)"


def test_a_size_in_a_double_slot_is_named_and_not_reported_again_by_coll_order(tmp_path):
    found = _found(tmp_path, [[_coll(1, 1024.0, "double_val"), _coll(2, deps=[1])], [_coll(1), _coll(2, deps=[1])]])
    assert found == [("coll-attrs", 0, 1, "collective without an integer comm_size (its value is a double_val)")]


def test_a_missing_size_keeps_the_collective_s_place_in_its_group(tmp_path):
    # rank 0's first all-reduce has no size: its second still pairs with rank 1's second, whose
    # size differs (the one coll-order finding)
    missing = Node(id=1, name="allreduce1", type=NodeType.COMM_COLL_NODE)
    missing.attr.append(make_attr("comm_type", int(CommType.ALL_REDUCE)))
    found = _found(tmp_path, [[missing, _coll(2, 512, deps=[1])], [_coll(1), _coll(2, deps=[1])]])
    assert [(rule, rank, nid) for rule, rank, nid, _ in found] == [("coll-attrs", 0, 1), ("coll-order", 1, 2)]
    assert found[1][3] == ("collective #2 on the default group (all ranks) is ALL_REDUCE of 1024 bytes (node 2) "
                           "but rank 0 issues ALL_REDUCE of 512 bytes (node 2)")
