"""What each node of a rank is to the simulator, from the rank's :class:`chakra_core.NodeColumns`.

Per node: its kind and resource (the core's rule, :func:`chakra_core.classify_nodes`, with one
exception of the simulator's: a broadcast with a duration replays it on the communication
resource, as ASTRA-sim does; it keeps its :class:`CollectiveArgs` for the report and is counted
in ``replayed``) and its duration (ns), decided by arrays over all nodes at once; per
communication and memory node a small tuple (``extra``) built from the columns.  A
node is read as the attribute getters of the core read it (``get_int``, ``get_str``,
``get_bool``, ``get_attr``), so the columns give the same answers as decoding each node.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from chakra_core import (
    AttrColumn,
    CommType,
    NodeColumns,
    NodeKind,
    NodeResource,
    NodeType,
    TraceFormatError,
    classify_nodes,
)
from chakra_core.system import SystemDescription, roofline_ns

__all__ = ["ATTRS", "MAX_NS", "K_COMP", "K_MEM", "K_COLL", "K_SEND", "K_RECV", "K_NOP", "R_CPU", "R_COMP", "R_COMM",
           "R_NONE", "CollectiveArgs", "MessageArgs", "MemoryArgs", "NodeArgs", "RankFacts", "Classified", "classify",
           "system_inputs"]

K_COMP, K_MEM, K_COLL, K_SEND, K_RECV, K_NOP = (int(k) for k in NodeKind)
R_CPU, R_COMP, R_COMM, R_NONE = (int(r) for r in NodeResource)

#: the attributes the simulator reads
ATTRS = ("is_cpu_op", "num_ops", "tensor_size", "comm_type", "comm_size", "pg_name", "involved_dim",
         "comm_src", "comm_dst", "comm_tag")
#: durations and simulated times are int64 nanoseconds (the engine's start/end arrays)
MAX_NS = (1 << 63) - 1
#: every CommType value, ascending
_COMM_TYPES = np.array(sorted(int(c) for c in CommType), np.int64)
_MODELLED = (CommType.ALL_REDUCE, CommType.ALL_GATHER, CommType.REDUCE_SCATTER, CommType.ALL_TO_ALL)
#: exact in float64: roofline inputs below this are timed in numpy, larger ones one by one
_EXACT = 1 << 53
#: node types and the broadcast comm type as plain ints (numpy compares an array with an IntEnum
#: member about 2.5 us slower, a few dozen times a rank)
_COMP, _LOAD, _STORE, _COLL, _SEND, _RECV, _BROADCAST = (int(v) for v in (
    NodeType.COMP_NODE, NodeType.MEM_LOAD_NODE, NodeType.MEM_STORE_NODE, NodeType.COMM_COLL_NODE,
    NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE, CommType.BROADCAST))


class CollectiveArgs(NamedTuple):
    """A collective node's arguments: comm type, ``comm_size`` bytes, process group ("" for
    the whole set) and ``involved_dim`` (None: every dimension)."""

    comm_type: int
    size: int
    pg: str
    involved: tuple[bool, ...] | None


class MessageArgs(NamedTuple):
    """A send's or receive's arguments: the peer rank, ``comm_tag`` and bytes."""

    peer: int
    tag: int
    size: int


class MemoryArgs(NamedTuple):
    """A memory load's or store's arguments: ``tensor_size`` bytes."""

    size: int


NodeArgs = CollectiveArgs | MessageArgs | MemoryArgs


class RankFacts:
    """What a rank's nodes need besides their per-node arrays: ``extra`` (node -> its
    :data:`NodeArgs`) and
    ``has_p2p``, ``has_mem``, ``groups``, ``roofline_fallbacks``, ``unmodelled`` (collective
    kinds the network times by a mapping to another kind), ``replayed`` (collective kind -> its
    nodes that replay their recorded duration instead), ``unknown_types``."""

    def __init__(self) -> None:
        self.extra: dict[int, NodeArgs] = {}
        self.has_p2p = False
        self.has_mem = False
        self.groups: set[str] = set()
        self.roofline_fallbacks = 0
        self.unmodelled: set[str] = set()
        self.replayed: dict[str, int] = {}
        self.unknown_types: set[int] = set()

    def take_facts(self, other: RankFacts) -> None:
        """Share ``other``'s facts (the objects themselves, not copies)."""
        self.__dict__.update({k: other.__dict__[k] for k in vars(RankFacts())})


class Classified(RankFacts):
    """Per node (file order): ``kind``, ``resource`` (uint8), ``dur_ns`` (int64), and the
    rank's :class:`RankFacts`."""

    def __init__(self, kind: np.ndarray, resource: np.ndarray):
        super().__init__()
        self.kind = kind
        self.resource = resource
        self.dur_ns = np.zeros(len(kind), np.int64)


def system_inputs(sd: SystemDescription) -> tuple[bool, float, float]:
    """What :func:`classify` reads of ``sd``: whether the roofline is on, the peak (TFLOP/s) and
    the local memory bandwidth (GB/s)."""
    return sd.roofline_enabled, sd.peak_perf, sd.local_mem_bw


def classify(cols: NodeColumns, sd: SystemDescription, where: str, replay_comm: bool = False) -> Classified:
    """Kinds, resources, durations and extras of every node of ``cols`` (columns of
    :data:`ATTRS`); with ``replay_comm`` (``-O comm=replay``) communication nodes keep their
    recorded durations (else 0); raises TraceFormatError naming the first bad node in file order."""
    classes = classify_nodes(cols)
    out = Classified(classes.kind, classes.resource)
    types, cpu = cols.types, classes.is_cpu
    micros = cols.duration_micros
    _check_nodes(cols, types, micros, cpu, sd.roofline_enabled, where)
    us = np.minimum(micros, np.uint64(MAX_NS // 1000)).astype(np.int64) * 1000
    comp = types == _COMP
    _compute(out, cols, comp, cpu, us, sd, where)
    mem = (types == _LOAD) | (types == _STORE)
    if mem.any():
        out.has_mem = True
        out.dur_ns[mem] = us[mem]
        size = cols.attrs["tensor_size"]
        for i in np.flatnonzero(mem).tolist():
            out.extra[i] = MemoryArgs(size.get_int(i, 0) or 0)
    _collectives(out, cols, (types == _COLL).nonzero()[0], us, replay_comm)
    p2p = ((types == _SEND) | (types == _RECV)).nonzero()[0]
    _p2p(out, cols, p2p)
    if replay_comm:
        out.dur_ns[p2p] = us[p2p]
    unknown = types > _COLL
    if unknown.any():
        out.unknown_types.update(np.unique(types[unknown]).tolist())
    return out


def _check_nodes(cols: NodeColumns, types: np.ndarray, micros: np.ndarray, cpu: np.ndarray, roofline: bool,
                 where: str) -> None:
    """The first node in file order whose replayed duration passes 2**63-1 ns, whose
    collective or message lacks what it needs, or whose size passes int64, raises (as reading
    node by node would)."""
    long = micros > np.uint64(MAX_NS // 1000)
    timed = (types == _COMP) | (types == _LOAD) | (types == _STORE)
    ct = cols.attrs["comm_type"]
    coll = types == _COLL
    broadcast = coll & ct.is_int & (ct.ints == _BROADCAST) & (micros > 0)
    send, recv = types == _SEND, types == _RECV
    bad_ct = coll & ~(ct.is_int & _is_comm_type(ct.ints))
    no_peer = (send & ~_has_int(cols.attrs["comm_dst"])) | (recv & ~_has_int(cols.attrs["comm_src"]))
    timed_by_roofline = (types == _COMP) & ~cpu & _has_int(cols.attrs["num_ops"]) & roofline
    wide_comm, wide_tensor = _wide_sizes(cols, coll, send | recv, (types == _LOAD) | (types == _STORE))
    bad = (long & (timed | broadcast) & ~timed_by_roofline) | bad_ct | no_peer | wide_comm | wide_tensor
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    nid = int(cols.ids[i])
    if bad_ct[i]:
        raise TraceFormatError(f"collective without a valid comm_type ({ct.get_int(i)})", where, f"node {nid}")
    if no_peer[i]:
        key = "comm_dst" if send[i] else "comm_src"
        raise TraceFormatError(f"{'send' if send[i] else 'recv'} without {key}", where, f"node {nid}")
    if wide_comm[i] or wide_tensor[i]:
        key = "comm_size" if wide_comm[i] else "tensor_size"
        raise TraceFormatError(f"{key} = {cols.attrs[key].get_int(i)} bytes does not fit int64", where, f"node {nid}")
    raise TraceFormatError(f"node {nid}: duration of {int(micros[i]) * 1000} ns passes 2**63-1 ns", where)


def _wide_sizes(cols: NodeColumns, coll: np.ndarray, p2p: np.ndarray, mem: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The nodes whose size the simulator reads is an integer past int64: in ``comm_size`` (a
    collective's or a message's), in ``tensor_size`` (a memory op's, a message's without
    ``comm_size``)."""
    comm_size, tensor = cols.attrs["comm_size"], cols.attrs["tensor_size"]
    if not (comm_size.others or tensor.others):  # every integer fits int64
        none = np.zeros(len(coll), bool)
        return none, none
    has_comm = _has_int(comm_size)
    return ((coll | p2p) & has_comm & ~comm_size.is_int,
            (mem | (p2p & ~has_comm)) & _has_int(tensor) & ~tensor.is_int)


def _is_comm_type(values: np.ndarray) -> np.ndarray:
    """Per value, whether it is a :class:`CommType` (a lookup in the sorted values: ``np.isin``
    costs about 20 us even on a few values)."""
    at = np.minimum(np.searchsorted(_COMM_TYPES, values), len(_COMM_TYPES) - 1)
    return _COMM_TYPES[at] == values


def _has_int(col: AttrColumn) -> np.ndarray:
    """Rows where ``get_int`` finds an integer (a bool counts)."""
    if not col.others:
        return col.is_int
    wide = np.zeros(len(col.is_int), bool)
    wide[[i for i in col.others if col.get_int(i) is not None]] = True
    return col.is_int | wide


def _compute(out: Classified, cols: NodeColumns, comp: np.ndarray, cpu: np.ndarray, us: np.ndarray,
             sd: SystemDescription, where: str) -> None:
    """Compute nodes: the CPU's or the accelerator's, their duration replayed or (accelerator
    compute on a roofline system with an integer ``num_ops``) the roofline's; at least 1 ns."""
    dur = us.copy()
    if sd.roofline_enabled:
        acc = comp & ~cpu
        ops_col = cols.attrs["num_ops"]
        has = _has_int(ops_col)
        out.roofline_fallbacks = int((acc & ~has).sum())
        dur[acc & has] = _roofline(cols, np.flatnonzero(acc & has), sd, where)
    out.dur_ns[comp] = np.maximum(dur[comp], 1)


def _roofline(cols: NodeColumns, rows: np.ndarray, sd: SystemDescription, where: str) -> np.ndarray:
    """:func:`roofline_ns` of each row, in numpy where the inputs are exact in float64."""
    ops_col, size_col = cols.attrs["num_ops"], cols.attrs["tensor_size"]
    ops = ops_col.ints[rows]
    size = np.where(size_col.is_int[rows], size_col.ints[rows], 0)
    exact = ops_col.is_int[rows] & (np.abs(ops) < _EXACT) & (np.abs(size) < _EXACT)
    out = np.zeros(len(rows), np.int64)
    o, s = ops[exact].astype(np.float64), size[exact].astype(np.float64)
    peak = sd.peak_perf * 1e12
    with np.errstate(divide="ignore", invalid="ignore"):
        perf = np.where(s <= 0, peak, np.minimum(sd.local_mem_bw * 1e9 * (o / np.where(s > 0, s, 1)), peak))
        ns = o / perf * 1e9
    ok = (o > 0) & np.isfinite(ns) & (ns < 2.0 ** 63)
    out[np.flatnonzero(exact)[ok]] = ns[ok].astype(np.int64)
    slow = np.flatnonzero(exact)[~ok & (o > 0)].tolist() + np.flatnonzero(~exact).tolist()
    for k in slow:
        i = int(rows[k])
        ns = roofline_ns(ops_col.get_int(i), size_col.get_int(i, 0) or 0, sd.peak_perf, sd.local_mem_bw)
        if ns > MAX_NS:
            raise TraceFormatError(f"node {int(cols.ids[i])}: duration of {ns} ns passes 2**63-1 ns", where)
        out[k] = ns
    return out


def _collectives(out: Classified, cols: NodeColumns, rows: np.ndarray, us: np.ndarray, replay: bool) -> None:
    """Collectives: :class:`CollectiveArgs`;
    a broadcast with a duration replays it (as ASTRA-sim: a compute-like node on the
    communication resource, counted in ``replayed``) unless ``replay`` (then every collective
    keeps its recorded duration and takes part in the matching, and none is mapped)."""
    if not rows.size:
        return
    a = cols.attrs
    ct_col, size_col, pg_col, inv_col = a["comm_type"], a["comm_size"], a["pg_name"], a["involved_dim"]
    names: dict[int, str] = {}
    pg_names = pg_col.others
    kind, dur = out.kind, out.dur_ns
    # per row as lists: a size that is an integer within int64, and whether involved_dim is there
    sized, size, has_inv = size_col.is_int[rows].tolist(), size_col.ints[rows].tolist(), inv_col.present[rows].tolist()
    has_pg = pg_col.present[rows].tolist()
    for k, (i, ct, recorded) in enumerate(zip(rows.tolist(), ct_col.ints[rows].tolist(), us[rows].tolist())):
        if ct not in names:
            names[ct] = CommType(ct).name
        pg = pg_names.get(i) if has_pg[k] else ""  # none, or a string value as it is
        if not isinstance(pg, str):  # any other value through get_str
            pg = pg_col.get_str(i, "") or ""
        pg = "" if pg == "0" else pg
        inv = inv_col.get(i) if has_inv[k] else None
        dims = tuple(bool(x) for x in inv) if isinstance(inv, list) else None
        nbytes = size[k] if sized[k] else size_col.get_int(i, 0) or 0
        out.extra[i] = CollectiveArgs(ct, nbytes, pg, dims)
        if ct == _BROADCAST and recorded > 0 and not replay:
            kind[i], dur[i] = K_COMP, recorded
            out.replayed[names[ct]] = out.replayed.get(names[ct], 0) + 1
            continue
        if not replay and ct not in _MODELLED:  # IntEnum members equal their values
            out.unmodelled.add(names[ct])
        out.groups.add(pg)
        if replay:
            dur[i] = recorded


def _p2p(out: Classified, cols: NodeColumns, rows: np.ndarray) -> None:
    """Sends and receives: :class:`MessageArgs`, bytes from ``comm_size`` else ``tensor_size``."""
    if not rows.size:
        return
    out.has_p2p = True
    a = cols.attrs
    dst, src, tag_col, size_col, tensor = a["comm_dst"], a["comm_src"], a["comm_tag"], a["comm_size"], a["tensor_size"]
    send = cols.types == _SEND
    for i in rows.tolist():
        s = bool(send[i])
        comm_size = size_col.get_int(i, None)
        size = (tensor.get_int(i, 0) or 0) if comm_size is None else comm_size
        peer = (dst if s else src).get_int(i)
        out.extra[i] = MessageArgs(peer, tag_col.get_int(i, 0) or 0, size)
