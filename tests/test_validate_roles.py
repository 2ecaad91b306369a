"""Validation scans one rank per role: the other ranks of a role get its record relabelled, and
every finding is still reported by the scan of its own rank.

Inputs: the text models converted at 16 NPUs (one role whose ranks name their own groups), and
hand-built rings of sends and receives with a group per pair of ranks (one role; a rank whose
peer lies outside the set differs from the others only by that label).
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest

from chakra_core import GlobalMetadata, Node, NodeType, add_attr, get_int
from chakra_core.pipeline._pipeline import load_traces
from chakra_core.trace import _roles
from chakra_core.trace._traceset import MemoryRank, TraceSet, open_traceset
from chakra_core.validation import _colscan, _roleshare
from chakra_core.validation import _validate as V

ROOT = Path(__file__).resolve().parents[1]
_RECORD = ("colls", "sends", "recvs", "total_us", "saw_group_node", "skel_ids", "skel_kinds", "skel_a", "skel_tag",
           "skel_size")


def _records(traces, monkeypatch, shared):
    """Each rank's RankCheck and skeleton, the group names in number order, and how many ranks
    were scanned (the others derived)."""
    scanned = Counter()
    for mod, name in ((_colscan, "scan_columns"), (V, "scan_rank")):
        real = getattr(mod, name)

        def counted(*args, _real=real, _name=name):
            scanned[_name] += 1
            return _real(*args)

        monkeypatch.setattr(mod, name, counted)
    if not shared:
        monkeypatch.setattr(_roleshare.RoleShare, "key", lambda self, rt: None)
    pg_names = [""]
    add = V._Collector()
    checks, skels = V._check_ranks(traces, add, pg_names, None)
    monkeypatch.undo()
    return checks, skels, pg_names, add.findings, scanned["scan_columns"]


def _same_both_ways(traces, monkeypatch):
    """The records with and without sharing; the number of ranks scanned with it."""
    a_checks, a_skels, a_names, a_found, scanned = _records(traces, monkeypatch, True)
    b_checks, b_skels, b_names, b_found, all_scanned = _records(traces, monkeypatch, False)
    assert all_scanned == len(traces)
    assert a_names == b_names and a_found == b_found
    for r in traces.ranks:
        for f in _RECORD:
            assert getattr(a_checks[r], f) == getattr(b_checks[r], f), (r, f)
        assert list(a_checks[r].colls) == list(b_checks[r].colls)
        assert a_skels[r] == b_skels[r]
    return scanned


@pytest.mark.parametrize("model", ["gpt3_like", "dlrm_like", "resnet50_like"])
def test_text_models_scan_one_rank_per_role(model, tmp_path, monkeypatch):
    load_traces(str(ROOT / "examples" / "text" / f"{model}.txt"), options={"npus": 16}).write(tmp_path / "t")
    traces = open_traceset(str(tmp_path / "t"))
    assert _same_both_ways(traces, monkeypatch) == 1
    assert V.validate(traces) == []


def _node(i, kind, *attrs):
    n = Node(id=i, name=f"n{i}", type=kind)
    if i > 1:
        n.data_deps.append(i - 1)
    for name, value in attrs:
        add_attr(n, name, value)
    return n


def _ring(tmp_path, n, far=None, distinct=False):
    """A ring of ``n`` ranks written as files: an all-reduce on the rank's pair (of 64 bytes, or
    64 + the rank with ``distinct``), a send to the next rank (rank ``far`` sends to rank
    ``n + 3`` instead), a receive from the previous one."""
    ranks = []
    for r in range(n):
        dst = n + 3 if r == far else (r + 1) % n
        size = 64 + r if distinct else 64
        ranks.append(MemoryRank(r, GlobalMetadata(version="0.0.4"), [
            _node(1, NodeType.COMM_COLL_NODE, ("comm_type", 0), ("comm_size", size), ("pg_name", f"pair{r // 2}")),
            _node(2, NodeType.COMM_SEND_NODE, ("comm_dst", dst), ("comm_tag", 7), ("comm_size", 8)),
            _node(3, NodeType.COMM_RECV_NODE, ("comm_src", (r - 1) % n), ("comm_tag", 7), ("comm_size", 8)),
        ]))
    groups = {f"pair{k}": [2 * k, 2 * k + 1] for k in range(n // 2)}
    TraceSet(ranks, groups).write(tmp_path / "ring")
    return open_traceset(str(tmp_path / "ring"))


def test_ring_is_scanned_once_with_relabelled_peers_and_groups(tmp_path, monkeypatch):
    traces = _ring(tmp_path, 8)
    assert _same_both_ways(traces, monkeypatch) == 1
    assert V.validate(traces) == []


def test_rank_whose_peer_is_outside_the_set_is_scanned_and_reported(tmp_path, monkeypatch):
    traces = _ring(tmp_path, 8, far=5)
    assert _same_both_ways(traces, monkeypatch) == 2  # the representative and rank 5
    found = [(f.rule, f.rank, f.node_id) for f in V.validate(traces)]
    assert ("bad-peer", 5, 2) in found
    assert [f.message for f in V.validate(traces) if f.rule == "bad-peer"] == ["comm_dst = 11 (rank 5 of 8)"]


def test_finding_in_the_first_rank_of_a_role_is_reported_and_not_shared(tmp_path, monkeypatch):
    traces = _ring(tmp_path, 8, far=0)
    scanned = _same_both_ways(traces, monkeypatch)
    assert scanned == 2  # rank 0 (its finding keeps it from standing for its role) and rank 1
    assert [(f.rule, f.rank) for f in V.validate(traces) if f.rule == "bad-peer"] == [("bad-peer", 0)]


def test_keys_taken_on_threads_give_the_same_records(tmp_path, monkeypatch):
    """Validation's role keys taken ahead on three threads (forced: the set is far under the 8 MiB
    from which role_keys uses them by itself), ranks past the trial included: the same records
    and findings as without sharing, and the first rank of the role scanned once."""
    pytest.importorskip("numba")
    monkeypatch.setattr(_roleshare, "TRIAL", 4)
    load_traces(str(ROOT / "examples" / "text" / "gpt3_like.txt"), options={"npus": 16}).write(tmp_path / "t")
    traces = open_traceset(str(tmp_path / "t"))
    taken = []
    real = _roles.role_key

    def on_thread(rt, *a):
        taken.append(threading.current_thread().name)
        return real(rt, *a)

    with monkeypatch.context() as m:
        m.setattr(_roles, "THREADS_FROM", 0)
        m.setattr(_roles, "_usable_cpus", lambda: 3)
        m.setattr(_roles, "role_key", on_thread)
        _roles._KEPT.clear()
        a_checks, a_skels, a_names, a_found, scanned = _records(traces, m, True)
    assert len(taken) == 16 and all(name.startswith("chakra-role-key") for name in taken)
    b_checks, b_skels, b_names, b_found, _ = _records(traces, monkeypatch, False)
    assert scanned == 1 and a_names == b_names and a_found == b_found
    for r in traces.ranks:
        assert all(getattr(a_checks[r], f) == getattr(b_checks[r], f) for f in _RECORD), r
        assert a_skels[r] == b_skels[r]


def test_sharing_goes_off_when_the_first_ranks_share_nothing(tmp_path, monkeypatch):
    traces = _ring(tmp_path, 8, distinct=True)
    keyed = []
    real = _roles.role_key
    monkeypatch.setattr(_roleshare, "TRIAL", 2)
    monkeypatch.setattr(_roles, "role_key", lambda rt, *a: keyed.append(rt.rank) or real(rt, *a))
    assert [(f.rule, f.rank) for f in V.validate(traces)] == [("coll-order", r) for r in (1, 3, 5, 7)]
    assert sorted(keyed) == [0, 1]  # taken ahead on threads: in either order, none past the trial


#: an unknown field of wire type 3 (a group: field 200 holding a varint, then its end), which
#: protobuf reads and keeps; hand-made bytes, as no writer here makes them
_GROUP_FIELD = b"\xc3\x0c\x08\x01\xc4\x0c"


def _p2p(nid: int, send: bool, peer: int, tag: int, group_field: bool = False) -> bytes:
    n = Node(id=nid, name=f"p{nid}", type=NodeType.COMM_SEND_NODE if send else NodeType.COMM_RECV_NODE)
    add_attr(n, "comm_dst" if send else "comm_src", peer)
    add_attr(n, "comm_tag", tag)
    add_attr(n, "comm_size", 64)
    return n.SerializeToString() + (_GROUP_FIELD if group_field else b"")


@pytest.mark.parametrize("compiled", [False, True])
def test_a_send_holding_a_protobuf_group_keeps_its_own_peer(tmp_path, compiled):
    """Ranks 0 and 2 each send to rank 1 in a node holding a protobuf group field, then receive
    from 1 and from 3: a clean set. The role walk left such a node's bytes as they were, so its
    peer went unlabelled, both ranks got one key, and rank 2 was read as rank 0's record
    relabelled: a send to rank 3 and two false findings (or a KeyError)."""
    from chakra_core.io._etio import EtWriter

    ranks = {0: [_p2p(1, True, 1, 0, True), _p2p(2, False, 1, 1)],
             2: [_p2p(1, True, 1, 0, True), _p2p(2, False, 3, 1)],
             1: [_p2p(1, False, 0, 0), _p2p(2, False, 2, 0), _p2p(3, True, 0, 1)],
             3: [_p2p(1, True, 2, 1)]}
    for r, nodes in ranks.items():
        with EtWriter(tmp_path / f"trace.{r}.et", GlobalMetadata(version="0.0.4")) as w:
            for raw in nodes:
                w.write_raw(raw)
    traces = open_traceset(str(tmp_path))
    assert get_int(Node.FromString(ranks[0][0]), "comm_dst") == 1  # protobuf reads the node
    assert V.validate_as(traces, compiled) == []
