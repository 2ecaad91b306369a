"""Dependencies beyond the lanes: between threads, GPU syncs, data, and idle gaps."""

from __future__ import annotations

import bisect
import itertools
import warnings
from functools import cache, partial

from chakra_core import NodeType

from .comms import tensors_in
from .hostet import HostTrace
from .iotext import io_values
from .kineto import KinetoTrace, SyncEvent
from .outnode import IDLE_ATTRS, IDLE_NAME, OutNode
from .schema_version import PyTorchTraceWarning

__all__ = ["cross_thread", "add_syncs", "add_stream_waits", "add_data_deps", "main_lane", "insert_idle",
           "insert_handoffs"]


def cross_thread(lanes: dict[int, list[OutNode]], scan: int = 64) -> None:
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


def add_syncs(kt: KinetoTrace, host: HostTrace, streams, out, grid, lanes: dict[int, list[OutNode]]) -> None:
    """GPU -> CPU: the CPU node of each sync call waits for the last work launched before it.

    Work launched by the same node is skipped: the node both launches and waits for it, which
    its own duration already covers (a dependency would be a cycle).  When an edge is added, the
    time the call blocked is taken out of the node's duration: the edge carries the wait.  A
    sync outside every host op (``torch.cuda.synchronize()`` from Python) is given to the next
    host node on its thread (``lanes``), which then waits for that work; a warning counts them.
    """
    launches = {k: [kt.corr_ts.get(g.correlation, g.ts) for g, _ in lane] for k, lane in streams.items()}
    next_node = cache(partial(_next_on_thread, kt, lanes))  # built at the first sync outside every op
    outside: dict[object, bool] = {}  # sync call (its correlation) -> given to a later node
    for sy in kt.syncs:
        ext = sy.external if sy.external >= 0 else kt.corr_ext.get(sy.correlation, -1)
        node = out.get(host.rf_owner.get(kt.ext_rf.get(ext, -1), -1))
        if node is None:
            node = next_node()(kt.corr_tid.get(sy.correlation, sy.tid), grid(sy.ts))
            key = sy.correlation if sy.correlation >= 0 else (sy.tid, sy.ts)
            outside[key] = outside.get(key, False) or node is not None
            if node is not None:
                _wait_for_launched(sy, node, streams, launches)
            continue
        if _wait_for_launched(sy, node, streams, launches) and node.start >= 0:
            # the dependency now carries the wait: the node keeps only its own work, and ends
            # where it was seen to end
            wait = min(node.dur, grid(sy.ts + sy.dur) - grid(sy.ts))
            node.start += wait
            node.dur -= wait
    if outside:
        _warn_outside(kt.path, len(outside), sum(outside.values()))


def _wait_for_launched(sy: SyncEvent, node: OutNode, streams, launches) -> bool:
    """Make ``node`` depend on the last work of each stream the sync ``sy`` waited for that was
    launched before it (not by ``node`` itself); True when it waited for any."""
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
    return waited


def _next_on_thread(kt: KinetoTrace, lanes: dict[int, list[OutNode]]):
    """A function (Kineto thread, time on the grid) -> the first timed host node of that thread
    starting then or later, None for none; a lane's Kineto thread is that of its first node
    found in the trace."""
    starts: dict[int, tuple[list[int], list[OutNode]]] = {}
    for lane in lanes.values():
        rec = next((r for n in lane if n.host is not None and (r := kt.ops.get(n.host[0])) is not None), None)
        timed = sorted((n for n in lane if n.start >= 0), key=lambda n: n.start)
        if rec is not None and rec[2] not in starts:
            starts[rec[2]] = ([n.start for n in timed], timed)

    def find(tid: int, at: int) -> OutNode | None:
        ts, nodes = starts.get(tid, ([], []))
        i = bisect.bisect_left(ts, at)
        return nodes[i] if i < len(nodes) else None
    return find


def _warn_outside(path: str, count: int, given: int) -> None:
    """Warn of the sync calls made outside every host op, and of those that found no node."""
    lost = f"; {count - given} with no host node after it on its thread are left out" if count > given else ""
    warnings.warn(f"{path}: {count} GPU sync call(s) outside every host op (torch.cuda.synchronize() "
                  f"from Python, say): {given} given to the next host node on its thread, which then "
                  f"waits for the GPU work the sync waited for{lost}", PyTorchTraceWarning, stacklevel=4)


def add_stream_waits(kt: KinetoTrace, streams) -> None:
    """GPU -> GPU: after ``cudaStreamWaitEvent``, the next work launched on the waiting stream
    depends on the last work launched on the recording stream before the event was recorded."""
    # launch times per stream, computed once (a trace has a wait per collective: recomputing
    # them per wait was quadratic); ``first`` holds their running maximum, so that a bisection
    # finds the first activity launched at or after a time even if launches are out of order
    launch: dict[tuple[int, int], list[float]] = {}
    first: dict[tuple[int, int], list[float]] = {}

    def launches(key) -> list[float]:
        if key not in launch:
            launch[key] = [kt.corr_ts.get(g.correlation, g.ts) for g, _ in streams[key]]
            first[key] = list(itertools.accumulate(launch[key], max))
        return launch[key]

    for w in kt.stream_waits:
        dkey, skey = (w.device, w.stream), (w.device, w.wait_on_stream)
        dst, src = streams.get(dkey), streams.get(skey)
        if not dst or not src:
            continue
        recorded = kt.corr_ts.get(w.record_correlation, w.ts)
        i = bisect.bisect_right(launches(skey), recorded) - 1
        launches(dkey)
        j = bisect.bisect_left(first[dkey], w.ts)
        nxt = dst[j][1] if j < len(dst) else None
        if i >= 0 and nxt is not None and src[i][1].id not in nxt.ctrl:
            nxt.ctrl.append(src[i][1].id)


def add_data_deps(lanes: dict[int, list[OutNode]]) -> None:
    """Data dependencies: each host node depends on the last node that output a tensor it reads
    (same tensor id and storage id), unless a control dependency already links them."""
    order = sorted((n for lane in lanes.values() for n in lane), key=lambda n: n.id)
    producer: dict[tuple[int, int], int] = {}
    for n in order:
        if n.io is None:
            continue
        iv, ov = io_values(n.io)
        data = list(n.data)
        for t in tensors_in(iv):
            p = producer.get((t[0], t[1]))
            if p is not None and p != n.id and p not in data and p not in n.ctrl:
                data.append(p)
        if data:
            n.data = data
        for t in tensors_in(ov):
            producer[(t[0], t[1])] = n.id


def main_lane(lanes, kt: KinetoTrace, step, host: HostTrace) -> int | None:
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


def insert_idle(lane: list[OutNode], out: dict[int, OutNode], window, next_id: int,
                 min_idle: int, unwaited: list[int]) -> int:
    """Insert ``[idle]`` nodes into one host lane where it waited for nothing (see graph.py);
    ``window`` is the step span (or None), ``unwaited`` the communications nobody waited for.
    Returns the next free node id."""
    prev_end = window[0] if window else None
    last = None
    for n in lane:
        if n.start < 0:
            continue
        ready = None  # the latest end of its timed dependencies (and of the window, for the first)
        for d in n.ctrl:
            p = out.get(d)
            if p is not None and p.start >= 0 and (ready is None or p.start + p.dur > ready):
                ready = p.start + p.dur
        if last is None and prev_end is not None and (ready is None or prev_end > ready):
            ready = prev_end
        if ready is not None and ready < n.start < ready + min_idle:
            n.dur += n.start - ready  # a short gap: counted as the node's own overhead
            n.start = ready
        elif ready is not None and n.start > ready:
            idle = OutNode(next_id, IDLE_NAME, NodeType.COMP_NODE, start=ready, dur=n.start - ready,
                           extra=IDLE_ATTRS)
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
                       extra=IDLE_ATTRS, ctrl=[last.id] + unwaited)
        next_id += 1
        out[idle.id] = idle
    elif window[1] > last.end and ready == last.end:
        last.dur = window[1] - last.start
    return next_id


def insert_handoffs(comms: list[tuple[OutNode, int, bool]], out: dict[int, OutNode], next_id: int,
                    min_idle: int) -> int:
    """Insert an ``[idle]`` node before each communication whose work started at least
    ``min_idle`` us after its dependencies ended: the c10d op's own time and the wait for a
    worker thread to take the work.  It is not a CPU op (the issuing thread goes on meanwhile).
    gloo's workers take a thread's work in issue order: a collective issued while the previous
    one still waited for a worker also depends on that one's ``[idle]`` node, so that neither a
    simulator nor the file order lets it overtake.  ``comms``: (node, tid, is a collective) in
    issue order.  Returns the next free node id."""
    waiting: dict[int, OutNode] = {}  # tid -> [idle] node of its last collective
    for n, tid, coll in comms:
        before = waiting.pop(tid, None) if coll else None
        if before is not None and before.end <= n.start and before.id not in n.ctrl:
            n.ctrl.append(before.id)
        ends = [out[d].end for d in n.ctrl if d in out and out[d].start >= 0]
        if n.start < 0 or not ends or n.start - max(ends) < min_idle:
            continue
        ready = max(ends)
        idle = OutNode(next_id, IDLE_NAME, NodeType.COMP_NODE, start=ready, dur=n.start - ready,
                       extra=IDLE_ATTRS)
        idle.cpu = False
        next_id += 1
        idle.ctrl, n.ctrl = n.ctrl, [idle.id]
        out[idle.id] = idle
        if coll:
            waiting[tid] = idle
    return next_id
