"""One rank's trace as a replay plan: what a worker needs of every node, in plain lists.

Nodes are sorted by id and indexed 0..n-1 (ready nodes are issued in ascending id order, as the
SimPy simulator does); children are kept in CSR form.  Per node: what it is (``kind``), the
resource it holds (``res``: one CPU op, ``streams`` accelerator compute ops, ``streams``
communication ops; a receive holds none), both by the core's rule (:func:`chakra_core.classify_nodes`),
its recorded duration in ns, and a small spec
(``spec``) for what the worker builds: the operator schema of a compute node, the bytes of a
memory node, the kind, size, group and root of a collective, the peer, tag and size of a
send/recv.  ``path_ns`` is the rank's longest dependency path by recorded durations (its own
recorded time, as ``chakra stats`` computes it).  A plan pickles to a file the worker reads.

A rank is read as the core's columns (:func:`chakra_core.node_columns`: one compiled pass over
its serialized nodes, no Python object per node); only the operator schemas, which the columns
leave undecoded, take a second pass over the decoded nodes, and only when they are replayed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chakra_core import (
    AttrColumn,
    CommType,
    NodeColumns,
    NodeKind,
    NodeResource,
    RankTrace,
    TraceFormatError,
    classify_nodes,
    node_columns,
)

__all__ = ["ROOTED", "Plan", "load_plan", "COMP", "MEM", "COLL", "SEND", "RECV", "NOP",
           "R_CPU", "R_COMP", "R_COMM", "R_NONE", "KIND_NAMES"]

COMP, MEM, COLL, SEND, RECV, NOP = "compute", "memory", "collective", "send", "recv", "other"
#: the name of each :class:`chakra_core.NodeKind`, by its value
KIND_NAMES = (COMP, MEM, COLL, SEND, RECV, NOP)
R_CPU, R_COMP, R_COMM, R_NONE = (int(r) for r in (NodeResource.CPU, NodeResource.COMPUTE, NodeResource.COMM,
                                                  NodeResource.NONE))
#: the attributes a plan reads
_ATTRS = ("is_cpu_op", "num_ops", "tensor_size", "comm_type", "comm_size", "pg_name", "root", "comm_src", "comm_dst",
          "comm_tag")


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


def _ints(col: AttrColumn, rows: np.ndarray, default: int | None) -> list[int | None]:
    """``col.get_int(i, default)`` of each row of ``rows``, from the arrays where it fits int64."""
    values = col.ints[rows].tolist()
    fits = col.is_int[rows]
    if fits.all():
        return values
    return [v if f else col.get_int(i, default) for v, f, i in zip(values, fits.tolist(), rows.tolist())]


def _compute_specs(a: dict[str, AttrColumn], rows: np.ndarray, specs: list[dict[str, Any] | None]) -> None:
    for i, ops, size in zip(rows.tolist(), _ints(a["num_ops"], rows, None), _ints(a["tensor_size"], rows, None)):
        specs[i] = {"num_ops": ops, "tensor_size": size}


def _memory_specs(a: dict[str, AttrColumn], rows: np.ndarray, specs: list[dict[str, Any] | None]) -> None:
    for i, size in zip(rows.tolist(), _ints(a["tensor_size"], rows, 0)):
        specs[i] = {"bytes": size or 0}


#: the collective kinds that have a root
ROOTED = ("BROADCAST", "REDUCE", "GATHER", "SCATTER")


def _coll_spec(a: dict[str, AttrColumn], i: int, nid: int, where: str) -> dict[str, Any]:
    ct = a["comm_type"].get_int(i)
    if ct is None or ct not in CommType._value2member_map_:
        raise TraceFormatError(f"collective without a valid comm_type ({ct})", where, f"node {nid}")
    pg = a["pg_name"].get_str(i, "") or ""
    size = a["comm_size"].get_int(i, 0) or 0
    if size < 0:
        raise TraceFormatError(f"negative comm_size {size}", where, f"node {nid}")
    return {"type": CommType(ct).name, "size": size, "pg": "" if pg == "0" else pg, "root": a["root"].get_int(i)}


def _p2p_spec(a: dict[str, AttrColumn], i: int, send: bool, nid: int, where: str) -> dict[str, Any]:
    key = "comm_dst" if send else "comm_src"
    peer = a[key].get_int(i)
    if peer is None:
        raise TraceFormatError(f"{'send' if send else 'recv'} without {key}", where, f"node {nid}")
    size = a["comm_size"].get_int(i)
    if size is None:
        size = a["tensor_size"].get_int(i, 0) or 0
    return {"peer": peer, "tag": a["comm_tag"].get_int(i, 0) or 0, "size": size}


def _comm_specs(cols: NodeColumns, kind: np.ndarray, specs: list[dict[str, Any] | None], where: str) -> None:
    """Collectives, sends and receives in file order (the first bad one raises)."""
    a = cols.attrs
    rows = np.flatnonzero((kind == NodeKind.COLLECTIVE) | (kind == NodeKind.SEND) | (kind == NodeKind.RECV))
    for i, k, nid in zip(rows.tolist(), kind[rows].tolist(), cols.ids[rows].tolist()):
        specs[i] = _coll_spec(a, i, nid, where) if k == NodeKind.COLLECTIVE else _p2p_spec(a, i, k == NodeKind.SEND,
                                                                                             nid, where)


def _operators(rt: RankTrace, compute: np.ndarray, specs: list[dict[str, Any] | None]) -> None:
    """Add to each compute node's spec the operator schema its ``inputs`` carry (``op``: name,
    values, shapes, types), where they name types (a second pass: the columns leave ``inputs``
    undecoded)."""
    at = 0
    for batch in rt.batches():
        nodes = batch if isinstance(batch, Sequence) else list(batch)
        for j in np.flatnonzero(compute[at:at + len(nodes)]).tolist():
            n = nodes[j]
            if n.HasField("inputs") and n.inputs.types:
                spec = specs[at + j]
                assert spec is not None
                spec["op"] = {"name": n.name, "values": n.inputs.values, "shapes": n.inputs.shapes,
                              "types": n.inputs.types}
        at += len(nodes)


def _names(cols: NodeColumns, order: np.ndarray) -> list[str]:
    """The nodes' names in ``order``."""
    ptr, flat = cols.names_in(order)
    data, bounds = flat.tobytes(), ptr.tolist()
    return [data[lo:hi].decode() for lo, hi in zip(bounds[:-1], bounds[1:])]


def load_plan(rt: RankTrace, operators: bool = True) -> Plan:
    """Read one rank into a :class:`Plan` from its columns (a TraceFormatError names the file
    and node of a bad node, a dependency on a missing id, a duplicate id, a dependency cycle or
    a collective without a valid kind); with ``operators`` (``-O compute=real``) compute nodes carry their operator
    schema (``spec["op"]``)."""
    where = rt.label
    cols = node_columns(rt, _ATTRS)
    classes = classify_nodes(cols)
    specs: list[dict[str, Any] | None] = [None] * len(cols)
    compute = classes.kind == NodeKind.COMPUTE
    _compute_specs(cols.attrs, np.flatnonzero(compute), specs)
    _memory_specs(cols.attrs, np.flatnonzero(classes.kind == NodeKind.MEMORY), specs)
    _comm_specs(cols, classes.kind, specs, where)
    if operators and compute.any():
        _operators(rt, compute, specs)
    order = np.argsort(cols.ids, kind="stable")
    g = cols.graph(order)
    if g.duplicates:
        raise TraceFormatError("duplicate node id", where, f"node {int(g.ids[g.duplicates[0]])}")
    if g.missing:
        nid, dep = g.missing[0]
        raise TraceFormatError(f"depends on node {dep}, which is not in the file", where, f"node {nid}")
    topo, left = g.topo_order()
    if left:  # its nodes would never become ready: the workers would wait for ever
        cycle = g.find_cycle(left)
        raise TraceFormatError("dependency cycle: " + " -> ".join(map(str, cycle + cycle[:1])), where,
                               f"node {cycle[0]}")
    at = order.tolist()
    plan = Plan(rt.rank, where)
    plan.ids = g.ids.tolist()
    plan.names = _names(cols, order)
    plan.kind = [KIND_NAMES[k] for k in classes.kind[order].tolist()]
    plan.res = classes.resource[order].tolist()
    plan.cpu = classes.is_cpu[order].tolist()
    plan.spec = [specs[i] for i in at]
    plan.dur_ns = [d * 1000 for d in cols.duration_micros[order].tolist()]
    plan.indeg = g.in_degree().tolist()
    ptr, idx = g.children()
    plan.child_ptr = np.asarray(ptr).tolist()
    plan.child_idx = np.asarray(idx).tolist()
    plan.dep_ptr = np.asarray(g.dep_ptr).tolist()
    plan.deps = np.asarray(g.deps).tolist()
    plan.path_ns = int(g.longest_path(np.array(plan.dur_ns, dtype=np.int64) // 1000, topo)[0]) * 1000
    return plan
