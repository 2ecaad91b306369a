"""The orders of the deadlock search against the simpy simulator: a broadcast with a duration,
which neither matches with another rank's collective, and a send and a collective that race for
a rank's one stream (``may-deadlock``: the reference order finishes, the order with late
messages, as the lengths of transfers make them, is stuck, and so is the simulator).  Each set
is hand-made (the last one as a random search found it); each is validated both ways (the
per-node path and the compiled loops, from ``.et`` files) with the same findings.
"""

from __future__ import annotations

import pytest

from chakra_core.base._errors import ChakraError
from chakra_core.host._plugins import get_host
from chakra_core.io._schema import CommType, GlobalMetadata, Node, NodeType
from chakra_core.trace._attrs import set_attr
from chakra_core.trace._traceset import MemoryRank, TraceSet, open_traceset
from chakra_core.validation._validate import validate_as

pytest.importorskip("numba")
pytest.importorskip("chakra_simpy")

BCAST, ALLREDUCE = int(CommType.BROADCAST), int(CommType.ALL_REDUCE)


def coll(i, pg=None, deps=(), ct=ALLREDUCE, size=1024, us=0):
    n = Node(id=i, name=f"coll{i}", type=NodeType.COMM_COLL_NODE, duration_micros=us, data_deps=list(deps))
    set_attr(n, "comm_type", ct)
    set_attr(n, "comm_size", size)
    if pg is not None:
        set_attr(n, "pg_name", pg)
    return n


def p2p(i, send, peer, deps=(), tag=0):
    n = Node(id=i, name=f"{'send' if send else 'recv'}{i}",
             type=NodeType.COMM_SEND_NODE if send else NodeType.COMM_RECV_NODE, data_deps=list(deps))
    set_attr(n, "comm_dst" if send else "comm_src", peer)
    set_attr(n, "comm_tag", tag)
    set_attr(n, "comm_size", 64)
    return n


def _written(tmp_path, per_rank, groups=None):
    TraceSet([MemoryRank(r, GlobalMetadata(), nodes) for r, nodes in enumerate(per_rank)], groups).write(tmp_path / "t")
    return str(tmp_path)


def _found(path):
    """The findings as (rule, severity, rank, node id), the same both ways; and their messages."""
    plain = validate_as(open_traceset(path), False)
    assert [str(f) for f in validate_as(open_traceset(path), True)] == [str(f) for f in plain]
    return [(f.rule, f.severity, f.rank, f.node_id) for f in plain], plain


def _simulated(path):
    """The simpy simulator's error on the set (None: it finishes)."""
    backend = get_host().registry.get("backend", "simpy")
    try:
        backend.run(open_traceset(path), backend.check_options({}), None)
    except ChakraError as e:
        return str(e)
    return None


def test_timed_broadcasts_are_left_out_of_the_collective_order(tmp_path):
    # rank 0: a timed broadcast of 100 B, then an untimed one of 200 B; rank 1 the other way round:
    # the matched ones are 200 B on rank 0 and 100 B on rank 1
    path = _written(tmp_path, [[coll(1, ct=BCAST, size=100, us=3), coll(2, deps=[1], ct=BCAST, size=200)],
                               [coll(1, ct=BCAST, size=100), coll(2, deps=[1], ct=BCAST, size=200, us=3)]])
    found, findings = _found(path)
    assert found == [("coll-order", "error", 1, 1)]
    assert findings[0].message == ("collective #1 on the default group (all ranks) is BROADCAST of 100 bytes (node 1) "
                                   "but rank 0 issues BROADCAST of 200 bytes (node 2)")
    assert "differs across ranks" in _simulated(path)


def test_a_timed_broadcast_on_one_rank_only_is_no_mismatch(tmp_path):
    path = _written(tmp_path, [[coll(1, ct=BCAST, us=3), coll(2, deps=[1])], [coll(1)]])
    assert _found(path)[0] == []
    assert _simulated(path) is None


def test_a_send_behind_a_receive_races_a_collective_ready_at_once(tmp_path):
    # rank 1's send to rank 2 waits for rank 0's message; its all-reduce on A is ready at once,
    # takes the stream while the message travels and waits for rank 2, which waits for the send
    path = _written(tmp_path, [[p2p(1, True, 1)],
                               [p2p(1, False, 0), p2p(2, True, 2, [1]), coll(3, "A")],
                               [p2p(1, False, 1), coll(2, "A", [1])]], {"A": [1, 2]})
    found, findings = _found(path)
    assert found == [("may-deadlock", "warning", 1, 3)]
    assert findings[0].involved == [(1, 3), (2, 1)]
    assert findings[0].message.startswith(
        "ranks 1, 2 wait on each other: rank 1 node 3 (ALL_REDUCE #1 on group 'A') waits for rank 2; rank 2 node 1 "
        "(receive from rank 1, tag 0, 64 bytes) waits for rank 1 (with each message arriving only after the ranks "
        "have done what they can without it, as the lengths of transfers can make it; the set finishes with "
        "messages at once: whether the simulator finishes depends on timing)")
    assert "deadlock" in _simulated(path)


def test_a_send_holds_the_stream_until_its_message_arrives(tmp_path):
    # rank 0's send1 holds its stream for the transfer; meanwhile rank 1 takes its stream for the
    # broadcast on B; then rank 0 issues the all-reduce on A (the lower id) before its broadcast
    def rank(first_send):
        peer = 1 if first_send else 0
        return [p2p(1, first_send, peer, tag=1), coll(2, "A", [1]), p2p(3, not first_send, peer, [] if first_send
                                                                         else [2], tag=1), coll(4, "B", ct=BCAST)]

    path = _written(tmp_path, [rank(True), rank(False)], {"A": [0, 1], "B": [0, 1]})
    found, findings = _found(path)
    assert found == [("may-deadlock", "warning", 0, 2)]
    assert findings[0].message.startswith("ranks 0, 1 wait on each other: rank 0 node 2 (ALL_REDUCE #1 on group 'A') "
                                          "waits for rank 1; rank 1 node 4 (BROADCAST #1 on group 'B') waits for rank 0")
    assert "deadlock" in _simulated(path)


def test_the_cli_warns_and_passes(tmp_path, chakra_cli):
    path = _written(tmp_path, [[p2p(1, True, 1)],
                               [p2p(1, False, 0), p2p(2, True, 2, [1]), coll(3, "A")],
                               [p2p(1, False, 1), coll(2, "A", [1])]], {"A": [1, 2]})
    status, out, _ = chakra_cli("validate", path)
    assert status == 0
    assert out.splitlines()[-1] == "OK: 3 rank(s), 0 error(s), 1 warning(s)"
