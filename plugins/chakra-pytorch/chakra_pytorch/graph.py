"""Build one rank's Chakra graph from a host ET and (optionally) its Kineto trace.

Rules (see docs/pytorch.md):

* lanes: each host thread is a lane of CPU nodes in start order (each depends on the one before);
* between threads: a node depends on the last node of another thread that started after the node
  before it on its own lane (a hand-off: a thread start or join, autograd's device threads), unless
  Kineto shows that node still running when this one started;
  each GPU stream is a lane of kernels in start order;
* CPU -> GPU: a kernel depends on the CPU node that launched it (Kineto ``External id``);
* GPU -> CPU: a CPU node that synchronises (device/stream/event sync, blocking memcpy) depends on
  the last kernel started before the call on the streams it waits for;
* communication without GPU kernels (gloo, or no Kineto) is a node beside its thread's lane: it
  depends on the lane node before it and on the previous communication of that thread (issue
  order); the lane node that waits for it depends on it: the next one for blocking calls, else
  the first one that starts after the communication ended (Kineto), else the thread's last one;
* durations: Kineto's, rounded on a common microsecond grid so that sums telescope; an operator
  with a communication node nested inside keeps its exclusive time;
* idle gaps: when a lane node starts later than all its dependencies ended, a gap of at least
  ``min_idle_us`` becomes an ``[idle]`` COMP node between them (a shorter one is added to the
  node's own duration as overhead) (also from the ``ProfilerStep`` start to the first node and
  from the last node to the step end), so the graph's critical path reproduces the observed step.
"""

from __future__ import annotations

import bisect
import heapq
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from chakra_core.attrs import make_attr
from chakra_core.errors import TraceFormatError
from chakra_core.schema import PG_INIT_NAME, GlobalMetadata, Node, NodeType

from .comms import COLL_TYPES, CommInfo, kind_of_kernel, tensors_in
from .hostet import KEEP_ATTRS, HostTrace
from .kineto import KinetoTrace
from .schema_version import PyTorchTraceWarning

__all__ = ["OutNode", "RankGraph", "build_graph"]

IDLE_NAME = "[idle]"
_IDLE_ATTRS = (("idle", True),)


@dataclass(slots=True)
class OutNode:
    """A Chakra node in compact form (turned into a protobuf Node only when written)."""

    id: int
    name: str
    type: int
    start: int = -1  # microseconds from the trace origin, -1 when unknown
    dur: int = 0
    ctrl: list[int] = field(default_factory=list)
    data: list[int] = field(default_factory=list)
    cpu: bool = True  # is_cpu_op
    host: tuple | None = None  # KEEP_ATTRS values of the host op (copied when written)
    extra: list[tuple[str, Any]] | tuple = ()
    io: bytes | None = None

    def attrs(self) -> Iterator[tuple[str, Any]]:
        """The node's attributes as (name, value) pairs, in the order they are written."""
        yield "is_cpu_op", self.cpu
        if self.host is not None:
            for k, v in zip(KEEP_ATTRS, self.host):
                if isinstance(v, int) and not isinstance(v, bool):
                    yield k, v
                elif k == "op_schema" and isinstance(v, str) and v:
                    yield k, v
        yield from self.extra

    @property
    def end(self) -> int:
        """Observed end (start + duration) in microseconds."""
        return self.start + self.dur

    def to_node(self) -> Node:
        """The protobuf Node."""
        n = Node(id=self.id, name=self.name, type=self.type, duration_micros=max(self.dur, 0))
        if self.start >= 0:
            n.start_time_micros = self.start
        n.ctrl_deps.extend(self.ctrl)
        n.data_deps.extend(self.data)
        n.attr.extend(make_attr(k, v) for k, v in self.attrs())
        if self.io is not None:
            iv, ish, ity, ov, osh, oty = orjson.loads(self.io)
            n.inputs.values, n.inputs.shapes, n.inputs.types = repr(iv), repr(ish), repr(ity)
            n.outputs.values, n.outputs.shapes, n.outputs.types = repr(ov), repr(osh), repr(oty)
        return n


@dataclass
class RankGraph:
    """One rank's converted graph: nodes in topological order, metadata, facts for checks."""

    rank: int
    nodes: list[OutNode]
    metadata: GlobalMetadata
    groups: dict[str, list[int]]
    step_us: int | None  # the recorded ProfilerStep spans, first start to last end
    warnings: list[str] = field(default_factory=list)

    def protobuf_nodes(self) -> Iterator[Node]:
        """Yield the nodes as protobuf messages."""
        for n in self.nodes:
            yield n.to_node()


def _global(rank_in_group: int | None, ranks: list[int]) -> int | None:
    if rank_in_group is None:
        return None
    if ranks and 0 <= rank_in_group < len(ranks):
        return ranks[rank_in_group]
    return rank_in_group


def _check_same_run(host: HostTrace, kt: KinetoTrace) -> None:
    if host.pid is not None and kt.pid is not None and host.pid != kt.pid:
        raise TraceFormatError(f"Kineto trace is from another run (pid {kt.pid}, host ET pid {host.pid})",
                               kt.path)
    named = [(op.rf_id, op.name) for op in host.ops if op.rf_id >= 0]
    if not named:
        return
    found = [(rf, name) for rf, name in named if rf in kt.ops]
    differ = sum(1 for rf, name in found if kt.ops[rf][3] != name)
    if not found or differ > max(2, len(found) // 10):
        raise TraceFormatError(
            f"Kineto trace is from another run ({len(found)} of {len(named)} host ops found, "
            f"{differ} with another name)", kt.path)


def build_graph(host: HostTrace, kt: KinetoTrace | None, rank: int, world: int,
                groups: dict[str, list[int]], data_deps: bool = False, idle_gaps: bool = True,
                min_idle_us: int = 10) -> RankGraph:
    """Convert one rank (see the module docstring for the rules)."""
    notes: list[str] = []
    if kt is not None:
        _check_same_run(host, kt)
    ops = host.ops
    next_id = max([op.id for op in ops], default=0) + 1
    out: dict[int, OutNode] = {}

    # ---- timing on a common integer-microsecond grid
    t0 = None
    step = None
    if kt is not None:
        if kt.steps:
            # the recorded steps of the profiling thread, first start to last end
            first = min(kt.steps, key=lambda s: s[0])
            mine = [s for s in kt.steps if s[2] == first[2]]
            end = max(s[0] + s[1] for s in mine)
            step = (first[0], end - first[0], first[2], first[3])
        starts = [kt.ops[op.rf_id][0] for op in ops if op.rf_id in kt.ops]
        starts += [g.ts for g in kt.gpu]
        if step is not None:
            starts.append(step[0])
        t0 = min(starts) if starts else 0.0

    def grid(x: float) -> int:
        return int(round(x - t0))

    span: dict[int, tuple[int, int]] = {}
    missing = 0
    if kt is not None:
        for op in ops:
            rec = kt.ops.get(op.rf_id)
            if rec is None:
                missing += 1
                continue
            span[op.id] = (grid(rec[0]), grid(rec[0] + rec[1]))
    if missing:
        notes.append(f"{missing} of {len(ops)} host ops have no Kineto event: their duration is 0")

    # ---- GPU events and their owners
    gpu_owner: list[int] = []
    comm_kernel_owner: set[int] = set()
    if kt is not None:
        for g in kt.gpu:
            ext = g.external if g.external >= 0 else kt.corr_ext.get(g.correlation, -1)
            rf = kt.ext_rf.get(ext, -1)
            owner = host.rf_owner.get(rf, -1)
            gpu_owner.append(owner)
            if kind_of_kernel(g.name) is not None and owner >= 0:
                comm_kernel_owner.add(owner)

    # ---- CPU lanes and off-lane communication
    by_id = {op.id: op for op in ops}
    nested: dict[int, int] = {}
    for op in ops:
        if op.parent_sel >= 0 and op.id in span and op.parent_sel in span:
            s, e = span[op.id]
            nested[op.parent_sel] = nested.get(op.parent_sel, 0) + (e - s)
    lanes: dict[int, list[OutNode]] = {}
    last_comm: dict[int, OutNode] = {}
    pending_waits: list[tuple[OutNode, int, bool]] = []  # (comm node, tid, blocking)
    lane_pos: dict[int, tuple[int, int]] = {}  # node id -> (tid, index in lane)
    for op in ops:
        lane = lanes.setdefault(op.tid, [])
        s, e = span.get(op.id, (-1, -1))
        comm = op.comm
        if comm is not None and op.id not in comm_kernel_owner:
            node = OutNode(op.id, op.name, comm.node_type, io=op.io, host=op.keep,
                           extra=_comm_attrs(comm, rank, groups, world))
            w0, w1 = _worker_span(comm, kt, grid)
            if w0 is not None:
                node.start, node.dur = w0, w1 - w0
            elif s >= 0:
                node.start, node.dur = s, e - s
            prev = op.parent_sel if op.parent_sel in out else (lane[-1].id if lane else None)
            if prev is not None:
                node.ctrl.append(prev)
            lc = last_comm.get(op.tid)
            if lc is not None and lc.id not in node.ctrl:
                node.ctrl.append(lc.id)
            last_comm[op.tid] = node
            blocking = comm.kind in ("send", "recv") or comm.async_op is False
            pending_waits.append((node, op.tid, blocking))
            out[node.id] = node
            lane_pos[node.id] = (op.tid, len(lane))  # waits apply to lane nodes from here on
            continue
        node = OutNode(op.id, op.name, NodeType.COMP_NODE, io=op.io, host=op.keep)
        if s >= 0:
            node.start, node.dur = s, max(0, e - s - nested.get(op.id, 0))
        elif lane and lane[-1].start >= 0:
            node.start = lane[-1].end
        if lane:
            node.ctrl.append(lane[-1].id)
        lane_pos[node.id] = (op.tid, len(lane))
        lane.append(node)
        out[node.id] = node

    # ---- hand-offs between host threads
    _cross_thread(lanes)

    # ---- who waits for each off-lane communication
    unwaited: dict[int, list[int]] = {}
    for comm_node, tid, blocking in pending_waits:
        lane = lanes.get(tid, [])
        first = lane_pos[comm_node.id][1]
        waiter = None
        if blocking:
            waiter = lane[first] if first < len(lane) else None
        elif kt is not None and comm_node.start >= 0:
            for n in lane[first:]:
                if n.start >= comm_node.end:
                    waiter = n
                    break
        elif first < len(lane):
            waiter = lane[-1]
        if waiter is None:
            unwaited.setdefault(tid, []).append(comm_node.id)
        elif comm_node.id not in waiter.ctrl:
            waiter.ctrl.append(comm_node.id)

    # ---- GPU nodes: launch deps, stream order, syncs
    streams: dict[tuple[int, int], list[tuple[Any, OutNode]]] = {}
    if kt is not None:
        for g, owner in zip(kt.gpu, gpu_owner):
            kind = kind_of_kernel(g.name)
            op = by_id.get(owner)
            node = OutNode(next_id, g.name, NodeType.COMP_NODE, start=grid(g.ts),
                           dur=grid(g.ts + g.dur) - grid(g.ts))
            next_id += 1
            node.cpu = False
            node.extra = [("stream", g.stream), ("device", g.device)]
            if kind is not None:
                comm = op.comm if op is not None else None
                if comm is None:
                    notes.append(f"NCCL kernel {g.name} has no communication op: kept as compute")
                else:
                    node.type = comm.node_type
                    node.extra += _comm_attrs(comm, rank, groups, world)
            if owner in out:
                node.ctrl.append(owner)
            lane = streams.setdefault((g.device, g.stream), [])
            if lane:
                node.ctrl.append(lane[-1][1].id)
            lane.append((g, node))
            out[node.id] = node
        _add_syncs(kt, host, streams, out, grid)

    # ---- idle gaps on CPU lanes
    step_us = None
    if kt is not None and step is not None:
        step_us = grid(step[0] + step[1]) - grid(step[0])
    if kt is not None and idle_gaps:
        main_tid = _main_lane(lanes, kt, step, host)
        for tid, lane in lanes.items():
            window = (grid(step[0]), grid(step[0] + step[1])) if (step and tid == main_tid) else None
            next_id = _insert_idle(lane, out, window, next_id, min_idle_us, unwaited.get(tid, []))

    # ---- data dependencies (tensor producer -> consumer) between CPU nodes
    if data_deps:
        _add_data_deps(lanes)

    # ---- process-group metadata node and topological order
    nodes = _toposort(out)
    if groups:
        meta_node = _pg_node(next_id, groups, world)
        nodes.insert(0, meta_node)
    for msg in notes[:1] + ([f"... and {len(notes) - 1} more"] if len(notes) > 1 else []):
        warnings.warn(f"{host.path}: {msg}", PyTorchTraceWarning, stacklevel=3)
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.extend([make_attr("source", "pytorch"), make_attr("schema", host.schema),
                      make_attr("rank", rank)])
    if host.pid is not None:
        meta.attr.append(make_attr("pid", host.pid))
    return RankGraph(rank, nodes, meta, groups, step_us, notes)


def _cross_thread(lanes: dict[int, list[OutNode]], scan: int = 64) -> None:
    """Inter-thread dependencies: a lane node depends on the last node of another host thread
    that started after the node before it on its own lane (host-ET ids count op starts across
    threads), unless Kineto shows that node still running when this one started.
    """
    if len(lanes) < 2:
        return
    everything = sorted((n.id, tid, n) for tid, lane in lanes.items() for n in lane)
    ids = [x[0] for x in everything]
    for tid, lane in lanes.items():
        prev_id = -1
        for n in lane:
            lo, hi = bisect.bisect_right(ids, prev_id), bisect.bisect_left(ids, n.id)
            for k in range(hi - 1, max(lo, hi - scan) - 1, -1):
                _, other, m = everything[k]
                if other == tid or (n.start >= 0 and m.start >= 0 and m.end > n.start):
                    continue
                if m.id not in n.ctrl:
                    n.ctrl.append(m.id)
                break
            prev_id = n.id


def _comm_attrs(comm: CommInfo, rank: int, groups: dict[str, list[int]], world: int
                ) -> list[tuple[str, Any]]:
    pg = comm.pg_name if comm.pg_name is not None else "0"
    ranks = groups.get(pg) or list(range(world))
    attrs: list[tuple[str, Any]] = [("comm_size", int(comm.size_bytes)), ("pg_name", pg)]
    if comm.kind in ("send", "recv"):
        peer = _global(comm.peer, ranks)
        src, dst = (rank, peer) if comm.kind == "send" else (peer, rank)
        attrs += [("tensor_size", int(comm.size_bytes)), ("comm_tag", int(comm.tag))]
        if src is not None:
            attrs.append(("comm_src", int(src)))
        if dst is not None:
            attrs.append(("comm_dst", int(dst)))
    else:
        attrs.insert(0, ("comm_type", int(COLL_TYPES[comm.kind])))
        root = _global(comm.root, ranks)
        if root is not None:
            attrs.append(("root", int(root)))
    return attrs


def _worker_span(comm: CommInfo, kt: KinetoTrace | None, grid) -> tuple[int | None, int | None]:
    if kt is None or not comm.worker_rfs:
        return None, None
    spans = [kt.ops[rf] for rf in comm.worker_rfs if rf in kt.ops]
    if not spans:
        return None, None
    return grid(min(s[0] for s in spans)), grid(max(s[0] + s[1] for s in spans))


def _add_syncs(kt: KinetoTrace, host: HostTrace, streams, out, grid) -> None:
    """GPU -> CPU: the CPU node of each sync call waits for the last work launched before it.

    Work launched by the same node is skipped: the node both launches and waits for it, which
    its own duration already covers (a dependency would be a cycle).  When an edge is added, the
    time the call blocked is taken out of the node's duration: the edge carries the wait.
    """
    launches = {k: [kt.corr_ts.get(g.correlation, g.ts) for g, _ in lane] for k, lane in streams.items()}
    for sy in kt.syncs:
        ext = sy.external if sy.external >= 0 else kt.corr_ext.get(sy.correlation, -1)
        node = out.get(host.rf_owner.get(kt.ext_rf.get(ext, -1), -1))
        if node is None:
            continue
        waited = False
        for key, lane in streams.items():
            if sy.stream >= 0 and sy.kind != "device" and key[1] != sy.stream:
                continue
            i = bisect.bisect_right(launches[key], sy.ts) - 1
            # work the node launched itself is waited for inside it (its duration covers that)
            while i >= 0 and node.id in lane[i][1].ctrl:
                i -= 1
            if i >= 0:
                waited = True
                if lane[i][1].id not in node.ctrl:
                    node.ctrl.append(lane[i][1].id)
        if waited and node.start >= 0:
            # the dependency now carries the wait: the node keeps only its own work, and ends
            # where it was seen to end
            wait = min(node.dur, grid(sy.ts + sy.dur) - grid(sy.ts))
            node.start += wait
            node.dur -= wait


def _add_data_deps(lanes: dict[int, list[OutNode]]) -> None:
    order = sorted((n for lane in lanes.values() for n in lane), key=lambda n: n.id)
    producer: dict[tuple[int, int], int] = {}
    for n in order:
        if n.io is None:
            continue
        iv, _ish, _ity, ov, _osh, _oty = orjson.loads(n.io)
        for t in tensors_in(iv):
            p = producer.get((t[0], t[1]))
            if p is not None and p != n.id and p not in n.data and p not in n.ctrl:
                n.data.append(p)
        for t in tensors_in(ov):
            producer[(t[0], t[1])] = n.id


def _main_lane(lanes, kt: KinetoTrace, step, host: HostTrace) -> int | None:
    """The host tid whose ops run on the Kineto thread of the ProfilerStep span."""
    if step is None:
        return None
    for tid, lane in lanes.items():
        for n in lane:
            op_rf = n.host[0] if n.host is not None else None
            rec = kt.ops.get(op_rf) if op_rf is not None else None
            if rec is not None:
                if rec[2] == step[2]:
                    return tid
                break
    return None


def _insert_idle(lane: list[OutNode], out: dict[int, OutNode], window, next_id: int,
                 min_idle: int, unwaited: list[int]) -> int:
    prev_end = window[0] if window else None
    last = None
    for n in lane:
        if n.start < 0:
            continue
        ends = [out[d].end for d in n.ctrl if d in out and out[d].start >= 0]
        if last is None and prev_end is not None:
            ends.append(prev_end)
        ready = max(ends) if ends else None
        if ready is not None and ready < n.start < ready + min_idle:
            n.dur += n.start - ready  # a short gap: counted as the node's own overhead
            n.start = ready
        elif ready is not None and n.start > ready:
            idle = OutNode(next_id, IDLE_NAME, NodeType.COMP_NODE, start=ready, dur=n.start - ready,
                           extra=_IDLE_ATTRS)
            next_id += 1
            idle.ctrl, n.ctrl = n.ctrl, [idle.id]
            out[idle.id] = idle
        last = n
    if not window or last is None:
        return next_id
    # the end of the step: an [idle] node after the last op and the communications nobody waited for
    ready = max([last.end] + [out[c].end for c in unwaited if out[c].start >= 0])
    if window[1] > ready and (window[1] - ready >= min_idle or unwaited):
        idle = OutNode(next_id, IDLE_NAME, NodeType.COMP_NODE, start=ready, dur=window[1] - ready,
                       extra=_IDLE_ATTRS, ctrl=[last.id] + unwaited)
        next_id += 1
        out[idle.id] = idle
    elif window[1] > last.end and ready == last.end:
        last.dur = window[1] - last.start
    return next_id


def _toposort(out: dict[int, OutNode]) -> list[OutNode]:
    indeg = {i: 0 for i in out}
    users: dict[int, list[int]] = {}
    for n in out.values():
        deps = [d for d in dict.fromkeys(n.ctrl + n.data) if d in out]
        n.ctrl = [d for d in dict.fromkeys(n.ctrl) if d in out]
        n.data = [d for d in dict.fromkeys(n.data) if d in out and d not in n.ctrl]
        indeg[n.id] = len(deps)
        for d in deps:
            users.setdefault(d, []).append(n.id)
    heap = [(max(n.start, 0), n.id) for n in out.values() if indeg[n.id] == 0]
    heapq.heapify(heap)
    order: list[OutNode] = []
    while heap:
        _, i = heapq.heappop(heap)
        order.append(out[i])
        for u in users.get(i, ()):
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(heap, (max(out[u].start, 0), u))
    if len(order) != len(out):
        raise TraceFormatError("the converted graph has a dependency cycle")
    return order


def _pg_node(nid: int, groups: dict[str, list[int]], world: int) -> OutNode:
    items = [{"pg_name": "0", "pg_desc": "default_pg", "ranks": list(range(world))}]
    items += [{"pg_name": k, "ranks": v} for k, v in groups.items() if k != "0"]
    text = orjson.dumps(items).decode()
    node = OutNode(nid, PG_INIT_NAME, NodeType.METADATA_NODE)
    node.io = orjson.dumps([[text], [[]], ["String"], [], [], []])
    return node
