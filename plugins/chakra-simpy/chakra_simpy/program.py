"""One rank's trace in compact arrays: what the simulator needs of every node.

Nodes are sorted by id (ready nodes are issued in ascending id order) and indexed 0..n-1;
children are kept in CSR form, and ``chain_next`` links the compute chains (a compute node whose
only dependent is a compute node on the same resource depending on it alone), which the engine
runs as one event when nothing else of the rank is in flight.  Per node: kind, resource, duration (ns), and for
communication and memory nodes a small tuple in ``extra``.
"""

from __future__ import annotations

from array import array

import numpy as np

from chakra_core import CommType, DepGraph, NodeType, RankTrace, TraceFormatError, get_attr, get_bool, get_int, get_str
from chakra_core.system import SystemDescription, roofline_ns

#: durations are int64 nanoseconds (an array of typecode "q")
_MAX_NS = (1 << 63) - 1

__all__ = ["Program", "load_program", "K_COMP", "K_MEM", "K_COLL", "K_SEND", "K_RECV", "K_NOP",
           "R_CPU", "R_COMP", "R_COMM", "R_NONE", "ASTRA_KIND"]

K_COMP, K_MEM, K_COLL, K_SEND, K_RECV, K_NOP = range(6)
R_CPU, R_COMP, R_COMM, R_NONE = range(4)

#: CommType -> (modelled kind, how comm_size maps to the modelled collective).
ASTRA_KIND = {
    CommType.ALL_REDUCE: "AR", CommType.ALL_GATHER: "AG", CommType.REDUCE_SCATTER: "RS",
    CommType.ALL_TO_ALL: "A2A", CommType.REDUCE: "AR", CommType.REDUCE_SCATTER_BLOCK: "RS",
    CommType.BARRIER: "AR", CommType.GATHER: "AG", CommType.SCATTER: "AG", CommType.BROADCAST: "AG",
}


class Program:
    """Compact form of one rank's trace (see module docstring)."""

    def __init__(self, rank: int, label: str):
        self.rank = rank
        self.label = label
        self.ids = array("Q")
        self.kind = bytearray()
        self.res = bytearray()
        self.cat = bytearray()
        self.dur = array("q")
        self.indeg = array("l")
        self.child_ptr = array("l")
        self.child_idx = array("l")
        self.chain_next = array("l")
        self.extra: dict[int, tuple] = {}
        self.has_p2p = False
        self.has_mem = False
        self.groups: set[str] = set()
        self.roofline_fallbacks = 0
        self.unmodelled: set[str] = set()
        self.unknown_types: set[int] = set()

    def __len__(self) -> int:
        return len(self.ids)


def _is_cpu(n) -> bool:
    """``is_cpu_op`` of a node with attributes (the usual bool slot read directly)."""
    for a in n.attr:
        if a.name == "is_cpu_op":
            return a.bool_val if a.WhichOneof("value") == "bool_val" else bool(get_bool(n, "is_cpu_op", False))
    return False


def _node_info(n, sd: SystemDescription, prog: Program, where: str):
    t = n.type
    dur = n.duration_micros * 1000
    cpu = get_bool(n, "is_cpu_op", False) if n.attr else False
    if t == NodeType.COMP_NODE:
        if not cpu and sd.roofline_enabled:
            ops = get_int(n, "num_ops")
            if ops is None:
                prog.roofline_fallbacks += 1
            else:
                dur = roofline_ns(ops, get_int(n, "tensor_size", 0) or 0, sd.peak_perf, sd.local_mem_bw)
        return K_COMP, (R_CPU if cpu else R_COMP), max(dur, 1), None
    if t in (NodeType.MEM_LOAD_NODE, NodeType.MEM_STORE_NODE):
        prog.has_mem = True
        return K_MEM, (R_CPU if cpu else R_COMM), dur, (get_int(n, "tensor_size", 0) or 0,)
    if t == NodeType.COMM_COLL_NODE:
        ct = get_int(n, "comm_type")
        if ct is None or ct not in CommType._value2member_map_:
            raise TraceFormatError(f"collective without a valid comm_type ({ct})", where, f"node {n.id}")
        ct = CommType(ct)
        size = get_int(n, "comm_size", 0) or 0
        pg = get_str(n, "pg_name", "") or ""
        pg = "" if pg == "0" else pg
        inv = get_attr(n, "involved_dim")
        inv = tuple(bool(x) for x in inv) if isinstance(inv, list) else None
        if ct == CommType.BROADCAST and dur > 0:
            return K_COMP, R_COMM, dur, None  # ASTRA-sim replays a broadcast's duration
        if ct not in (CommType.ALL_REDUCE, CommType.ALL_GATHER, CommType.REDUCE_SCATTER,
                      CommType.ALL_TO_ALL):
            prog.unmodelled.add(ct.name)
        prog.groups.add(pg)
        return K_COLL, R_COMM, 0, (int(ct), size, pg, inv)
    if t in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE):
        prog.has_p2p = True
        send = t == NodeType.COMM_SEND_NODE
        peer = get_int(n, "comm_dst" if send else "comm_src")
        if peer is None:
            raise TraceFormatError(f"{'send' if send else 'recv'} without "
                                   f"{'comm_dst' if send else 'comm_src'}", where, f"node {n.id}")
        tag = get_int(n, "comm_tag", 0) or 0
        comm_size = get_int(n, "comm_size", None)
        size = (get_int(n, "tensor_size", 0) or 0) if comm_size is None else comm_size
        return (K_SEND, R_COMM, 0, (peer, tag, size)) if send else (K_RECV, R_NONE, 0, (peer, tag, size))
    if t > NodeType.COMM_COLL_NODE:
        prog.unknown_types.add(t)  # a newer schema's node type: skipped, its dependencies pass through
    return K_NOP, R_NONE, 0, None


def load_program(rt: RankTrace, sd: SystemDescription) -> Program:
    """Read one rank's nodes into a :class:`Program` (raises TraceFormatError on a dependency
    on a missing id or on a duplicate id, naming the file and node)."""
    where = rt.label
    prog = Program(rt.rank, where)
    ids, kinds, res, durs = array("Q"), bytearray(), bytearray(), array("q")
    dep_ptr, dep_ids = array("q", [0]), array("Q")
    extras: list[tuple[int, tuple]] = []
    info = _node_info
    plain = not sd.roofline_enabled  # accelerator compute replays its duration
    comp = NodeType.COMP_NODE
    for batch in rt.batches():
        for n in batch:
            if plain and n.type == comp:
                k, r, d = K_COMP, (R_CPU if n.attr and _is_cpu(n) else R_COMP), max(n.duration_micros * 1000, 1)
            else:
                k, r, d, x = info(n, sd, prog, where)
                if x is not None:
                    extras.append((len(ids), x))
            ids.append(n.id)
            kinds.append(k)
            res.append(r)
            if d > _MAX_NS:
                raise TraceFormatError(f"node {n.id}: duration of {d} ns passes 2**63-1 ns", where)
            durs.append(d)
            if n.data_deps:
                dep_ids.extend(n.data_deps)
            if n.ctrl_deps:
                dep_ids.extend(n.ctrl_deps)
            dep_ptr.append(len(dep_ids))
    g = _by_id(ids, dep_ptr, dep_ids)
    if g.duplicates:
        raise TraceFormatError("duplicate node id", where, f"node {g.duplicates[0]}")
    if g.missing:
        nid, dep = g.missing[0]
        raise TraceFormatError(f"depends on node {dep}, which is not in the file", where, f"node {nid}")
    order = g.order
    if order is not None:
        kinds = bytearray(np.frombuffer(kinds, dtype=np.uint8)[order].tobytes())
        res = bytearray(np.frombuffer(res, dtype=np.uint8)[order].tobytes())
        durs = array("q", np.frombuffer(durs, dtype=np.int64)[order].tobytes())
        at = np.empty(len(order), dtype=np.int64)
        at[order] = np.arange(len(order), dtype=np.int64)
        extras = [(int(at[i]), x) for i, x in extras]
    child_ptr, child_idx = g.children()
    prog.ids = array("Q", g.ids.tobytes())
    prog.kind, prog.res, prog.dur = kinds, res, durs
    prog.cat = bytearray(res)
    for i, _x in extras:
        if kinds[i] == K_RECV:
            prog.cat[i] = R_COMM  # a receive holds no resource but counts as communication
    indeg = g.in_degree()
    prog.indeg = _longs(indeg)
    prog.child_ptr = _longs(child_ptr)
    prog.child_idx = _longs(child_idx)
    prog.chain_next = _longs(_chain_next(kinds, res, indeg, child_ptr, child_idx))
    prog.extra = dict(extras)
    return prog


def _chain_next(kinds: bytearray, res: bytearray, indeg: np.ndarray, child_ptr: np.ndarray,
                child_idx: np.ndarray) -> np.ndarray:
    """Per node, the next node of its compute chain, else -1: a compute node whose only
    dependent is a compute node on the same resource that depends on it alone."""
    n = len(kinds)
    out = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return out
    kind = np.frombuffer(kinds, dtype=np.uint8)
    resource = np.frombuffer(res, dtype=np.uint8)
    one = np.flatnonzero((np.diff(child_ptr) == 1) & (kind == K_COMP))
    child = np.asarray(child_idx)[np.asarray(child_ptr)[one]]
    ok = (kind[child] == K_COMP) & (np.asarray(indeg)[child] == 1) & (resource[child] == resource[one])
    out[one[ok]] = child[ok]
    return out


def _by_id(ids: array, dep_ptr: array, dep_ids: array) -> DepGraph:
    """The rank's graph with its nodes in ascending id order (stable for repeated ids)."""
    idv = np.frombuffer(ids, dtype=np.uint64) if ids else np.zeros(0, np.uint64)
    deps = np.frombuffer(dep_ids, dtype=np.uint64) if dep_ids else np.zeros(0, np.uint64)
    order = np.argsort(idv, kind="stable") if (idv[1:] <= idv[:-1]).any() else None
    return DepGraph(idv, np.frombuffer(dep_ptr, dtype=np.int64), deps, order=order)


def _longs(a: np.ndarray) -> array:
    """An ``array('l')`` (fast scalar indexing in the engine) of an integer numpy array."""
    return array("l", np.ascontiguousarray(a, dtype=np.int64).tobytes())
