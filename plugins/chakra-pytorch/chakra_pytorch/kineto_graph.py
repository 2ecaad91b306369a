"""One rank's Chakra graph from its Kineto trace alone (no host execution trace).

The Kineto trace is turned into the two inputs of the host ET + Kineto conversion, and the same
graph builder (:func:`build_graph`) runs on them, so both inputs follow one set of rules
(docs/pytorch.md):

* the host ops: on each CPU thread, an operator event (an ``ns::op`` name, or an event that
  launches GPU work and has no operator inside it) with no operator around it (nesting by time, see
  :mod:`kineto_graph_events`); ``c10d::*`` ops and a ``record_param_comms`` outside them are
  communication ops, and so is a ``gloo:*``/``nccl:*`` work annotation that no op in the trace
  issued (:func:`_lone_works`); a node's id is its event's start order;
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
import warnings
from array import array
from typing import Any

from chakra_core import TraceFormatError

from .comms import CommInfo, merge_param_comms
from .commwork import WorkAnnotation, attach_annotations
from .graph import ConvertedRank, build_graph
from .groupmatch import SetMatch
from .hostet import HostOp, HostTrace
from .intmap import IntMap
from .kineto import KinetoTrace, StreamWait, read_kineto
from .kineto_graph_comms import (
    annotation_comm,
    annotation_elem_bytes,
    c10d_comm,
    group_of,
    param_comm,
    work_bytes,
)
from .kineto_graph_events import CpuCollector, CpuSide, EventSpans, is_operator
from .nogc import cycle_collection_off
from .schema_version import PyTorchTraceWarning

__all__ = ["KINETO_SCHEMA", "convert_kineto_rank", "kineto_host"]

#: the ``schema`` of a rank converted from Kineto alone
KINETO_SCHEMA = "kineto"

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
        _warn_outlasting(path, cpu)
        _warn_lone_works(path, cpu)
        if match is not None:
            match.apply(rank, host.ops)
        _warn_unsized(path, host, cpu)
        if not kt.stream_waits:
            kt.stream_waits = _event_waits(cpu, kt)
        _as_keys(kt, cpu)
        named = {g[0]: g[1] for args in cpu.events.args.values() if (g := group_of(args)) is not None}
        del cpu  # its events go when build_graph lets the timing go (kt.ops reads from them till then)
        return build_graph(host, kt, rank, world, {**named, **groups}, idle_gaps=idle_gaps,
                           min_idle_us=min_idle_us)


def kineto_host(path: str, world: int, distributed: dict[str, Any] | None = None
                ) -> tuple[HostTrace, KinetoTrace, CpuSide]:
    """Read a Kineto trace: its host ops (as a host ET would give them), the trace, its CPU side."""
    collector = CpuCollector()
    kt = read_kineto(path, frozenset(), distributed, on_event=collector.take)
    cpu = collector.finish(kt.pid)
    if cpu.unwritable:  # the traced process's events only: the others are left out
        key, why = cpu.unwritable[0]
        raise TraceFormatError(f"{cpu.events.names[key]}: inputs cannot be kept ({why})", path,
                               f"event at ts {cpu.events.ts[key]:.3f} us")
    return _host_trace(path, kt, cpu, world), kt, cpu


def _warn_outlasting(path: str, cpu: CpuSide) -> None:
    """Warn of operators that end after the event they started in (not nested in it)."""
    if cpu.outlasting:
        k, up = cpu.outlasting[0]
        e = cpu.events
        warnings.warn(f"{path}: {len(cpu.outlasting)} operator(s) start inside another event on their thread "
                      f"and end after it, the first {e.names[k]} at ts {e.ts[k]:.3f} us inside {e.names[up]} "
                      f"(ending {e.ts[k] + e.dur[k] - e.ts[up] - e.dur[up]:.3f} us after it): each is taken "
                      "as not inside the events it outlasts (their times overlap on the thread)",
                      PyTorchTraceWarning, stacklevel=3)


def _warn_lone_works(path: str, cpu: CpuSide) -> None:
    """Warn of the work annotations no op in the trace issued: those made collectives of their
    own (their count, time, and how many are put on the default group) and those left out."""
    made = [k for k, alone in cpu.lone_works if alone]
    left = [k for k, alone in cpu.lone_works if not alone]
    if made:
        unnamed = sum(1 for k in made if not cpu.kept_args(k).get("Process Group Name"))
        guess = f"; {unnamed} name no process group: put on the default group '0'" if unnamed else ""
        warnings.warn(f"{path}: {_works_note(cpu, made)}: each is a collective of its own (kind from its name, "
                      f"size from its 'Input Dims' x 'Input type', timed by its span or its NCCL kernel){guess}",
                      PyTorchTraceWarning, stacklevel=3)
    if left:
        warnings.warn(f"{path}: {_works_note(cpu, left)}: left out (a send or receive names no peer, a "
                      "scatter's or reduce-scatter's tensors are not its size, or the kind is unknown)",
                      PyTorchTraceWarning, stacklevel=3)


def _works_note(cpu: CpuSide, keys: list[int]) -> str:
    """'N gloo:/nccl: work annotation(s) ... T us in all, the first NAME at ts ...' of ``keys``."""
    e = cpu.events
    total = sum(e.dur[k] for k in keys)
    return (f"{len(keys)} gloo:/nccl: work annotation(s) with no communication op in the trace (no op issued "
            "before a gloo: one, none around an nccl: one), "
            f"{total:.3f} us of work in all, the first {e.names[keys[0]]} at ts {e.ts[keys[0]]:.3f} us")


def _warn_unsized(path: str, host: HostTrace, cpu: CpuSide) -> None:
    """Warn when communication ops have no size in the trace; suggest ``record_shapes`` only when
    their events were recorded without shapes (no ``Input Dims``)."""
    unsized = [op for op in host.ops if op.comm is not None and not op.comm.size_bytes
               and op.comm.kind != "barrier"]
    if not unsized:
        return
    if any("Input Dims" in cpu.kept_args(op.id) for op in unsized):
        why = ("recorded with shapes, but their tensor lists' dims are empty and no gloo:/nccl: work "
               "annotation gives them")
    else:
        why = "no 'Input Dims' nor message sizes: profile with record_shapes=True"
    first = unsized[0]
    warnings.warn(f"{path}: {len(unsized)} communication op(s) have no size in the trace, the first "
                  f"{first.name} at ts {cpu.events.ts[first.id]:.3f} us: their comm_size is 0 ({why})",
                  PyTorchTraceWarning, stacklevel=3)


def _host_trace(path: str, kt: KinetoTrace, cpu: CpuSide, world: int) -> HostTrace:
    """The host ops of the trace, with their communications and the owner of every event."""
    names, parent = cpu.events.names, cpu.parent
    launchers = _leaf_launchers(cpu, {cpu.corr_owner[g.correlation] for g in kt.gpu
                                      if g.correlation in cpu.corr_owner})
    comms: dict[int, CommInfo] = {}
    params: list[tuple[int, CommInfo]] = []
    workers: list[int] = []
    for key, name in enumerate(names):
        info = _comm_of(cpu, key, path)
        if info is not None and name.startswith("c10d::"):
            comms[key] = info
        elif info is not None:
            params.append((key, info))
        elif name.startswith(("gloo:", "nccl:")) and not cpu.events.unfinished[key]:
            workers.append(key)  # an unfinished one ends at the profiler's stop: its op keeps its own span
    anchors = [_anchor_above(parent, comms, key) for key, _info in params]
    anchored = [(a, info) for a, (_key, info) in zip(anchors, params) if a >= 0]
    comms.update((key, info) for a, (key, info) in zip(anchors, params) if a < 0)
    outside = {k for k in workers if names[k].startswith("nccl:") and _anchor_above(parent, comms, k) < 0}
    _attach_workers(cpu, comms, [k for k in workers if k not in outside], path)
    _lone_works(cpu, comms, workers, path)
    _reduce_scatter_sizes(cpu, comms, world)
    for anchor, info in anchored:  # record_param_comms says the sizes and group: it wins
        merge_param_comms(comms[anchor], info)
    owner = array("q", bytes(8 * len(names)))
    for key, (name, up_key) in enumerate(zip(names, parent)):
        up = owner[up_key] if up_key >= 0 else -1
        is_op = is_operator(name) or key in launchers
        owner[key] = key if key in comms or (is_op and up < 0) else up
    ops = [_host_op(cpu, key, comms.get(key), owner[parent[key]] if parent[key] >= 0 else -1)
           for key in range(len(names)) if owner[key] == key]
    rf_owner = IntMap()
    rf_owner.set_pairs(range(len(owner)), owner)
    return HostTrace(path, KINETO_SCHEMA, kt.pid, ops, rf_owner, {})


def _leaf_launchers(cpu: CpuSide, launchers: set[int]) -> set[int]:
    """The events that launch GPU work and have no operator inside them (an Inductor/Triton
    kernel call; not a step or ``## forward ##`` annotation around operators)."""
    names, parent = cpu.events.names, cpu.parent
    around_ops: set[int] = set()
    for key in reversed(range(len(names))):  # children come after their parents
        up = parent[key]
        if up >= 0 and (key in around_ops or is_operator(names[key])):
            around_ops.add(up)
    return {k for k in launchers if k not in around_ops and names[k]}


def _comm_of(cpu: CpuSide, key: int, path: str, list_esize: int | None = None) -> CommInfo | None:
    """The communication of a ``c10d::*`` or ``record_param_comms`` event, else None;
    ``list_esize``: the element size of a ``c10d::*`` op's tensor lists (see :func:`c10d_comm`)."""
    name = cpu.events.names[key]
    try:
        if name.startswith("c10d::"):
            return c10d_comm(name, cpu.kept_args(key), list_esize)
        if name == "record_param_comms":
            return param_comm(cpu.kept_args(key))
    except ValueError as err:
        raise TraceFormatError(f"{name}: {err}", path, f"event at ts {cpu.events.ts[key]:.3f} us") from None
    return None


def _anchor_above(parent: array, comms: dict[int, CommInfo], key: int) -> int:
    """The nearest ``c10d::*`` communication event around event ``key``, -1 for none."""
    p = parent[key]
    while p >= 0 and p not in comms:
        p = parent[p]
    return p


def _attach_workers(cpu: CpuSide, comms: dict[int, CommInfo], workers: list[int], path: str) -> None:
    """Tie each ``gloo:*`` annotation, and each ``nccl:*`` one inside an op, to its op (by issue
    order, as for a host ET: :meth:`CpuSide.order_id`) and size the op from it where the op's own inputs
    do not (:func:`_size_from_worker`)."""
    tids = cpu.events.tids
    order = {cpu.order_id(k): k for k in workers}
    attach_annotations((WorkAnnotation(cpu.order_id(k), tids[k], frozenset()) for k in workers), comms,
                       {k: cpu.order_id(k) for k in comms}, {k: tids[k] for k in comms})
    for key, info in comms.items():
        info.worker_rfs = [order[o] for o in info.worker_rfs if o in order]
        if info.worker_rfs:
            _size_from_worker(cpu, key, info, path)


def _lone_works(cpu: CpuSide, comms: dict[int, CommInfo], workers: list[int], path: str) -> None:
    """Make each work annotation that no communication op took (a gloo: one with no op issued
    before it, an nccl: one with no op around it: the op is not in the trace) a collective of its
    own (:func:`annotation_comm`), timed by its span or its NCCL kernel; list each such
    annotation in ``cpu.lone_works``."""
    taken = {k for info in comms.values() for k in info.worker_rfs}
    for key in workers:
        if key in taken:
            continue
        try:
            info = annotation_comm(cpu.events.names[key], cpu.kept_args(key))
        except ValueError as err:
            raise TraceFormatError(f"{cpu.events.names[key]}: {err}", path,
                                   f"event at ts {cpu.events.ts[key]:.3f} us") from None
        cpu.lone_works.append((key, info is not None))
        if info is not None:
            info.worker_rfs = [key]
            comms[key] = info


def _size_from_worker(cpu: CpuSide, key: int, info: CommInfo, path: str) -> None:
    """A tensor list whose dtype the op ``key`` does not name takes that of its first work
    annotation; an op still without a size (Kineto leaves a tensor list's dims empty) takes the
    one the annotation's tensors give (:func:`work_bytes`: its ``Input Dims`` times its dtype's
    size)."""
    worker = cpu.kept_args(info.worker_rfs[0])
    types = cpu.kept_args(key).get("Input type")
    esize = annotation_elem_bytes(worker)
    if esize and isinstance(types, list) and "TensorList" in types:
        fixed = _comm_of(cpu, key, path, esize)
        if fixed is not None:
            info.size_bytes = fixed.size_bytes
    if not info.size_bytes:
        try:
            info.size_bytes = work_bytes(info.kind, worker)
        except ValueError as err:
            k = info.worker_rfs[0]
            raise TraceFormatError(f"{cpu.events.names[k]}: {err}", path,
                                   f"event at ts {cpu.events.ts[k]:.3f} us") from None


def _reduce_scatter_sizes(cpu: CpuSide, comms: dict[int, CommInfo], world: int) -> None:
    """A reduce-scatter's input is a list of lists, whose dims Kineto leaves empty: its size is
    then the output shard times the group size (the world's when the group is not named)."""
    for key, info in comms.items():
        if info.kind != "reduce_scatter" or info.size_bytes:
            continue
        shard = c10d_comm("c10d::allreduce_", cpu.kept_args(key), None)
        size = info.pg_size or world
        if shard is not None:
            info.size_bytes = shard.size_bytes * size


def _host_op(cpu: CpuSide, key: int, comm: CommInfo | None, parent_sel: int) -> HostOp:
    """The host op of an event: its key as node id and record-function id, Kineto's sequence
    number and forward thread, and its input dims and types as the node's inputs."""
    e = cpu.events
    seq, fwd, tid = e.seq[key], e.fwd_tid[key], e.tids[key]
    keep = (key, None, seq if seq >= 0 else None, None, tid, fwd if fwd >= 0 else None, None)
    return HostOp(key, e.names[key], tid, key, keep, e.io[key], comm, parent_sel)


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
    kt.ops = EventSpans(cpu.events)  # the events are in key order: key k is events[k]
    kt.ext_rf = IntMap()
    kt.ext_rf.set_pairs(range(len(cpu.events)), range(len(cpu.events)))  # the keys are 0..n-1
    kt.corr_ext = dict(cpu.corr_owner)
    for g in kt.gpu:
        g.external = cpu.corr_owner.get(g.correlation, -1)
    for sy in kt.syncs:
        sy.external = cpu.corr_owner.get(sy.correlation, -1)

