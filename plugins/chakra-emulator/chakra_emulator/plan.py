"""One rank's trace as a replay plan: what a worker needs of every node, in plain lists.

Nodes are sorted by id and indexed 0..n-1 (ready nodes are issued in ascending id order, as the
SimPy simulator does); children are kept in CSR form.  Per node: what it is (``kind``), the
resource it holds (``res``: one CPU op, ``streams`` accelerator compute ops, ``streams``
communication ops; a receive holds none), its recorded duration in ns, and a small spec
(``spec``) for what the worker builds: the operator schema of a compute node, the bytes of a
memory node, the kind, size, group and root of a collective, the peer, tag and size of a
send/recv.  ``path_ns`` is the rank's longest dependency path by recorded durations (its own
recorded time, as ``chakra stats`` computes it).  A plan pickles to a file the worker reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chakra_core import CommType, DepGraph, Node, NodeAttrs, NodeType, RankTrace, TraceFormatError

__all__ = ["Plan", "load_plan", "COMP", "MEM", "COLL", "SEND", "RECV", "NOP",
           "R_CPU", "R_COMP", "R_COMM", "R_NONE", "KIND_NAMES"]

COMP, MEM, COLL, SEND, RECV, NOP = "compute", "memory", "collective", "send", "recv", "other"
R_CPU, R_COMP, R_COMM, R_NONE = range(4)
KIND_NAMES = (COMP, MEM, COLL, SEND, RECV, NOP)


@dataclass
class Plan:
    """A rank's replay plan (see the module docstring); lists indexed by node position."""

    rank: int
    label: str
    ids: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    res: list[int] = field(default_factory=list)
    cpu: list[bool] = field(default_factory=list)
    dur_ns: list[int] = field(default_factory=list)
    spec: list[dict[str, Any] | None] = field(default_factory=list)
    indeg: list[int] = field(default_factory=list)
    child_ptr: list[int] = field(default_factory=list)
    child_idx: list[int] = field(default_factory=list)
    dep_ptr: list[int] = field(default_factory=list)
    deps: list[int] = field(default_factory=list)
    path_ns: int = 0

    def __len__(self) -> int:
        return len(self.ids)

    def groups(self) -> set[str]:
        """The pg_names its collectives name ("" for the world)."""
        return {s["pg"] for k, s in zip(self.kind, self.spec) if k == COLL and s is not None}


def _comp_spec(ix: NodeAttrs, n: Node) -> dict[str, Any]:
    spec: dict[str, Any] = {"num_ops": ix.get_int("num_ops"), "tensor_size": ix.get_int("tensor_size")}
    if n.HasField("inputs") and n.inputs.types:
        spec["op"] = {"name": n.name, "values": n.inputs.values, "shapes": n.inputs.shapes,
                      "types": n.inputs.types}
    return spec


def _coll_spec(ix: NodeAttrs, n: Node, where: str) -> dict[str, Any]:
    ct = ix.get_int("comm_type")
    if ct is None or ct not in CommType._value2member_map_:
        raise TraceFormatError(f"collective without a valid comm_type ({ct})", where, f"node {n.id}")
    pg = ix.get_str("pg_name", "") or ""
    size = ix.get_int("comm_size", 0) or 0
    if size < 0:
        raise TraceFormatError(f"negative comm_size {size}", where, f"node {n.id}")
    return {"type": CommType(ct).name, "size": size, "pg": "" if pg == "0" else pg, "root": ix.get_int("root")}


def _p2p_spec(ix: NodeAttrs, n: Node, send: bool, where: str) -> dict[str, Any]:
    key = "comm_dst" if send else "comm_src"
    peer = ix.get_int(key)
    if peer is None:
        raise TraceFormatError(f"{'send' if send else 'recv'} without {key}", where, f"node {n.id}")
    size = ix.get_int("comm_size")
    if size is None:
        size = ix.get_int("tensor_size", 0) or 0
    return {"peer": peer, "tag": ix.get_int("comm_tag", 0) or 0, "size": size}


def _node(n: Node, where: str) -> tuple[str, int, bool, dict[str, Any] | None]:
    """(kind, resource, is_cpu_op, spec) of one node, by the simulator's resource rules."""
    ix = NodeAttrs(n)
    cpu = bool(ix.get_bool("is_cpu_op", False))
    t = n.type
    if t == NodeType.COMP_NODE:
        return COMP, (R_CPU if cpu else R_COMP), cpu, _comp_spec(ix, n)
    if t in (NodeType.MEM_LOAD_NODE, NodeType.MEM_STORE_NODE):
        return MEM, (R_CPU if cpu else R_COMM), cpu, {"bytes": ix.get_int("tensor_size", 0) or 0}
    if t == NodeType.COMM_COLL_NODE:
        return COLL, R_COMM, cpu, _coll_spec(ix, n, where)
    if t == NodeType.COMM_SEND_NODE:
        return SEND, R_COMM, cpu, _p2p_spec(ix, n, True, where)
    if t == NodeType.COMM_RECV_NODE:
        return RECV, R_NONE, cpu, _p2p_spec(ix, n, False, where)
    return NOP, R_NONE, cpu, None


def load_plan(rt: RankTrace) -> Plan:
    """Read one rank into a :class:`Plan` (a TraceFormatError names the file and node of a
    dependency on a missing id, a duplicate id or a collective without a valid kind)."""
    where = rt.label
    rows: list[tuple[str, int, bool, dict[str, Any] | None]] = []
    names: list[str] = []
    durs: list[int] = []
    ids: list[int] = []
    dep_ptr: list[int] = [0]
    dep_ids: list[int] = []
    for batch in rt.batches():
        for n in batch:
            rows.append(_node(n, where))
            names.append(n.name)
            durs.append(max(int(n.duration_micros), 0) * 1000)
            ids.append(n.id)
            dep_ids.extend(n.data_deps)
            dep_ids.extend(n.ctrl_deps)
            dep_ptr.append(len(dep_ids))
    idv = np.array(ids, dtype=np.uint64)
    order = np.argsort(idv, kind="stable")
    g = DepGraph(idv, np.array(dep_ptr, dtype=np.int64), np.array(dep_ids, dtype=np.uint64), order=order)
    if g.duplicates:
        raise TraceFormatError("duplicate node id", where, f"node {int(g.ids[g.duplicates[0]])}")
    if g.missing:
        nid, dep = g.missing[0]
        raise TraceFormatError(f"depends on node {dep}, which is not in the file", where, f"node {nid}")
    at = order.tolist()
    plan = Plan(rt.rank, where)
    plan.ids = [int(x) for x in g.ids]
    plan.names = [names[i] for i in at]
    plan.kind = [rows[i][0] for i in at]
    plan.res = [rows[i][1] for i in at]
    plan.cpu = [rows[i][2] for i in at]
    plan.spec = [rows[i][3] for i in at]
    plan.dur_ns = [durs[i] for i in at]
    plan.indeg = [int(x) for x in g.in_degree()]
    ptr, idx = g.children()
    plan.child_ptr = [int(x) for x in ptr]
    plan.child_idx = [int(x) for x in idx]
    plan.dep_ptr = [int(x) for x in g.dep_ptr]
    plan.deps = [int(x) for x in g.deps]
    plan.path_ns = int(g.longest_path(np.array(plan.dur_ns, dtype=np.int64) // 1000)[0]) * 1000
    return plan
