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

from chakra_core.io._schema import COMM_TYPE_NAMES, PG_INIT_NAME, AttributeProto, CommType, Node, NodeType
from chakra_core.trace._attrs import int_value
from chakra_core.validation._skelrecord import K_COLL, K_RECV, K_SEND, K_SLOT, Skeleton

__all__ = ["RankCheck", "ABSURD_BYTES", "MAX_DURATION_US", "MAX_RANK_DURATION_US", "ROOTED"]

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


def _named_size(a: AttributeProto) -> int:
    """Wire size of ``a``'s name and doc string: anything beyond is a value of a kind this
    schema does not know (protobuf keeps it as an unknown field)."""
    return AttributeProto(name=a.name, doc_string=a.doc_string).ByteSize()


def _ints(n: Node) -> dict[str, Any]:
    """The node's integer attributes, its group name under ``_pg`` and the name of its first
    attribute of an unknown kind under ``_unknown_kind``; of attributes with one name, the first
    (as :func:`chakra_core.get_attr` and the columns read them)."""
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for a in n.attr:
        first = a.name not in seen
        seen.add(a.name)
        v = int_value(a)
        if v is not None:
            if first:
                out[a.name] = v
        elif a.name == "pg_name" and a.WhichOneof("value") == "string_val":
            if first:
                out["_pg"] = a.string_val
        elif a.WhichOneof("value") is None and a.ByteSize() > _named_size(a):
            out.setdefault("_unknown_kind", a.name)
    if "pg_name" in out:  # a group name written in an integer slot
        out["_pg"] = str(out.pop("pg_name"))
    return out


class RankCheck:
    """Per-node checks of one rank (``__call__`` returns True for a skeleton node).

    ``group_number`` maps a group name ("" = all ranks) to a small integer shared by the set.
    """

    def __init__(self, rank: int, label: str, nranks: int, add: Callable[..., None],
                 group_number: Callable[[str], int], rank_known: bool = True):
        self.rank, self.label, self.nranks, self.add = rank, label, nranks, add
        self.rank_known = rank_known
        self.group_number = group_number
        self.colls: dict[str, list[tuple[int, int, int]]] = defaultdict(list)  # pg -> (id, type, size)
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
        self.skel_ids.append(n.id)
        self.skel_kinds.append(kind)
        self.skel_a.append(a)
        self.skel_tag.append(tag)
        self.skel_size.append(size)
        return True

    def skeleton(self, ptr: array, preds: array) -> Skeleton:
        """This rank's skeleton, given its dependency structure from :func:`._skeleton.scan_rank`."""
        return Skeleton(self.skel_ids, self.skel_kinds, self.skel_a, self.skel_tag, self.skel_size, ptr, preds)

    def _duration_error(self, n: Node, d: int) -> None:
        if d > MAX_DURATION_US:
            self._error("bad-duration", n, f"duration_micros = {d} us, more than 2^40 us (12.7 days)")
        if self.total_us - d <= MAX_RANK_DURATION_US:
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
        if ct is None or size is None:
            miss = " and ".join(k for k in ("comm_type", "comm_size") if a.get(k) is None)
            self._error("coll-attrs", n, f"collective without {miss}")
            return False
        if ct not in COMM_TYPE_NAMES:
            self._error("coll-attrs", n, f"unknown comm_type {ct}")
            return False
        pg = str(a.get("_pg", "") or "")
        pg = "" if pg == "0" else pg  # "" and "0": all ranks
        self.colls[pg].append((n.id, ct, size))
        root = a.get("root")
        if root is not None and ct in ROOTED:
            self.roots.append((pg, n.id, ct, root))
        if ct == CommType.BROADCAST and n.duration_micros > 0:
            return self._skeleton(n, K_SLOT)  # the simulator replays a broadcast's duration
        return self._skeleton(n, K_COLL, self.group_number(pg), ct, size)

    def _p2p(self, n: Node, a: dict[str, Any]) -> bool:
        t = n.type
        send = t == NodeType.COMM_SEND_NODE
        miss = [k for k in _P2P_KEYS[t] if a.get(k) is None]
        if miss:
            self._error("p2p-attrs", n, f"{'send' if send else 'receive'} without {', '.join(miss)}")
            return False
        peer_key = "comm_dst" if send else "comm_src"
        peer = a[peer_key]
        if peer < 0 or (self.rank_known and peer == self.rank) or (self.nranks > 1 and peer >= self.nranks):
            self._error("bad-peer", n, f"{peer_key} = {peer} (rank {self.rank} of {self.nranks})")
            return False
        own_key = "comm_src" if send else "comm_dst"
        own = a.get(own_key)
        if self.rank_known and own is not None and own != self.rank:
            self._error("own-endpoint", n, f"{own_key} = {own} on a {'send' if send else 'receive'} of "
                        f"rank {self.rank} (its own endpoint must be its rank)")
        tag, size = a["comm_tag"], a["comm_size"]
        (self.sends if send else self.recvs).append((peer, tag, size, n.id))
        return self._skeleton(n, K_SEND if send else K_RECV, peer, tag, size)
