"""One rank's Chakra graph from its Kineto trace alone (no host execution trace).

The Kineto trace is turned into the two inputs of the host ET + Kineto conversion, and the same
graph builder (:func:`build_graph`) runs on them, so both inputs follow one set of rules
(docs/pytorch.md):

* the host ops: on each CPU thread, an operator event (an ``ns::op`` name, or an event that
  launches GPU work and has no operator inside it) with no operator around it (nesting by time, see
  :mod:`kineto_graph_events`); ``c10d::*`` ops and a ``record_param_comms`` outside them are
  communication ops; a node's id is its event's start order;
* the timing: every CPU event, GPU kernel/memcpy/memset, sync call, ``cuda_sync`` event and
  ``ProfilerStep`` span as :func:`read_kineto` reads them; a GPU activity belongs to the op
  around the runtime call with its ``correlation``;
* a stream waiting for another: Kineto's ``cuda_sync`` "Stream Wait Event" when the trace has
  them, else each ``cudaStreamWaitEvent`` paired with the last ``cudaEventRecord`` before it on
  its thread: the event's stream is the stream of the last work that thread launched before the
  record, the waiting stream the stream of the first work it launched after the wait.
"""

from __future__ import annotations

import bisect
import re
import warnings
from typing import Any

from chakra_core import TraceFormatError

from .comms import CommInfo, merge_param_comms
from .commwork import WorkAnnotation, attach_annotations
from .graph import ConvertedRank, build_graph
from .groupmatch import SetMatch
from .hostet import HostOp, HostTrace
from .intmap import IntMap
from .kineto import KinetoTrace, StreamWait, read_kineto
from .kineto_graph_comms import annotation_elem_bytes, c10d_comm, group_of, param_comm
from .kineto_graph_events import CpuCollector, CpuEvent, CpuSide
from .nogc import cycle_collection_off
from .schema_version import PyTorchTraceWarning

__all__ = ["KINETO_SCHEMA", "convert_kineto_rank", "kineto_host"]

#: the ``schema`` of a rank converted from Kineto alone
KINETO_SCHEMA = "kineto"

#: an operator's name: one namespace and the op (``aten::mm``, ``c10d::allreduce_``); record
#: functions named like ``torch::distributed::reducer::mul_out`` are annotations
_OPERATOR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_.]*")
_NOT_OPS = ("autograd::",)
_RECORD_CALLS = ("cudaEventRecord", "hipEventRecord", "cudaEventRecordWithFlags")
_WAIT_CALLS = ("cudaStreamWaitEvent", "hipStreamWaitEvent")


def convert_kineto_rank(path: str, rank: int, world: int, groups: dict[str, list[int]],
                        distributed: dict[str, Any] | None = None, idle_gaps: bool = True,
                        min_idle_us: int = 10, match: SetMatch | None = None) -> ConvertedRank:
    """Convert one rank's Kineto trace to a :class:`ConvertedRank` (see the module docstring;
    read with the cyclic garbage collector off, :func:`.nogc.cycle_collection_off`); ``match``
    names the groups of collectives whose op does not."""
    with cycle_collection_off():
        host, kt, cpu = kineto_host(path, world, distributed)
        if kt.unfinished:
            ts, name = min(kt.unfinished)
            warnings.warn(f"{path}: {len(kt.unfinished)} event(s) still running when the profiler stopped "
                          f"(Kineto 'finished': false), the first {name} at ts {ts:.3f} us: their end is the "
                          "profiler's stop (a communication's node is then timed by its c10d op alone)",
                          PyTorchTraceWarning, stacklevel=2)
        if match is not None:
            match.apply(rank, host.ops)
        _warn_unsized(path, host)
        if not kt.stream_waits:
            kt.stream_waits = _event_waits(cpu, kt)
        _as_keys(kt, cpu)
        named = {g[0]: g[1] for e in cpu.events if e.args is not None and (g := group_of(e.args)) is not None}
        return build_graph(host, kt, rank, world, {**named, **groups}, idle_gaps=idle_gaps,
                           min_idle_us=min_idle_us)


def kineto_host(path: str, world: int, distributed: dict[str, Any] | None = None
                ) -> tuple[HostTrace, KinetoTrace, CpuSide]:
    """Read a Kineto trace: its host ops (as a host ET would give them), the trace, its CPU side."""
    collector = CpuCollector()
    kt = read_kineto(path, frozenset(), distributed, on_event=collector.take)
    cpu = collector.finish(kt.pid)
    if cpu.unwritable:  # the traced process's events only: the others are left out
        e, why = cpu.unwritable[0]
        raise TraceFormatError(f"{e.name}: inputs cannot be kept ({why})", path, f"event at ts {e.ts:.3f} us")
    return _host_trace(path, kt, cpu, world), kt, cpu


def _warn_unsized(path: str, host: HostTrace) -> None:
    """Warn when communication ops have no size in the trace (recorded without shapes)."""
    unsized = [op.name for op in host.ops if op.comm is not None and not op.comm.size_bytes
               and op.comm.kind != "barrier"]
    if unsized:
        warnings.warn(f"{path}: {len(unsized)} communication op(s) have no size in the trace (no 'Input "
                      f"Dims' nor message sizes), the first {unsized[0]}: their comm_size is 0 (profile "
                      "with record_shapes=True)", PyTorchTraceWarning, stacklevel=3)


def _is_operator(e: CpuEvent) -> bool:
    return _OPERATOR.fullmatch(e.name) is not None and not e.name.startswith(_NOT_OPS)


def _host_trace(path: str, kt: KinetoTrace, cpu: CpuSide, world: int) -> HostTrace:
    """The host ops of the trace, with their communications and the owner of every event."""
    events = cpu.events
    launchers = _leaf_launchers(events, {cpu.corr_owner[g.correlation] for g in kt.gpu
                                         if g.correlation in cpu.corr_owner})
    comms: dict[int, CommInfo] = {}
    params: list[tuple[int, CommInfo]] = []
    workers: list[CpuEvent] = []
    for e in events:
        info = _comm_of(e, path)
        if info is not None and e.name.startswith("c10d::"):
            comms[e.key] = info
        elif info is not None:
            params.append((e.key, info))
        elif e.name.startswith(("gloo:", "nccl:")) and not e.unfinished:
            workers.append(e)  # an unfinished one ends at the profiler's stop: its op keeps its own span
    anchors = [_anchor_above(events, comms, key) for key, _info in params]
    anchored = [(a, info) for a, (_key, info) in zip(anchors, params) if a >= 0]
    comms.update((key, info) for a, (key, info) in zip(anchors, params) if a < 0)
    _attach_workers(events, comms, workers, path)
    _reduce_scatter_sizes(events, comms, world)
    for anchor, info in anchored:  # record_param_comms says the sizes and group: it wins
        merge_param_comms(comms[anchor], info)
    owner = [-1] * len(events)
    for e in events:
        up = owner[e.parent] if e.parent >= 0 else -1
        is_op = _is_operator(e) or e.key in launchers
        owner[e.key] = e.key if e.key in comms or (is_op and up < 0) else up
    ops = [_host_op(e, comms.get(e.key), owner[e.parent] if e.parent >= 0 else -1)
           for e in events if owner[e.key] == e.key]
    rf_owner = IntMap()
    rf_owner.set_pairs(range(len(owner)), owner)
    return HostTrace(path, KINETO_SCHEMA, kt.pid, ops, rf_owner, {})


def _leaf_launchers(events: list[CpuEvent], launchers: set[int]) -> set[int]:
    """The events that launch GPU work and have no operator inside them (an Inductor/Triton
    kernel call; not a step or ``## forward ##`` annotation around operators)."""
    around_ops: set[int] = set()
    for e in reversed(events):  # children come after their parents
        if e.parent >= 0 and (e.key in around_ops or _is_operator(e)):
            around_ops.add(e.parent)
    return {k for k in launchers if k not in around_ops and events[k].name}


def _comm_of(e: CpuEvent, path: str, list_esize: int | None = None) -> CommInfo | None:
    """The communication of a ``c10d::*`` or ``record_param_comms`` event, else None;
    ``list_esize``: the element size of a ``c10d::*`` op's tensor lists (see :func:`c10d_comm`)."""
    try:
        if e.name.startswith("c10d::"):
            return c10d_comm(e.name, _kept_args(e), list_esize)
        if e.name == "record_param_comms":
            return param_comm(_kept_args(e))
    except ValueError as err:
        raise TraceFormatError(f"{e.name}: {err}", path, f"event at ts {e.ts:.3f} us") from None
    return None


def _kept_args(e: CpuEvent) -> dict[str, Any]:
    """The arguments of a communication event or annotation, which keeps them (see
    :class:`CpuEvent`); a reader asking for those of another event is a bug."""
    if e.args is None:
        raise AssertionError(f"{e.name}: its arguments were not kept")
    return e.args


def _anchor_above(events: list[CpuEvent], comms: dict[int, CommInfo], key: int) -> int:
    """The nearest ``c10d::*`` communication event around event ``key``, -1 for none."""
    p = events[key].parent
    while p >= 0 and p not in comms:
        p = events[p].parent
    return p


def _attach_workers(events: list[CpuEvent], comms: dict[int, CommInfo], workers: list[CpuEvent],
                    path: str) -> None:
    """Tie each ``gloo:*``/``nccl:*`` annotation to its op (by issue order, as for a host ET);
    a tensor list whose dtype the op does not name takes the annotation's."""
    order = {e.order_id(): e.key for e in workers}
    rf_of = [e.order_id() for e in events]
    attach_annotations((WorkAnnotation(e.order_id(), e.tid, frozenset()) for e in workers), comms, rf_of,
                       {k: events[k].tid for k in comms})
    for key, info in comms.items():
        info.worker_rfs = [order[o] for o in info.worker_rfs if o in order]
        e = events[key]
        types = _kept_args(e).get("Input type")
        if not info.worker_rfs or not isinstance(types, list) or "TensorList" not in types:
            continue
        esize = annotation_elem_bytes(_kept_args(events[info.worker_rfs[0]]))
        if esize:
            fixed = _comm_of(e, path, esize)
            if fixed is not None:
                info.size_bytes = fixed.size_bytes


def _reduce_scatter_sizes(events: list[CpuEvent], comms: dict[int, CommInfo], world: int) -> None:
    """A reduce-scatter's input is a list of lists, whose dims Kineto leaves empty: its size is
    then the output shard times the group size (the world's when the group is not named)."""
    for key, info in comms.items():
        if info.kind != "reduce_scatter" or info.size_bytes:
            continue
        shard = c10d_comm("c10d::allreduce_", _kept_args(events[key]), None)
        size = info.pg_size or world
        if shard is not None:
            info.size_bytes = shard.size_bytes * size


def _host_op(e: CpuEvent, comm: CommInfo | None, parent_sel: int) -> HostOp:
    """The host op of an event: its key as node id and record-function id, Kineto's sequence
    number and forward thread, and its input dims and types as the node's inputs."""
    keep = (e.key, None, e.seq, None, e.tid, e.fwd_tid, None)
    return HostOp(e.key, e.name, e.tid, e.key, keep, e.io, comm, parent_sel)


def _event_waits(cpu: CpuSide, kt: KinetoTrace) -> list[StreamWait]:
    """GPU -> GPU waits from ``cudaEventRecord``/``cudaStreamWaitEvent`` calls (module docstring)."""
    calls = {c.correlation: c for c in cpu.calls if c.correlation >= 0}
    launches: dict[int, list[tuple[float, int, int]]] = {}  # tid -> (launch ts, device, stream)
    for g in kt.gpu:
        c = calls.get(g.correlation)
        if c is not None:
            launches.setdefault(c.tid, []).append((c.ts, g.device, g.stream))
    for lst in launches.values():
        lst.sort()
    waits: list[StreamWait] = []
    last_record: dict[int, Any] = {}
    for c in sorted(cpu.calls, key=lambda c: c.ts):
        if c.name in _RECORD_CALLS:
            last_record[c.tid] = c
        elif c.name in _WAIT_CALLS and c.tid in last_record:
            w = _one_wait(launches.get(c.tid, []), last_record[c.tid], c)
            if w is not None:
                waits.append(w)
    return waits


def _one_wait(launches: list[tuple[float, int, int]], record: Any, wait: Any) -> StreamWait | None:
    """The stream wait of one record/wait pair on a thread, None when a stream is unknown."""
    i = bisect.bisect_right(launches, (record.ts, float("inf"), float("inf"))) - 1
    j = bisect.bisect_left(launches, (wait.ts, -1, -1))
    if i < 0 or j >= len(launches):
        return None
    _, src_dev, src = launches[i]
    _, dev, dst = launches[j]
    if src_dev != dev or src == dst:
        return None
    return StreamWait(wait.ts, dev, dst, src, record.correlation)


def _as_keys(kt: KinetoTrace, cpu: CpuSide) -> None:
    """Re-key the timing by event key: every CPU event's span, each GPU activity and sync
    owned by the event around its runtime call (its ``External id`` is not used)."""
    kt.ops = {e.key: (e.ts, e.dur, e.tid, e.name) for e in cpu.events}
    kt.ext_rf = IntMap()
    kt.ext_rf.set_pairs(range(len(cpu.events)), range(len(cpu.events)))  # the keys are 0..n-1
    kt.corr_ext = dict(cpu.corr_owner)
    for g in kt.gpu:
        g.external = cpu.corr_owner.get(g.correlation, -1)
    for sy in kt.syncs:
        sy.external = cpu.corr_owner.get(sy.correlation, -1)

