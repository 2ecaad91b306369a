"""Build one rank's Chakra graph from a host ET and (optionally) its Kineto trace.

Rules (see docs/pytorch.md):

* lanes: each host thread is a lane of CPU nodes in start order (each depends on the one before);
* between threads: a node depends on the last node of another thread that started after the node
  before it on its own lane (a hand-off: a thread start or join, autograd's device threads), unless
  Kineto shows that node still running when this one started;
  each GPU stream is a lane of kernels in start order;
* CPU -> GPU: a kernel depends on the CPU node that launched it (Kineto ``External id``);
* GPU -> CPU: a CPU node that synchronises (device/stream/event sync, blocking memcpy) depends on
  the last kernel launched before the call on the streams it waits for;
* GPU -> GPU: after a stream waits for an event of another stream, its next kernel depends on
  the last kernel launched on that stream before the event was recorded;
* communication without GPU kernels (gloo, or no Kineto) is a node beside its thread's lane: it
  depends on the lane node before it and, for a collective, on the thread's previous collective
  (issue order); point-to-point ops of one batch run side by side; the lane node that waits
  for it depends on it: the next one for blocking calls, else the first one that starts after
  the communication ended (Kineto), else the thread's last one;
* durations: Kineto's, rounded on a common microsecond grid so that sums telescope; an operator
  with a communication node nested inside keeps its exclusive time;
* idle gaps: when a lane node starts later than all its dependencies ended, a gap of at least
  ``min_idle_us`` becomes an ``[idle]`` COMP node between them (a shorter one is added to the
  node's own duration as overhead), also from the ``ProfilerStep`` start to the first node and
  from the last node to the step end, so the graph's critical path reproduces the observed step;
  and before a communication whose work started later than its dependencies ended (the c10d op's
  own time and the hand-off to gloo's worker thread), an ``[idle]`` node that is not a CPU op.
"""

from __future__ import annotations

import bisect
import itertools
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, sub
from typing import Any

from chakra_core import GlobalMetadata, NodeType, TraceFormatError, make_attr

from .comms import COLL_TYPES, CommInfo, kind_of_kernel
from .deps import add_data_deps, add_stream_waits, add_syncs, cross_thread, insert_handoffs, insert_idle, main_lane
from .extlink import matched_fraction
from .hostet import HostOp, HostTrace
from .intmap import IntMap
from .kineto import KinetoTrace
from .outnode import ConvertedRank, OutNode, pg_init_node, toposort
from .schema_version import PyTorchTraceWarning
from .spantable import Span, extents_of

__all__ = ["OutNode", "ConvertedRank", "build_graph"]


@dataclass
class RankBuild:
    """One rank's graph while the passes of :func:`build_graph` build it."""

    host: HostTrace
    kt: KinetoTrace | None
    rank: int
    world: int
    groups: dict[str, list[int]]
    next_id: int = 0
    #: microseconds of the trace at the origin of the integer grid
    t0: float = 0.0
    #: the recorded steps: (start, duration, Kineto tid, name), or None
    step: Span | None = None
    #: host-op id -> (start, end) on the grid, for the ops Kineto recorded
    span: dict[int, tuple[int, int]] = field(default_factory=dict)
    out: dict[int, OutNode] = field(default_factory=dict)
    #: host tid -> its lane of CPU nodes in start order
    lanes: dict[int, list[OutNode]] = field(default_factory=dict)
    #: host-op id -> communication info, of the ops that have one
    comm_ops: dict[int, CommInfo] = field(default_factory=dict)
    #: communication node id -> index in its thread's lane where waits for it apply from
    lane_pos: dict[int, int] = field(default_factory=dict)
    #: off-lane communication nodes: (node, tid, blocking)
    comm_waits: list[tuple[OutNode, int, bool]] = field(default_factory=list)
    #: tid -> communication nodes no lane node waits for
    unwaited: dict[int, list[int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def grid(self, x: float) -> int:
        """Microseconds from the trace origin, rounded to the common integer grid."""
        return round(x - self.t0)

    def grid_all(self, times: Iterable[float]) -> Iterator[int]:
        """:meth:`grid` of each of ``times``, without a call per time."""
        return map(round, map(sub, times, itertools.repeat(self.t0)))


def build_graph(host: HostTrace, kt: KinetoTrace | None, rank: int, world: int,
                groups: dict[str, list[int]], data_deps: bool = False, idle_gaps: bool = True,
                min_idle_us: int = 10) -> ConvertedRank:
    """Convert one rank (see the module docstring for the rules), pass by pass; ``host`` and
    ``kt`` are consumed (their per-op tables are emptied once the graph is built)."""
    if kt is not None:
        _check_same_run(host, kt)
    b = RankBuild(host, kt, rank, world, groups, next_id=max([op.id for op in host.ops], default=0) + 1)
    place_on_grid(b)
    gpu_owner, comm_kernel_owner = gpu_owners(b)
    build_lanes(b, comm_kernel_owner)
    cross_thread(b.lanes)
    add_comm_waiters(b)
    streams = add_gpu_nodes(b, gpu_owner)
    main_tid = None
    if kt is not None:
        add_syncs(kt, host, streams, b.out, b.grid, b.lanes)
        add_stream_waits(kt, streams)
        main_tid = main_lane(b.lanes, kt, b.step, host)
    let_go(b)
    if kt is not None and idle_gaps:
        add_idle_gaps(b, main_tid, min_idle_us)
    if data_deps:
        add_data_deps(b.lanes)
    return finish(b)


#: a Kineto trace in which fewer host ops are found is of another run
_SAME_RUN = 0.5


def _check_same_run(host: HostTrace, kt: KinetoTrace) -> None:
    """Refuse a Kineto trace of another run, naming the evidence: both pids and the fraction of
    host ops found in it (by Record function id, or External id for older traces).  One process
    records both files of a pair, so another pid is another run (or another rank), however many
    host ops a run of the same program finds."""
    if kt.link is None:
        return
    key, found, total = kt.link
    frac = matched_fraction(kt)
    other_pid = host.pid is not None and kt.pid is not None and host.pid != kt.pid
    if frac < _SAME_RUN or other_pid:
        raise TraceFormatError(
            f"Kineto trace is from another run: pid {kt.pid}, host ET pid {host.pid}; {found} of {total} "
            f"host ops ({100 * frac:.1f}%) found in it by {key} and name", kt.path)


def place_on_grid(b: RankBuild) -> None:
    """The grid's origin (the earliest start: a step, a host op, a GPU activity), the recorded
    steps of the profiling thread (first start to last end), and each recorded host op's span."""
    kt = b.kt
    if kt is None:
        return
    ops = b.host.ops
    found, starts, ends = extents_of(kt.ops, map(attrgetter("rf_id"), ops))
    bounds = (min(starts), max(ends)) if starts else None
    if bounds is not None:
        _trim_to_host(b, kt, *bounds)
    if kt.steps:
        first = min(kt.steps, key=lambda s: s[0])
        mine = [s for s in kt.steps if s[2] == first[2]]
        end = max(s[0] + s[1] for s in mine)
        b.step = (first[0], end - first[0], first[2], first[3])
    origins = [g.ts for g in kt.gpu]
    if bounds is not None:
        origins.append(bounds[0])
    if b.step is not None:
        origins.append(b.step[0])
    b.t0 = min(origins) if origins else 0.0
    ids = map(attrgetter("id"), itertools.compress(ops, found))
    b.span.update(zip(ids, zip(b.grid_all(starts), b.grid_all(ends))))
    if len(starts) < len(ops):
        b.notes.append(f"{len(ops) - len(starts)} of {len(ops)} host ops have no Kineto event: their duration is 0")


def _trim_to_host(b: RankBuild, kt: KinetoTrace, lo: float, hi: float) -> None:
    """Keep the GPU activities launched, and the steps that ran, while the host ET's ops ran
    (from ``lo`` to ``hi``): a profiler may record several iterations around the one the host
    ET holds."""
    kept = [g for g in kt.gpu if lo <= kt.corr_ts.get(g.correlation, g.ts) <= hi]
    if len(kept) < len(kt.gpu):
        b.notes.append(f"{len(kt.gpu) - len(kept)} of {len(kt.gpu)} GPU activities were launched before the "
                       "first or after the last host op (in another iteration, or with no op around): left out")
        kt.gpu = kept
    kt.steps = [s for s in kt.steps if s[0] < hi and s[0] + s[1] > lo]


def gpu_owners(b: RankBuild) -> tuple[list[int], set[int]]:
    """The host op that launched each GPU activity (-1 when unknown), and the ops that launched
    NCCL kernels (their kernels are the communication nodes, not the op)."""
    owners: list[int] = []
    comm_kernel_owner: set[int] = set()
    kt = b.kt
    if kt is None:
        return owners, comm_kernel_owner
    for g in kt.gpu:
        ext = g.external if g.external >= 0 else kt.corr_ext.get(g.correlation, -1)
        owner = b.host.rf_owner.get(kt.ext_rf.get(ext, -1), -1)
        owners.append(owner)
        if kind_of_kernel(g.name) is not None and owner >= 0:
            comm_kernel_owner.add(owner)
    return owners, comm_kernel_owner


def build_lanes(b: RankBuild, comm_kernel_owner: set[int]) -> None:
    """Each host thread's lane of CPU nodes, and the communication nodes beside the lanes.

    The host ops are handed over one by one: each op (and its span) is let go as soon as its
    node exists, so that the two are never held whole together; ``b.comm_ops`` keeps the
    communication info of the ops that have one.
    """
    nested: dict[int, int] = {}
    for op in b.host.ops:
        if op.parent_sel >= 0 and op.id in b.span and op.parent_sel in b.span:
            s, e = b.span[op.id]
            nested[op.parent_sel] = nested.get(op.parent_sel, 0) + (e - s)
    last_comm: dict[int, OutNode] = {}
    ops = b.host.ops
    ops.reverse()
    while ops:
        op = ops.pop()
        if op.comm is not None:
            b.comm_ops[op.id] = op.comm
        lane = b.lanes.setdefault(op.tid, [])
        if op.comm is not None and op.id not in comm_kernel_owner:
            _comm_node(b, op, op.comm, lane, last_comm)
        else:
            _lane_node(b, op, lane, nested.get(op.id, 0))


#: the type of a lane node (the enum's member, looked up once)
_COMP_NODE = NodeType.COMP_NODE
#: the span of a host op Kineto did not record
_NO_SPAN = (-1, -1)


def _lane_node(b: RankBuild, op: HostOp, lane: list[OutNode], nested_us: int) -> None:
    """A CPU node on its thread's lane, after the lane's last node; an op around a nested
    communication keeps its exclusive time."""
    node = OutNode(op.id, op.name, _COMP_NODE)  # the slots are set after: keywords cost more
    node.io, node.host = op.io, op.keep
    s, e = b.span.pop(op.id, _NO_SPAN)
    if s >= 0:
        dur = e - s - nested_us
        node.start, node.dur = s, (dur if dur > 0 else 0)
    elif lane and lane[-1].start >= 0:
        node.start = lane[-1].end
    if lane:
        node.ctrl.append(lane[-1].id)
    lane.append(node)
    b.out[op.id] = node


def _comm_node(b: RankBuild, op: HostOp, comm: CommInfo, lane: list[OutNode],
               last_comm: dict[int, OutNode]) -> None:
    """A communication node beside its thread's lane, timed by its own gloo/NCCL work."""
    node = OutNode(op.id, op.name, comm.node_type, io=op.io, host=op.keep,
                   extra=_comm_attrs(comm, b.rank, b.groups, b.world))
    s, e = b.span.pop(op.id, (-1, -1))
    node.issued = s
    worker = _worker_span(comm, b.kt, b.grid)
    if worker is not None:
        node.start, node.dur = worker[0], worker[1] - worker[0]
        if comm.kind in ("send", "recv") and 0 <= s < node.start:
            # a point-to-point message spans from its c10d op (the annotation may open later)
            # to the end of the transfer (the annotation's end)
            node.start, node.dur = s, worker[1] - s
    elif s >= 0:
        node.start, node.dur = s, e - s
    # after the lane node before it, or inside the host op around it; a communication
    # nested in another one (batch_isend_irecv) runs beside it, not after it
    parent = b.out.get(op.parent_sel)
    if parent is not None and parent.type == NodeType.COMP_NODE:
        node.ctrl.append(parent.id)
    elif lane:
        node.ctrl.append(lane[-1].id)
    if comm.kind not in ("send", "recv"):
        # collectives keep their issue order (ranks match them by order), unless Kineto
        # shows the previous one still running when this one was issued (gloo runs
        # them side by side on its worker threads)
        lc = last_comm.get(op.tid)
        if lc is not None and lc.start > node.start >= 0:
            node.start = lc.start  # a worker takes the thread's collectives in issue order
        issued = s if s >= 0 else node.start
        if lc is not None and lc.id not in node.ctrl and not (issued >= 0 and lc.end > issued):
            node.ctrl.append(lc.id)
        last_comm[op.tid] = node
    blocking = comm.kind in ("send", "recv") or comm.async_op is False
    b.comm_waits.append((node, op.tid, blocking))
    b.out[node.id] = node
    b.lane_pos[node.id] = len(lane)  # waits apply to lane nodes from here on


def add_comm_waiters(b: RankBuild) -> None:
    """The lane node that waits for each communication: the next one for a blocking call, else
    the first one that started after it ended (Kineto), else the thread's last one."""
    latest: dict[int, list[int]] = {}  # tid -> running maximum of the lane's starts
    for comm_node, tid, blocking in b.comm_waits:
        lane = b.lanes.get(tid, [])
        after = b.lane_pos[comm_node.id]
        waiter = None
        if blocking:
            waiter = lane[after] if after < len(lane) else None
        elif b.kt is not None and comm_node.start >= 0:
            if tid not in latest:
                latest[tid] = list(itertools.accumulate((n.start for n in lane), max))
            k = _first_start_at(lane, latest[tid], after, comm_node.end)
            waiter = lane[k] if k is not None else None
        elif after < len(lane):
            waiter = lane[-1]
        if waiter is None:
            b.unwaited.setdefault(tid, []).append(comm_node.id)
        elif comm_node.id not in waiter.ctrl:
            waiter.ctrl.append(comm_node.id)


def add_gpu_nodes(b: RankBuild, gpu_owner: list[int]) -> dict[tuple[int, int], list[tuple[Any, OutNode]]]:
    """One node per GPU activity, after the host op that launched it and the activity before
    it on its stream; NCCL kernels are the communication nodes.  Returns the stream lanes."""
    streams: dict[tuple[int, int], list[tuple[Any, OutNode]]] = {}
    kt = b.kt
    if kt is None:
        return streams
    for g, owner in zip(kt.gpu, gpu_owner):
        node = OutNode(b.next_id, g.name, NodeType.COMP_NODE, start=b.grid(g.ts),
                       dur=b.grid(g.ts + g.dur) - b.grid(g.ts))
        b.next_id += 1
        node.cpu = False
        node.extra = [("stream", g.stream), ("device", g.device)]
        if kind_of_kernel(g.name) is not None:
            comm = b.comm_ops.get(owner)
            if comm is None:
                b.notes.append(f"NCCL kernel {g.name} has no communication op: kept as compute")
            else:
                node.type = comm.node_type
                node.extra += _comm_attrs(comm, b.rank, b.groups, b.world)
        if owner in b.out:
            node.ctrl.append(owner)
        stream_lane = streams.setdefault((g.device, g.stream), [])
        if stream_lane:
            node.ctrl.append(stream_lane[-1][1].id)
        stream_lane.append((g, node))
        b.out[node.id] = node
    return streams


def add_idle_gaps(b: RankBuild, main_tid: int | None, min_idle_us: int) -> None:
    """``[idle]`` nodes where a lane waited for nothing, the main lane (host tid ``main_tid``)
    covering the step."""
    step = b.step
    for tid, lane in b.lanes.items():
        window = (b.grid(step[0]), b.grid(step[0] + step[1])) if (step and tid == main_tid) else None
        b.next_id = insert_idle(lane, b.out, window, b.next_id, min_idle_us, b.unwaited.get(tid, []))
    comms = [(c, tid, c.type == NodeType.COMM_COLL_NODE) for c, tid, _blocking in b.comm_waits]
    b.next_id = insert_handoffs(comms, b.out, b.next_id, min_idle_us)


def finish(b: RankBuild) -> ConvertedRank:
    """The nodes in topological order behind the process-group node, the rank's metadata, and
    one warning for the notes."""
    nodes = toposort(b.out)
    if b.groups:
        nodes.insert(0, pg_init_node(b.next_id, b.groups, b.world))
    notes = b.notes
    for msg in notes[:1] + ([f"... and {len(notes) - 1} more"] if len(notes) > 1 else []):
        warnings.warn(f"{b.host.path}: {msg}", PyTorchTraceWarning, stacklevel=4)
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.extend([make_attr("source", "pytorch"), make_attr("schema", b.host.schema),
                      make_attr("rank", b.rank)])
    if b.host.pid is not None:
        meta.attr.append(make_attr("pid", b.host.pid))
    step_us = b.grid(b.step[0] + b.step[1]) - b.grid(b.step[0]) if b.step is not None else None
    return ConvertedRank(b.rank, nodes, meta, b.groups, step_us, notes)


def let_go(b: RankBuild) -> None:
    """Empty the per-op tables of the inputs and of the timing passes once every node is placed
    and timed: the last passes (idle gaps, data dependencies, the order) work on the nodes alone,
    and their own memory does not come on top of these (:func:`build_graph` consumes its host
    trace and Kineto trace)."""
    b.span.clear()
    b.lane_pos.clear()
    b.host.ops.clear()
    b.host.rf_owner = IntMap()
    kt = b.kt
    if kt is not None:
        kt.ops = {}
        for table in (kt.by_ext, kt.corr_ext, kt.corr_ts, kt.corr_tid):
            table.clear()
        kt.ext_rf = IntMap()
        kt.gpu.clear()
        kt.syncs.clear()
        kt.stream_waits.clear()


def _global(rank_in_group: int | None, ranks: Sequence[int]) -> int | None:
    if rank_in_group is None:
        return None
    if ranks and 0 <= rank_in_group < len(ranks):
        return ranks[rank_in_group]
    return rank_in_group


def _first_start_at(lane: list[OutNode], latest: list[int], first: int, t: int) -> int | None:
    """Index of the first node of ``lane`` at or after ``first`` that starts at ``t`` or later.

    ``latest`` is the running maximum of the lane's starts: a bisection finds the answer in
    O(log n) (a scan per communication was quadratic on long traces); only when a node before
    ``first`` started later than ``lane[first]`` (starts out of order) is the lane scanned.
    """
    k = bisect.bisect_left(latest, t, lo=first)
    if k == len(lane):
        return None
    if k > first or lane[k].start >= t:
        return k
    return next((i for i in range(first, len(lane)) if lane[i].start >= t), None)


def _comm_attrs(comm: CommInfo, rank: int, groups: dict[str, list[int]], world: int
                ) -> list[tuple[str, Any]]:
    pg = comm.pg_name if comm.pg_name is not None else "0"
    ranks = groups.get(pg) or comm.group_ranks() or range(world)
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


def _worker_span(comm: CommInfo, kt: KinetoTrace | None, grid) -> tuple[int, int] | None:
    if kt is None or not comm.worker_rfs:
        return None
    spans = [rec for rf in comm.worker_rfs if (rec := kt.ops.get(rf)) is not None]
    if not spans:
        return None
    return grid(min(s[0] for s in spans)), grid(max(s[0] + s[1] for s in spans))
