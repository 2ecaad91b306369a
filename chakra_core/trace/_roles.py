"""A rank's role: its trace up to a consistent relabelling of process groups and peers.

Hybrid-parallel ranks differ only in which groups they talk to (``pg_name``) and which peers
they send to or receive from: the ranks of one tensor-parallel position across data-parallel
replicas, or the stages of a pipeline with their neighbours, have traces that are equal once
every group name and peer rank is replaced by the order in which the rank first names it.
:func:`role_key` computes that from the serialized node bytes, decoding only the nodes that name
a peer (send/recv) or hold ``pg_name`` in an unusual form, so that a simulator can group ranks
before it builds anything per rank.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate, islice

from chakra_core.io._schema import Node
from chakra_core.trace._attrs import get_int, get_str
from chakra_core.trace._traceset import RankTrace

__all__ = ["RoleKey", "RoleHasher", "role_key"]

#: an attribute named pg_name holding a string (AttributeProto name = 1, string_val = 29):
#: the value's one-byte length follows.
_PG_VALUE = b"\x0a\x07pg_name\xea\x01"
_PEER_MARKS = (b"comm_src", b"comm_dst")
#: nodes hashed at a time.
_CHUNK = 4096


@dataclass(frozen=True)
class RoleKey:
    """One rank's role.

    ``digest``: 20 bytes over every node's bytes in file order, with each ``pg_name`` value and
    each peer rank (``comm_src``/``comm_dst``) replaced by its label; ``groups``: the ``pg_name``
    values in the order the rank first names them (label i is ``groups[i]``; "" and "0", the
    whole set, keep their own name); ``peers``: the peer ranks in first-naming order (the rank
    itself is labelled ``self``).  Two ranks with equal ``digest`` have equal traces up to the
    relabelling ``groups[i] -> other.groups[i]``, ``peers[i] -> other.peers[i]``.
    """

    digest: bytes
    groups: tuple[str, ...]
    peers: tuple[int, ...]


class _Labels:
    """First-naming labels of one rank's groups and peers."""

    def __init__(self, rank: int):
        self.rank = rank
        self.groups: dict[str, int] = {}
        self.peers: dict[int, int] = {}

    def group(self, name: str) -> bytes:
        if name in ("", "0"):
            return name.encode()
        return b"#%d" % self.groups.setdefault(name, len(self.groups))

    def peer(self, rank: int) -> int:
        if rank == self.rank:
            return -1
        return self.peers.setdefault(rank, len(self.peers))


def _raws(rt: RankTrace) -> Iterator[bytes]:
    raw = getattr(rt, "raw", None)
    if raw is not None:
        return raw()
    return (n.SerializeToString() for n in rt.nodes())


def _relabel_pg(b: bytes, labels: _Labels) -> bytes | None:
    """``b`` with its string ``pg_name`` values replaced by labels, and the length byte of each
    such attribute left out (it only follows the value's length); None when a ``pg_name`` is
    held some other way (the caller decodes the node)."""
    if b.count(b"pg_name") != b.count(_PG_VALUE):
        return None
    parts = []
    pos = 0
    at = b.find(_PG_VALUE)
    while at >= 0:
        end = at + len(_PG_VALUE)
        if end >= len(b) or b[end] & 0x80 or at < 1 or b[at - 1] != len(_PG_VALUE) + 1 + b[end]:
            return None  # a long value, or an attribute with more fields than name and value
        length = b[end]
        parts.append(b[pos:at - 1])
        parts.append(labels.group(b[end + 1:end + 1 + length].decode("utf-8", "replace")))
        pos = end + 1 + length
        at = b.find(_PG_VALUE, pos)
    parts.append(b[pos:])
    return b"\x00".join(parts)


def _relabel_node(b: bytes, labels: _Labels) -> bytes:
    """A decoded node's labelled form: its bytes without group and peer attributes, then the
    labels of those, in attribute order."""
    node = Node.FromString(b)
    marks = []
    keep = []
    for a in node.attr:
        if a.name == "pg_name":
            marks.append(b"g" + labels.group(get_str(node, "pg_name", "") or ""))
        elif a.name in ("comm_src", "comm_dst"):
            peer = get_int(node, a.name)
            marks.append(b"p%d" % (labels.peer(peer) if peer is not None else -2))
        else:
            keep.append(a)
    del node.attr[:]
    node.attr.extend(keep)
    return node.SerializeToString() + b"\x00" + b",".join(marks)


def _marked(joined: bytes, ends: list[int]) -> list[int]:
    """Indices of the nodes of a run (joined bytes, cumulative end offsets) that name a group
    or a peer, ascending."""
    hits = set()
    for mark in (b"pg_name", *_PEER_MARKS):
        at = joined.find(mark)
        while at >= 0:
            k = bisect_right(ends, at)
            hits.add(k)
            at = joined.find(mark, ends[k])
    return sorted(hits)


def _hash_run(h, chunk: list[bytes], labels: _Labels) -> None:
    """Feed one run of nodes, relabelled, to ``h``."""
    ends = list(accumulate(map(len, chunk)))
    joined = b"".join(chunk)
    marked = _marked(joined, ends)
    if marked:
        chunk = list(chunk)
        for k in marked:
            b = chunk[k]
            if b"comm_src" in b or b"comm_dst" in b:
                chunk[k] = _relabel_node(b, labels)
            else:
                chunk[k] = _relabel_pg(b, labels) or _relabel_node(b, labels)
        joined = b"".join(chunk)
        ends = list(accumulate(map(len, chunk)))
    h.update(array("Q", ends).tobytes())
    h.update(joined)


class RoleHasher:
    """:func:`role_key` fed by the caller, one run of serialized nodes at a time (for a reader
    that passes over the rank's bytes anyway)."""

    def __init__(self, rank: int):
        self._labels = _Labels(rank)
        self._h = hashlib.blake2b(digest_size=20, person=b"chakra-role")

    def add(self, chunk: list[bytes]) -> None:
        """Feed the next run of node messages, in file order."""
        _hash_run(self._h, chunk, self._labels)

    def key(self) -> RoleKey:
        """The :class:`RoleKey` of the nodes fed so far (the same runs give the same key)."""
        return RoleKey(self._h.digest(), tuple(self._labels.groups), tuple(self._labels.peers))


def role_key(rt: RankTrace) -> RoleKey:
    """The :class:`RoleKey` of rank ``rt`` (one pass over its serialized nodes, a run of
    4,096 at a time; only nodes naming a group or a peer are looked at one by one)."""
    hasher = RoleHasher(rt.rank)
    raws = _raws(rt)
    while True:
        chunk = list(islice(raws, _CHUNK))
        if not chunk:
            break
        hasher.add(chunk)
    return hasher.key()
