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
        plan = self.plan
        n = len(plan)
        start, end = [0] * n, [0] * n
        order: list[int] = []
        indeg = list(plan.indeg)
        ready: list[list[int]] = [[], [], [], []]
        free = list(self.slots)
        ready_at = [t0_ns] * n
        freed_at = [t0_ns] * 4
        res, kind = plan.res, plan.kind
        done_q: queue.SimpleQueue = queue.SimpleQueue()
        flight: dict[int, int] = {}
        unwatched: dict[int, tuple[int, Any]] = {}
        timers: list[tuple[int, int, int]] = []
        for i in range(n):
            if indeg[i] == 0:
                heappush(ready[res[i]], i)
        done = 0

        def report() -> None:
            if flight:
                pos = min(flight, key=flight.__getitem__)
                self.status(pos, flight[pos], done)
            else:
                self.status(-1, time.monotonic_ns(), done)

        def issue() -> tuple[int, int] | None:
            """Start what may start; a CPU node is returned to run on this thread instead."""
            inline = None
            for r in range(4):
                h = ready[r]
                while h and free[r] > 0:
                    i = heappop(h)
                    free[r] -= 1
                    order.append(i)
                    logical = max(ready_at[i], freed_at[r]) if r != R_NONE else ready_at[i]
                    flight[i] = time.monotonic_ns()
                    end_ns = self.deadline(i, logical) if kind[i] in (COMP, MEM) else None
                    if end_ns is not None:
                        heappush(timers, (end_ns, i, logical))
                    elif r == R_CPU and kind[i] in (COMP, MEM):
                        inline = (i, logical)
                    else:
                        self._start(i, kind[i], r, logical, done_q, unwatched)
            report()
            return inline

        def complete(item: tuple[int, int, int, BaseException | None]) -> tuple[int, int] | None:
            nonlocal done
            i, t_start, t_end, err = item
            if err is not None:
                raise NodeFailed(f"node {plan.ids[i]} ({plan.names[i] or plan.kind[i]}): "
                                 f"{type(err).__name__}: {err}") from err
            start[i], end[i] = t_start, t_end
            flight.pop(i, None)
            done += 1
            r = res[i]
            if r != R_NONE:
                free[r] += 1
                freed_at[r] = max(freed_at[r], t_end)
            for j in range(plan.child_ptr[i], plan.child_ptr[i + 1]):
                c = plan.child_idx[j]
                indeg[c] -= 1
                ready_at[c] = max(ready_at[c], t_end)
                if indeg[c] == 0:
                    heappush(ready[res[c]], c)
            return issue()

        def watch() -> None:
            for i, (t_start, work) in unwatched.items():
                self._watch(i, t_start, work, done_q)
            unwatched.clear()

        self.wait_until(t0_ns)
        late = time.monotonic_ns() - t0_ns
        pending = issue()
        while done < n:
            try:
                item = done_q.get_nowait()
            except queue.Empty:
                if timers and timers[0][0] <= time.monotonic_ns():
                    item = _timer_done(timers)
                elif pending is not None:
                    watch()
                    item = _run_inline(self.run_sync, *pending)
                    pending = None
                elif timers:
                    watch()
                    item = self.hold(timers[0][0], done_q) or _timer_done(timers)
                elif len(flight) == 1 and len(unwatched) == 1:
                    i, (t_start, work) = unwatched.popitem()
                    item = _wait(i, t_start, work)
                else:
                    watch()
                    item = done_q.get()
            pending = complete(item) or pending
        return start, end, order, late

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
