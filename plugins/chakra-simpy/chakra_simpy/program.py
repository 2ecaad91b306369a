"""One rank's trace in compact arrays: what the simulator needs of every node.

Nodes are sorted by id (ready nodes are issued in ascending id order) and indexed 0..n-1;
children are kept in CSR form, and ``chain_next`` links the compute chains (a compute node whose
only dependent is a compute node on the same resource depending on it alone), which the engine
runs as one event when nothing else of the rank is in flight: ``chain_seq`` lists the nodes of
every chain in chain order, ``chain_pos`` is each node's position there (-1: in no chain),
``chain_end`` the position of the last node of the chain at each position and ``chain_cum`` the
durations summed along ``chain_seq`` (ns, ``chain_cum[p]`` before position p).  Per node: kind, resource, duration
(ns; of a communication node its recorded one with ``-O comm=replay``, else 0), name (UTF-8
bytes in CSR form), and for communication and memory nodes their arguments in ``extra``
(:data:`classify.NodeArgs`).
"""

from __future__ import annotations

from array import array

import numpy as np

from chakra_core import CommType, DepGraph, RankTrace, TraceFormatError, node_columns
from chakra_core.system import SystemDescription

from .classify import (
    ATTRS,
    K_COLL,
    K_COMP,
    K_MEM,
    K_NOP,
    K_RECV,
    K_SEND,
    R_COMM,
    R_COMP,
    R_CPU,
    R_NONE,
    RankFacts,
    classify,
)

__all__ = ["Program", "load_program", "K_COMP", "K_MEM", "K_COLL", "K_SEND", "K_RECV", "K_NOP",
           "R_CPU", "R_COMP", "R_COMM", "R_NONE", "ASTRA_KIND", "COMM_NAME"]

#: CommType (found by its plain value too) -> (modelled kind, how comm_size maps to the modelled collective).
ASTRA_KIND: dict[int, str] = {
    CommType.ALL_REDUCE: "AR", CommType.ALL_GATHER: "AG", CommType.REDUCE_SCATTER: "RS",
    CommType.ALL_TO_ALL: "A2A", CommType.REDUCE: "AR", CommType.REDUCE_SCATTER_BLOCK: "RS",
    CommType.BARRIER: "AR", CommType.GATHER: "AG", CommType.SCATTER: "AG", CommType.BROADCAST: "AG",
}
#: each comm type's name by its value
COMM_NAME = {int(c): c.name for c in CommType}


class Program(RankFacts):
    """Compact form of one rank's trace (see module docstring)."""

    def __init__(self, rank: int, label: str):
        super().__init__()
        self.rank = rank
        self.label = label
        self.ids = array("Q")
        self.kind = bytearray()
        self.resource = bytearray()
        self.cat = bytearray()
        self.dur = array("q")
        self.indeg = array("l")
        self.child_ptr = array("l")
        self.child_idx = array("l")
        self.chain_next = array("l")
        self.chain_pos = array("l")
        self.chain_end = array("l")
        self.chain_seq = np.zeros(0, np.int64)
        self.chain_cum = np.zeros(1, np.int64)
        self.name_ptr = np.zeros(1, np.int64)
        self.name_bytes = np.zeros(0, np.uint8)

    def __len__(self) -> int:
        return len(self.ids)

    def name(self, i: int) -> str:
        """The name of node ``i`` as the file has it ("" for none)."""
        return self.name_bytes[self.name_ptr[i]:self.name_ptr[i + 1]].tobytes().decode()

    def names(self, nodes: np.ndarray) -> list[str]:
        """The names of ``nodes`` (indices) as the file has them ("" for none)."""
        lo, hi = self.name_ptr[nodes], self.name_ptr[nodes + 1]
        length = hi - lo
        at = np.concatenate(([0], length.cumsum())).tolist()
        raw = self.name_bytes[(lo - at[:-1]).repeat(length) + np.arange(at[-1])].tobytes()
        return [raw[a:b].decode() for a, b in zip(at[:-1], at[1:])]

    def named(self, name: str) -> np.ndarray:
        """The indices of the nodes named ``name``, found without decoding every name."""
        want = np.frombuffer(name.encode(), np.uint8)
        lo = self.name_ptr[:-1]
        at = ((self.name_ptr[1:] - lo) == len(want)).nonzero()[0]
        if not len(at) or not len(want):
            return at
        text = self.name_bytes[lo[at, None] + np.arange(len(want))]
        return at[(text == want).all(axis=1)]


def load_program(rt: RankTrace, sd: SystemDescription, replay_comm: bool = False,
                 compile_it: bool | None = None) -> Program:
    """Read one rank's nodes into a :class:`Program`, from the core's columns in one pass
    (raises TraceFormatError on a bad node, a dependency on a missing id or a duplicate id,
    naming the file and node); with ``replay_comm`` communication nodes keep their recorded
    durations (``-O comm=replay``); ``compile_it``: as :func:`chakra_core.node_columns`."""
    where = rt.label
    prog = Program(rt.rank, where)
    cols = node_columns(rt, ATTRS, compile_it)
    c = classify(cols, sd, where, replay_comm)
    g = _by_id(cols)
    if g.duplicates:
        raise TraceFormatError("duplicate node id", where, f"node {g.duplicates[0]}")
    if g.missing:
        nid, dep = g.missing[0]
        raise TraceFormatError(f"depends on node {dep}, which is not in the file", where, f"node {nid}")
    kind, res, dur, extras = c.kind, c.resource, c.dur_ns, c.extra
    if g.order is not None:
        kind, res, dur = kind[g.order], res[g.order], dur[g.order]
        at = np.empty(len(g.order), dtype=np.int64)
        at[g.order] = np.arange(len(g.order), dtype=np.int64)
        extras = {int(at[i]): x for i, x in extras.items()}
        prog.name_ptr, prog.name_bytes = cols.names_in(g.order)
    else:
        prog.name_ptr, prog.name_bytes = cols.name_ptr, cols.name_bytes
    cat = res.copy()
    cat[kind == K_RECV] = R_COMM  # a receive holds no resource but counts as communication
    child_ptr, child_idx = g.children()
    indeg = g.in_degree()
    prog.ids = _array("Q", g.ids, "u8")
    prog.kind, prog.resource, prog.cat = bytearray(kind.tobytes()), bytearray(res.tobytes()), bytearray(cat.tobytes())
    prog.dur = _array("q", dur, "i8")
    prog.indeg = _longs(indeg)
    prog.child_ptr = _longs(child_ptr)
    prog.child_idx = _longs(child_idx)
    _chains(prog, _chain_next(kind, res, indeg, child_ptr, child_idx), dur)
    prog.take_facts(c)
    prog.extra = extras
    return prog


def _chain_next(kind: np.ndarray, resource: np.ndarray, indeg: np.ndarray, child_ptr: np.ndarray,
                child_idx: np.ndarray) -> np.ndarray:
    """Per node, the next node of its compute chain, else -1: a compute node whose only
    dependent is a compute node on the same resource that depends on it alone (not itself: a node
    that depends on itself never becomes ready)."""
    out = np.full(len(kind), -1, dtype=np.int64)
    if not len(kind):
        return out
    one = ((child_ptr[1:] - child_ptr[:-1] == 1) & (kind == K_COMP)).nonzero()[0]
    child = np.asarray(child_idx)[np.asarray(child_ptr)[one]]
    ok = (kind[child] == K_COMP) & (np.asarray(indeg)[child] == 1) & (resource[child] == resource[one]) & (child != one)
    out[one[ok]] = child[ok]
    return out


def _chains(prog: Program, nxt: np.ndarray, dur: np.ndarray) -> None:
    """Set the chain arrays of ``prog`` from ``nxt`` (:func:`_chain_next`) and the durations
    (ns); a program whose chained durations could sum past int64 gets no chains."""
    n = len(nxt)
    linked = nxt >= 0
    member = linked.copy()
    member[nxt[linked]] = True
    seq = _chain_order(nxt, member)
    if dur[seq].astype(np.float64).sum() >= 2.0 ** 62:
        seq = seq[:0]
    if len(seq) < member.sum():  # a cycle (its nodes never become ready), or no chains
        unlinked = np.ones(n, bool)
        unlinked[seq] = False
        nxt = np.where(unlinked, -1, nxt)
    pos = np.full(n, -1, np.int64)
    pos[seq] = np.arange(len(seq))
    last = (nxt[seq] < 0).nonzero()[0]
    prog.chain_next = _longs(nxt)
    prog.chain_pos = _longs(pos)
    prog.chain_end = _longs(last[np.searchsorted(last, np.arange(len(seq)))])
    prog.chain_seq = seq
    prog.chain_cum = np.concatenate(([0], dur[seq].cumsum())).astype(np.int64)


def _chain_order(nxt: np.ndarray, member: np.ndarray) -> np.ndarray:
    """The nodes of ``member`` chain by chain (chains by their first node), each in chain
    order, leaving out links that close a cycle; chains of consecutive nodes are read off as
    they are, others ranked by pointer jumping."""
    idx = member.nonzero()[0]
    links = idx[nxt[idx] >= 0]
    if (nxt[links] == links + 1).all():
        return idx
    up = np.arange(len(nxt))
    up[nxt[links]] = links
    head = up == np.arange(len(nxt))
    depth = (~head).astype(np.int64)
    for _ in range(len(nxt).bit_length() + 1):
        if (up[up] == up).all():
            break
        depth = depth + depth[up]
        up = up[up]
    idx = idx[head[up[idx]]]  # a cycle has no first node to reach
    return idx[np.lexsort((depth[idx], up[idx]))]


def _by_id(cols) -> DepGraph:
    """The rank's graph with its nodes in ascending id order (stable for repeated ids)."""
    ids = cols.ids
    order = np.argsort(ids, kind="stable") if (ids[1:] <= ids[:-1]).any() else None
    return cols.graph(order=order)


def _longs(a: np.ndarray) -> array:
    """An ``array('l')`` (fast scalar indexing in the engine) of an integer numpy array."""
    return _array("l", a, "i8")


def _array(code: str, a: np.ndarray, dtype: str) -> array:
    """``a`` as numpy type ``dtype`` (8 bytes) in an ``array(code)`` (8 bytes), copied once."""
    out = array(code)
    out.frombytes(np.ascontiguousarray(a, dtype=dtype).data.cast("B"))
    return out
