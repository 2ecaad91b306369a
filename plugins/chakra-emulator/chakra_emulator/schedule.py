"""The dependency-exact replay loop of one rank (imported by workers only).

The rules are the SimPy simulator's: a node is ready when all its dependencies are done; ready
nodes are issued in ascending id order whenever their resource has a free slot: one CPU op,
``streams`` accelerator compute ops, ``streams`` communication ops (collectives, sends, memory
nodes of the accelerator); a receive and a node of no kind hold no resource.

The main thread issues: collectives and messages are started from it (so that every member
enqueues a group's collectives in the same order); a communication is waited for on the main
thread itself when it is the only node in flight and no CPU op is ready (as a recorded job's main
thread waits for its work), else its end is reported by its work's future's callback on the
thread that completed it (gloo's collectives) or by a waiter thread;
CPU ops that do work (real operators) run on the main thread itself, after it has started
everything else that was ready (as a host thread of the recorded job runs its ops: no hand-over
to another thread per node), accelerator compute and memory nodes that do work on one thread per
slot of their resource.  Host work and idle gaps, on any resource, are timers of the main thread:
it holds each from when the node could start until its duration has passed, waiting on the queue
of completions meanwhile, so that what another node's end makes ready is issued at once, as in
the simulator, not when the main thread's current host node ends.  Every finished node comes
back to the main thread through one queue with its measured start and end (``time.monotonic_ns``,
the same clock in every process of the machine).
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from heapq import heappop, heappush
from typing import Any

from .plan import COLL, COMP, MEM, R_COMM, R_COMP, R_CPU, R_NONE, RECV, SEND, Plan

__all__ = ["Replay", "NodeAction", "NodeFailed"]

#: what runs a node: (position, logical start ns) -> (start ns, end ns)
NodeAction = Callable[[int, int], tuple[int, int]]


class NodeFailed(RuntimeError):
    """A node's operation raised; the message names the node."""


class Replay:
    """One iteration of a rank's plan.

    ``run_sync(i, ready_ns)`` runs compute/memory node ``i`` and returns its (start, end) ns;
    ``start_comm(i)`` starts communication node ``i`` and returns (start ns, work with
    ``wait()``); ``status(pos, since_ns, done)`` is told the oldest node in flight; with
    ``futures`` the end of a work that has a future comes from its callback; ``wait_until(ns)``
    returns at that ``time.monotonic_ns`` (an iteration's start).  A node for which
    ``deadline(i, ready_ns)`` gives an end (host work and idle time: time without work, on any
    resource) is a timer of the main thread, not work for a thread: ``hold(end_ns, inbox)``
    returns None at the earliest timer's end, or earlier with a completion from ``inbox``, so
    that the main thread goes on issuing what completions make ready while it holds a slot.
    """

    def __init__(self, plan: Plan, streams: int, run_sync: NodeAction,
                 start_comm: Callable[[int], tuple[int, Any]], status: Callable[[int, int, int], None],
                 on_cuda_thread: Callable[[], None] | None = None, futures: bool = False,
                 wait_until: Callable[[int], None] = lambda ns: None, *,
                 deadline: Callable[[int, int], int | None],
                 hold: Callable[[int, queue.SimpleQueue], Any]):
        self.plan = plan
        self.wait_until = wait_until
        self.deadline = deadline
        self.hold = hold
        self.futures = futures
        self.run_sync = run_sync
        self.start_comm = start_comm
        self.status = status
        self.slots = [1, streams, streams, 1 << 30]
        init = on_cuda_thread or (lambda: None)
        self.pools = {R_COMP: ThreadPoolExecutor(streams, "compute", initializer=init),
                      R_COMM: ThreadPoolExecutor(streams, "memory", initializer=init)}
        self.waiters = ThreadPoolExecutor(64, "wait", initializer=init)

    def close(self) -> None:
        """Stop the threads."""
        for p in (*self.pools.values(), self.waiters):
            p.shutdown(wait=False, cancel_futures=True)

    def run(self, t0_ns: int) -> tuple[list[int], list[int], list[int], int]:
        """Replay every node once from ``t0_ns`` (set up first, then wait for it); returns
        (start ns, end ns, issue order, how late the replay began in ns)."""
        run = _Pass(self, t0_ns)
        self.wait_until(t0_ns)
        late = time.monotonic_ns() - t0_ns
        pending = run.issue()
        while run.done < run.n:
            item, pending = run.next_item(pending)
            pending = run.complete(item) or pending
        return run.start, run.end, run.order, late

    def _start(self, i: int, kind: str, r: int, logical: int, done_q: queue.SimpleQueue,
               unwatched: dict[int, tuple[int, Any]]) -> None:
        """Start node ``i``: a communication is left in ``unwatched`` with its start and work."""
        if kind in (COLL, SEND, RECV):
            try:
                unwatched[i] = self.start_comm(i)
            except BaseException as e:  # noqa: BLE001 - handed to the main loop, which raises it
                done_q.put((i, 0, 0, e))
            return
        pool = self.pools.get(r) if kind in (COMP, MEM) else None
        if pool is None:
            now = time.monotonic_ns()
            done_q.put((i, now, now, None))
            return
        pool.submit(_sync, self.run_sync, i, logical, done_q)

    def _watch(self, i: int, t_start: int, work: Any, done_q: queue.SimpleQueue) -> None:
        """Have communication node ``i``'s end reported to ``done_q``: by its future's callback
        (with ``futures``) or by a waiter thread."""
        future = _future(work) if self.futures else None
        if future is not None:
            future.add_done_callback(_on_done(i, t_start, done_q))
        else:
            self.waiters.submit(lambda: done_q.put(_wait(i, t_start, work)))


_Completion = tuple[int, int, int, BaseException | None]


class _Pass:
    """The state of one :meth:`Replay.run`: what is ready per resource, free slots, nodes in
    flight, timers, and the measured start and end of every finished node."""

    def __init__(self, replay: Replay, t0_ns: int):
        plan = replay.plan
        self.replay, self.plan = replay, plan
        self.n = n = len(plan)
        self.start, self.end = [0] * n, [0] * n
        self.order: list[int] = []
        self.indeg = list(plan.indeg)
        self.ready: list[list[int]] = [[], [], [], []]
        self.free = list(replay.slots)
        self.ready_at = [t0_ns] * n
        self.freed_at = [t0_ns] * 4
        self.done_q: queue.SimpleQueue = queue.SimpleQueue()
        #: node -> when it was issued (ns)
        self.flight: dict[int, int] = {}
        #: communication started but nobody waits for it yet: node -> (start ns, work)
        self.unwatched: dict[int, tuple[int, Any]] = {}
        #: (end ns, node, logical start ns) of the nodes held by the main thread
        self.timers: list[tuple[int, int, int]] = []
        self.done = 0
        for i in range(n):
            if self.indeg[i] == 0:
                heappush(self.ready[plan.res[i]], i)

    def report(self) -> None:
        """Tell ``status`` the oldest node in flight (or that none is)."""
        flight = self.flight
        if flight:
            pos = min(flight, key=flight.__getitem__)
            self.replay.status(pos, flight[pos], self.done)
        else:
            self.replay.status(-1, time.monotonic_ns(), self.done)

    def issue(self) -> tuple[int, int] | None:
        """Start what may start; a CPU node is returned to run on this thread instead."""
        inline = None
        ready, free = self.ready, self.free
        for r in range(4):
            h = ready[r]
            while h and free[r] > 0:
                i = heappop(h)
                free[r] -= 1
                inline = self.issue_node(i, r) or inline
        self.report()
        return inline

    def issue_node(self, i: int, r: int) -> tuple[int, int] | None:
        """Issue node ``i`` on resource ``r``: a timer, a CPU node to run inline (returned), or
        work started elsewhere."""
        kind = self.plan.kind[i]
        self.order.append(i)
        logical = max(self.ready_at[i], self.freed_at[r]) if r != R_NONE else self.ready_at[i]
        self.flight[i] = time.monotonic_ns()
        end_ns = self.replay.deadline(i, logical) if kind in (COMP, MEM) else None
        if end_ns is not None:
            heappush(self.timers, (end_ns, i, logical))
        elif r == R_CPU and kind in (COMP, MEM):
            return i, logical
        else:
            self.replay._start(i, kind, r, logical, self.done_q, self.unwatched)
        return None

    def complete(self, item: _Completion) -> tuple[int, int] | None:
        """Record a finished node, release its slot and its children, and issue what is ready."""
        i, t_start, t_end, err = item
        plan = self.plan
        if err is not None:
            raise NodeFailed(f"node {plan.ids[i]} ({plan.names[i] or plan.kind[i]}): "
                             f"{type(err).__name__}: {err}") from err
        self.start[i], self.end[i] = t_start, t_end
        self.flight.pop(i, None)
        self.done += 1
        r = plan.res[i]
        if r != R_NONE:
            self.free[r] += 1
            self.freed_at[r] = max(self.freed_at[r], t_end)
        self.release_children(i, t_end)
        return self.issue()

    def release_children(self, i: int, t_end: int) -> None:
        """Node ``i`` ended at ``t_end``: its children may start no earlier; the ones with no
        dependency left become ready."""
        plan, indeg, ready_at = self.plan, self.indeg, self.ready_at
        for j in range(plan.child_ptr[i], plan.child_ptr[i + 1]):
            c = plan.child_idx[j]
            indeg[c] -= 1
            ready_at[c] = max(ready_at[c], t_end)
            if indeg[c] == 0:
                heappush(self.ready[plan.res[c]], c)

    def watch(self) -> None:
        """Have every unwatched communication's end reported to the queue."""
        for i, (t_start, work) in self.unwatched.items():
            self.replay._watch(i, t_start, work, self.done_q)
        self.unwatched.clear()

    def next_item(self, pending: tuple[int, int] | None) -> tuple[_Completion, tuple[int, int] | None]:
        """The next completion, and the CPU node still to run inline: a queued completion, else
        a due timer, else the pending CPU node run here, else held until the earliest timer,
        else a lone communication waited for here, else the queue waited on."""
        try:
            return self.done_q.get_nowait(), pending
        except queue.Empty:
            pass
        timers = self.timers
        if timers and timers[0][0] <= time.monotonic_ns():
            return _timer_done(timers), pending
        if pending is not None:
            self.watch()
            return _run_inline(self.replay.run_sync, *pending), None
        if timers:
            self.watch()
            return self.replay.hold(timers[0][0], self.done_q) or _timer_done(timers), pending
        if len(self.flight) == 1 and len(self.unwatched) == 1:
            i, (t_start, work) = self.unwatched.popitem()
            return _wait(i, t_start, work), pending
        self.watch()
        return self.done_q.get(), pending


def _future(work: Any) -> Any:
    """The work's future, or None (no work, or one without: gloo's sends and receives)."""
    if work is None or not hasattr(work, "get_future"):
        return None
    try:
        return work.get_future()
    except RuntimeError:
        return None


def _on_done(i: int, t_start: int, done_q: queue.SimpleQueue) -> Callable[[Any], None]:
    """The callback that reports node ``i`` done when its future completes."""
    def done(future: Any) -> None:
        t_end = time.monotonic_ns()
        try:
            future.wait()
            done_q.put((i, t_start, t_end, None))
        except BaseException as e:  # noqa: BLE001 - handed to the main loop
            done_q.put((i, t_start, t_end, e))
    return done


def _wait(i: int, t_start: int, work: Any) -> tuple[int, int, int, BaseException | None]:
    """Wait for communication node ``i``'s work; the completion item of the main loop."""
    try:
        if work is not None:
            work.wait()
        return i, t_start, time.monotonic_ns(), None
    except BaseException as e:  # noqa: BLE001 - handed to the main loop
        return i, t_start, time.monotonic_ns(), e


def _timer_done(timers: list[tuple[int, int, int]]) -> tuple[int, int, int, None]:
    """The completion item of the earliest timer (a host node held from its logical start)."""
    _, i, logical = heappop(timers)
    return i, logical, time.monotonic_ns(), None


def _run_inline(run: NodeAction, i: int, logical: int) -> tuple[int, int, int, BaseException | None]:
    try:
        t_start, t_end = run(i, logical)
        return i, t_start, t_end, None
    except BaseException as e:  # noqa: BLE001 - handed to the main loop
        return i, 0, 0, e


def _sync(run: NodeAction, i: int, logical: int, done_q: queue.SimpleQueue) -> None:
    try:
        t_start, t_end = run(i, logical)
        done_q.put((i, t_start, t_end, None))
    except BaseException as e:  # noqa: BLE001 - handed to the main loop
        done_q.put((i, 0, 0, e))
