"""Read a trace set into per-rank arrays in a topological order: the input of every synthesizer.

Each node becomes a *kind* (its type, collective type, CPU flag and its name with the digits
taken out, so that ``block7_attn`` and ``block8_attn`` are one kind) and the numbers a model
keeps: duration (us), size (bytes: ``comm_size`` of communication nodes, ``tensor_size`` of
memory nodes), ``num_ops``, the tag and root of communication nodes, the process group of a
collective and the peer of a send or receive.  Dependencies become offsets back in that order
(1 = the node just before).  Names stay in the :class:`KindTable` and reach a model only when
it is asked to keep them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

from chakra_core import (
    CommType,
    DepGraph,
    NodeAttrs,
    NodeType,
    RankTrace,
    RoleKey,
    TraceFormatError,
    TraceSet,
    role_keys,
)

__all__ = ["KindTable", "RankProfile", "read_profiles", "WORLD"]

#: the group name of collectives on every rank of the set
WORLD = ""
_DIGITS = re.compile(r"\d+")
_I64 = 2 ** 63
_NUMBERS = ("duration_micros", "size", "num_ops", "comm_tag", "root", "peer")
_COMM = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
_MEM = (NodeType.MEM_LOAD_NODE, NodeType.MEM_STORE_NODE)


@dataclass
class KindTable:
    """Node kinds in order of first appearance: ``(type, comm_type, cpu, label)`` each."""

    keys: list[tuple[int, int, bool, str]] = field(default_factory=list)
    index: dict[tuple[int, int, bool, str], int] = field(default_factory=dict)

    def id_of(self, key: tuple[int, int, bool, str]) -> int:
        """The kind id of ``key`` (a new one when it was not seen)."""
        k = self.index.get(key)
        if k is None:
            k = self.index[key] = len(self.keys)
            self.keys.append(key)
        return k


@dataclass
class RankProfile:
    """One rank's nodes in a topological order, as arrays (-1 where a number is absent).

    ``data_ptr``/``data_off`` (and ``ctrl_*``) are CSR rows of dependency offsets: node ``i``
    depends on nodes ``i - off`` for ``off`` in ``data_off[data_ptr[i]:data_ptr[i+1]]``.
    ``group`` holds the collective's process-group name (:data:`WORLD` for every rank), None
    elsewhere.
    """

    rank: int
    kind: np.ndarray
    duration: np.ndarray
    size: np.ndarray
    num_ops: np.ndarray
    tag: np.ndarray
    root: np.ndarray
    peer: np.ndarray
    group: list[str | None]
    data_ptr: np.ndarray
    data_off: np.ndarray
    ctrl_ptr: np.ndarray
    ctrl_off: np.ndarray

    def __len__(self) -> int:
        return len(self.kind)


class _Collector:
    """Per-node numbers gathered in file order while the rank's DepGraph is built."""

    def __init__(self, kinds: KindTable, rank: RankTrace):
        self.kinds = kinds
        self.where = rank.path or f"rank {rank.rank}"
        self.kind: list[int] = []
        self.numbers: list[tuple[int, int, int, int, int, int]] = []
        self.group: list[str | None] = []
        self.n_data: list[int] = []

    def visit(self, n) -> None:
        t = int(n.type)
        ix = NodeAttrs(n) if len(n.attr) else None
        get = ix.get_int if ix is not None else (lambda _name, default=None: default)
        cpu = bool(ix.get_bool("is_cpu_op", False)) if ix is not None else False
        comm_type = get("comm_type", -1) if t == NodeType.COMM_COLL_NODE else -1
        if t not in NodeType._value2member_map_ or comm_type not in (-1, *CommType._value2member_map_):
            raise TraceFormatError(f"type {t}, comm_type {comm_type}: not a Chakra node type and collective type "
                                   "(the only kinds a model holds)", self.where, f"node {n.id}")
        self.kind.append(self.kinds.id_of((t, int(comm_type), cpu, _DIGITS.sub("", n.name))))
        size = -1
        if t in _COMM:
            size = get("comm_size", None)
            size = get("tensor_size", -1) if size is None else size
        elif t in _MEM:
            size = get("tensor_size", -1)
        peer = -1
        if t == NodeType.COMM_SEND_NODE:
            peer = get("comm_dst", -1)
        elif t == NodeType.COMM_RECV_NODE:
            peer = get("comm_src", -1)
        numbers = (int(n.duration_micros), int(size), int(get("num_ops", -1)), int(get("comm_tag", -1)),
                   int(get("root", -1)), int(peer))
        for name, v in zip(_NUMBERS, numbers):
            if not -_I64 <= v < _I64:
                raise TraceFormatError(f"{name} {v} is beyond the 64-bit signed range a model holds", self.where,
                                       f"node {n.id}")
        self.numbers.append(numbers)
        if t == NodeType.COMM_COLL_NODE:
            pg = ix.get_str("pg_name", "") if ix is not None else ""
            self.group.append(WORLD if pg in ("", "0", None) else str(pg))
        else:
            self.group.append(None)
        self.n_data.append(len(n.data_deps))


def read_profile(rt: RankTrace, kinds: KindTable) -> RankProfile:
    """Read one rank (nodes on or behind a dependency cycle are left out)."""
    col = _Collector(kinds, rt)
    g = DepGraph.build(rt.batches(), col.visit)
    order, _left = g.topo_order()
    at = np.full(len(g), -1, dtype=np.int64)
    at[order] = np.arange(len(order), dtype=np.int64)
    nums = np.asarray(col.numbers, dtype=np.int64).reshape(-1, 6)[order]
    n_data = np.asarray(col.n_data, dtype=np.int64)
    data_rows, ctrl_rows = [], []
    for p in order.tolist():
        deps = g.deps[g.dep_ptr[p]:g.dep_ptr[p + 1]]
        me = at[p]
        offs = [me - at[d] if d >= 0 else -1 for d in deps.tolist()]
        data_rows.append(sorted({o for o in offs[:n_data[p]] if o > 0}))
        ctrl_rows.append(sorted({o for o in offs[n_data[p]:] if o > 0} - set(data_rows[-1])))
    data_ptr, data_off = _csr(data_rows)
    ctrl_ptr, ctrl_off = _csr(ctrl_rows)
    kind = np.asarray(col.kind, dtype=np.int32)[order]
    group = [col.group[p] for p in order.tolist()]
    return RankProfile(rt.rank, kind, nums[:, 0], nums[:, 1], nums[:, 2], nums[:, 3], nums[:, 4], nums[:, 5],
                       group, data_ptr, data_off, ctrl_ptr, ctrl_off)


def read_profiles(traces: TraceSet, kinds: KindTable) -> list[RankProfile]:
    """Every rank of ``traces``, in rank order.  Ranks of one role (:func:`chakra_core.role_key`:
    equal traces up to the names of their groups and peers) are read once: the others share the
    first one's arrays with their own group names and peers."""
    keys = [get() for _, get in role_keys(traces)]
    first: dict[bytes, int] = {}
    out: list[RankProfile] = []
    for i, (rt, key) in enumerate(zip(traces, keys)):
        j = first.setdefault(key.digest, i)
        out.append(read_profile(rt, kinds) if j == i else _relabelled(out[j], keys[j], key, rt.rank))
    return out


def _relabelled(p: RankProfile, pk: RoleKey, key: RoleKey, rank: int) -> RankProfile:
    """``p`` (of role key ``pk``) as the rank ``rank`` of role key ``key`` sees it."""
    names = dict(zip(pk.groups, key.groups))
    group = [g if g is None or g == WORLD else names.get(g, g) for g in p.group]
    peers = {**dict(zip(pk.peers, key.peers)), p.rank: rank}
    peer = p.peer
    if (peer >= 0).any():
        peer = p.peer.copy()
        for old in np.unique(p.peer[p.peer >= 0]).tolist():
            peer[p.peer == old] = peers.get(old, old)
    return replace(p, rank=rank, group=group, peer=peer)


def _csr(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=ptr[1:])
    flat = np.fromiter((o for r in rows for o in r), dtype=np.int64, count=int(ptr[-1]))
    return ptr, flat
