"""Per-node validation rules of one rank, and the record of its communication for the set checks.

:class:`RankCheck` is called on every node while the rank streams; it reports node rules
(``invalid-type``, ``unknown-type``, ``unknown-attr``, ``coll-attrs``, ``p2p-attrs``, ``bad-size``,
``bad-peer``, ``own-endpoint``, ``bad-duration``)
and keeps what the cross-rank checks need: collectives per group, sends and receives, and the
rank's skeleton nodes (:mod:`._deadlock`), in compact arrays.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from chakra_core.base._limits import get_limit, limit_message
from chakra_core.io._schema import COMM_TYPE_NAMES, PG_INIT_NAME, AttributeProto, CommType, Node, NodeType
from chakra_core.trace._attrs import int_value
from chakra_core.validation._skelrecord import K_COLL, K_RECV, K_SEND, K_SLOT, Skeleton

__all__ = ["RankCheck", "Call", "ABSURD_BYTES", "MAX_DURATION_US", "MAX_RANK_DURATION_US", "ROOTED", "timed_broadcast"]

ABSURD_BYTES = 1 << 50  # 1 PiB
#: the longest a single node may take (about 12.7 days), in microseconds
MAX_DURATION_US = 1 << 40
#: the most the durations of one rank may add up to (about 35.7 years; 2^60 ns keeps
#: nanosecond sums of a simulator far from the int64 limit)
MAX_RANK_DURATION_US = 1 << 50
#: the collectives with a root (its ``root`` attribute: a global rank, which must be a member)
ROOTED = frozenset((CommType.BROADCAST, CommType.REDUCE, CommType.GATHER, CommType.SCATTER))

_P2P_KEYS: dict[int, tuple[str, ...]] = {
    NodeType.COMM_SEND_NODE: ("comm_dst", "comm_tag", "comm_size"),
    NodeType.COMM_RECV_NODE: ("comm_src", "comm_tag", "comm_size"),
}
_MEM = (NodeType.MEM_LOAD_NODE, NodeType.MEM_STORE_NODE)
#: the integers an int64 column of the skeleton holds
_INT64_END = 1 << 63

#: a collective in its group's sequence: (node id, comm type, comm_size bytes); type and size
#: are None for one whose ``coll-attrs`` finding says they cannot be read
Call = tuple[int, int | None, int | None]


def timed_broadcast(comm_type: int | None, duration_micros: int) -> bool:
    """Whether a collective is a broadcast with a duration: the simulator (as ASTRA-sim) replays
    that duration on the communication stream and matches it with no other rank's collective."""
    return comm_type == CommType.BROADCAST and duration_micros > 0


def _as_int64(v: int) -> int:
    """``v`` (an integer of any slot, below 2**64) as an int64 column of the skeleton holds it:
    past 2**63 - 1, its two's complement.  Only a size past 1 PiB (a ``bad-size`` error already)
    gets there, and it then equals no valid size."""
    return v - (1 << 64) if v >= _INT64_END else v


def _named_size(a: AttributeProto) -> int:
    """Wire size of ``a``'s name and doc string: anything beyond is a value of a kind this
    schema does not know (protobuf keeps it as an unknown field)."""
    return AttributeProto(name=a.name, doc_string=a.doc_string).ByteSize()


def _ints(n: Node) -> dict[str, Any]:
    """The node's integer attributes, its group name under ``_pg``, the name of its first
    attribute of an unknown kind under ``_unknown_kind`` and, under ``_slots``, the slot of each
    attribute whose value is of another known kind (``double_val``: read as absent); of
    attributes with one name, the first (as :func:`chakra_core.get_attr` and the columns read
    them)."""
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for a in n.attr:
        first = a.name not in seen
        seen.add(a.name)
        v = int_value(a)
        if v is not None:
            if first:
                out[a.name] = v
            continue
        slot = a.WhichOneof("value")
        if a.name == "pg_name" and slot == "string_val":
            if first:
                out["_pg"] = a.string_val
        elif slot is None:
            if a.ByteSize() > _named_size(a):
                out.setdefault("_unknown_kind", a.name)
        elif first:
            out.setdefault("_slots", {})[a.name] = slot
    if "pg_name" in out:  # a group name written in an integer slot
        out["_pg"] = str(out.pop("pg_name"))
    return out


def _lacking(a: dict[str, Any], keys: list[str]) -> list[str]:
    """What a node lacks of ``keys`` (attributes absent as integers, of :func:`_ints`' ``a``):
    ``"comm_size"``, or ``"an integer comm_size (its value is a double_val)"`` where the value
    is of another kind."""
    slots = a.get("_slots", {})
    return [f"an integer {k} (its value is a {slots[k]})" if k in slots else k for k in keys]


class RankCheck:
    """Per-node checks of one rank (``__call__`` returns True for a skeleton node).

    ``group_number`` maps a group name ("" = all ranks) to a small integer shared by the set.
    ``max_peer`` is the highest peer rank a send or receive may name: the set's highest rank, or
    for a single file (``nranks`` 0: one rank of a job of unknown size) the ``rank`` limit.
    """

    def __init__(self, rank: int, label: str, nranks: int, add: Callable[..., None],
                 group_number: Callable[[str], int], rank_known: bool = True):
        self.rank, self.label, self.nranks, self.add = rank, label, nranks, add
        self.rank_known = rank_known
        self.group_number = group_number
        self.max_peer = nranks - 1 if nranks > 1 else get_limit("rank")
        self.colls: dict[str, list[Call]] = defaultdict(list)  # pg -> its collectives in issue order
        self.roots: list[tuple[str, int, int, int]] = []  # (pg, id, type, root) of rooted collectives
        self.sends: list[tuple[int, int, int, int]] = []  # (dst, tag, size, id)
        self.recvs: list[tuple[int, int, int, int]] = []  # (src, tag, size, id)
        self.total_us = 0
        self.saw_group_node = False  # a "## process_group:init ##" METADATA node
        self.skel_ids, self.skel_kinds = array("Q"), bytearray()
        self.skel_a, self.skel_tag, self.skel_size = array("q"), array("q"), array("q")

    def _error(self, rule: str, n: Node, message: str) -> None:
        self.add(rule, self.label, n.id, message, rank=self.rank)

    def _skeleton(self, n: Node, kind: int, a: int = 0, tag: int = 0, size: int = 0) -> bool:
        """Add a skeleton node: ``a`` (a peer rank or group number) and ``tag`` are checked to fit
        int64; ``size`` may be a ``bad-size`` past it (see :func:`_as_int64`)."""
        self.skel_ids.append(n.id)
        self.skel_kinds.append(kind)
        self.skel_a.append(a)
        self.skel_tag.append(tag)
        self.skel_size.append(_as_int64(size))
        return True

    def skeleton(self, ptr: array, preds: array) -> Skeleton:
        """This rank's skeleton, given its dependency structure from :func:`._skeleton.scan_rank`."""
        return Skeleton(self.skel_ids, self.skel_kinds, self.skel_a, self.skel_tag, self.skel_size, ptr, preds)

    def _duration_error(self, n: Node, d: int) -> None:
        """``bad-duration`` for node ``n`` of ``d`` us (``total_us`` already counts it): one too
        long, and the node where the rank's sum first passes its limit."""
        if d > MAX_DURATION_US:
            self._error("bad-duration", n, f"duration_micros = {d} us, more than 2^40 us (12.7 days)")
        if self.total_us - d <= MAX_RANK_DURATION_US < self.total_us:
            self._error("bad-duration", n, "the durations of this rank add up to more than 2^50 us "
                        "(35.7 years) at this node")

    def __call__(self, n: Node) -> bool:
        d = n.duration_micros
        if d:
            total = self.total_us = self.total_us + d
            if d > MAX_DURATION_US or total > MAX_RANK_DURATION_US:
                self._duration_error(n, d)
        t = n.type
        if t == NodeType.COMP_NODE:
            return False
        if t == NodeType.METADATA_NODE:
            if n.name == PG_INIT_NAME:
                self.saw_group_node = True
            return False
        if t == 0:
            self._error("invalid-type", n, "node type 0 (INVALID_NODE)")
            return False
        if t > 7:
            self.add("unknown-type", self.label, n.id, f"node type {t} is not in this schema (a newer "
                     "one?): kept by convert and jsonize, skipped by simulators and exporters",
                     "warning", rank=self.rank)
            return False
        a = _ints(n)
        if "_unknown_kind" in a:
            self.add("unknown-attr", self.label, n.id, f"attribute {a.pop('_unknown_kind')!r} has a "
                     "kind this schema does not know (a newer one?): kept, read as absent",
                     "warning", rank=self.rank)
        for key in ("comm_size", "tensor_size"):
            v = a.get(key)
            if v is not None and (v < 0 or v > ABSURD_BYTES):
                self._error("bad-size", n, f"{key} = {v} bytes")
        if t in _MEM:
            return False if a.get("is_cpu_op") else self._skeleton(n, K_SLOT)
        if t == NodeType.COMM_COLL_NODE:
            return self._collective(n, a)
        return self._p2p(n, a)

    def _collective(self, n: Node, a: dict[str, Any]) -> bool:
        ct, size = a.get("comm_type"), a.get("comm_size")
        pg = str(a.get("_pg", "") or "")
        pg = "" if pg == "0" else pg  # "" and "0": all ranks
        timed = timed_broadcast(ct, n.duration_micros)
        problem = self._collective_problem(ct, size, a)
        if problem:
            self._error("coll-attrs", n, problem)
            if not timed:  # its place in the group's sequence, of no known kind: no follow-on coll-order
                self.colls[pg].append((n.id, None, None))
            return False
        assert ct is not None and size is not None
        root = a.get("root")
        if root is not None and ct in ROOTED:
            self.roots.append((pg, n.id, ct, root))
        if timed:  # the simulator replays its duration on the stream, matched with no other rank's
            return self._skeleton(n, K_SLOT)
        self.colls[pg].append((n.id, ct, size))
        return self._skeleton(n, K_COLL, self.group_number(pg), ct, size)

    @staticmethod
    def _collective_problem(ct: int | None, size: int | None, a: dict[str, Any]) -> str | None:
        """The ``coll-attrs`` finding of a collective, None when it has none."""
        if ct is None or size is None:
            return "collective without " + " and ".join(_lacking(a, [k for k in ("comm_type", "comm_size")
                                                                     if a.get(k) is None]))
        if ct not in COMM_TYPE_NAMES:
            return f"unknown comm_type {ct}"
        return None

    def _p2p(self, n: Node, a: dict[str, Any]) -> bool:
        t = n.type
        send = t == NodeType.COMM_SEND_NODE
        miss = [k for k in _P2P_KEYS[t] if a.get(k) is None]
        if miss:
            self._error("p2p-attrs", n, f"{'send' if send else 'receive'} without {', '.join(_lacking(a, miss))}")
            return False
        tag, size = a["comm_tag"], a["comm_size"]
        if tag >= _INT64_END:
            self._error("p2p-attrs", n, f"comm_tag = {tag} does not fit int64 (ASTRA-sim reads 32 bits)")
            return False
        peer_key = "comm_dst" if send else "comm_src"
        peer = a[peer_key]
        problem = self._peer_problem(peer_key, peer, send)
        if problem:
            self._error("bad-peer", n, problem)
            return False
        own_key = "comm_src" if send else "comm_dst"
        own = a.get(own_key)
        if self.rank_known and own is not None and own != self.rank:
            self._error("own-endpoint", n, f"{own_key} = {own} on a {'send' if send else 'receive'} of "
                        f"rank {self.rank} (its own endpoint must be its rank)")
        (self.sends if send else self.recvs).append((peer, tag, size, n.id))
        return self._skeleton(n, K_SEND if send else K_RECV, peer, tag, size)

    def _peer_problem(self, key: str, peer: int, send: bool) -> str | None:
        """The ``bad-peer`` finding of peer rank ``peer`` (attribute ``key``), None when it has none."""
        if peer < 0:
            return f"{key} = {peer}, a negative rank"
        if self.rank_known and peer == self.rank:
            return f"{key} = {peer}, a {'send to' if send else 'receive from'} its own rank"
        if peer <= self.max_peer:
            return None
        if self.nranks > 1:  # outside the set
            return f"{key} = {peer} (rank {self.rank} of {self.nranks})"
        return limit_message("rank", peer, key)
