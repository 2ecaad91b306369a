"""The event loop of the congestion-aware mode: SimPy's order without an object per event.

An event is due at an integer ns and carries its scheduling order (``eid``: 0, 1, 2, ... as
events are scheduled); events run in ``(due, eid)`` order, so events due at one ns run in the
order they were scheduled, exactly as SimPy's ``Environment`` runs timeouts of one priority.
The engine's events are :class:`Timeout` objects (``callbacks``, ``value``: what its callbacks
read of a SimPy timeout, :meth:`EventLoop.timeout`); the network and the message runs schedule
a plain call instead (:meth:`EventLoop.call`, or on their busiest paths the same push of
``(due, eid, function, argument)`` onto ``queue`` with ``eid`` advanced, one call less).  The
network also takes scheduling orders for events it leaves off the queue (``eid`` advanced past
them) and puts one there later, at its place, only if something turns out to wait for it
(:meth:`EventLoop.call_at`): the queue then holds the events that matter, each at the place the
model gives it.  A call that must come ahead of every event of its ns (the checks of
:mod:`closed_runs`) takes a negative scheduling order of its own (:meth:`EventLoop.call_first`).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

__all__ = ["EventLoop", "Timeout", "fire"]


class Timeout:
    """An event whose ``callbacks`` are called with it when it is due; ``value`` is what they
    read of it."""

    __slots__ = ("callbacks", "value")

    def __init__(self, value: Any):
        self.callbacks: list[Callable[[Timeout], None]] = []
        self.value = value


def fire(ev: Timeout) -> None:
    """Run the callbacks of event ``ev`` (the queue's function of every :meth:`EventLoop.timeout`)."""
    for callback in ev.callbacks:
        callback(ev)


class EventLoop:
    """Events due at integer ns, run in ``(due, eid)`` order; ``now`` is the time in ns and
    ``running`` the scheduling order of the event being run (-1 before the first)."""

    __slots__ = ("now", "running", "eid", "queue", "early")

    def __init__(self) -> None:
        self.now = 0
        self.running = -1
        #: the scheduling order the next event takes
        self.eid = 0
        #: ``(due ns, eid, function, argument)`` entries, a heap
        self.queue: list[tuple[int, int, Callable[[Any], None], Any]] = []
        #: the scheduling order the next call ahead of its ns takes (:meth:`call_first`)
        self.early = -(1 << 62)

    def timeout(self, delay: int, value: Any = None) -> Timeout:
        """An event due ``delay`` ns from now (``delay`` >= 0), as SimPy's
        ``Environment.timeout``; append its callbacks to ``.callbacks``."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        ev = Timeout(value)
        heappush(self.queue, (self.now + delay, self.eid, fire, ev))
        self.eid += 1
        return ev

    def call(self, delay: int, fn: Callable[[Any], None], arg: Any) -> None:
        """Call ``fn(arg)`` ``delay`` ns from now (``delay`` >= 0), in the order of scheduling."""
        eid = self.eid
        heappush(self.queue, (self.now + delay, eid, fn, arg))
        self.eid = eid + 1

    def call_at(self, due: int, eid: int, fn: Callable[[Any], None], arg: Any) -> None:
        """Call ``fn(arg)`` at ``due`` ns, at scheduling order ``eid`` (one taken earlier,
        not yet run: ``(due, eid)`` after the event being run)."""
        heappush(self.queue, (due, eid, fn, arg))

    def call_first(self, due: int, fn: Callable[[Any], None], arg: Any) -> None:
        """Call ``fn(arg)`` at ``due`` ns (not before the event being run) ahead of every event
        scheduled by :meth:`timeout`, :meth:`call` or :meth:`call_at` for that ns; such calls
        run in the order they were asked for and take no scheduling order from the others."""
        heappush(self.queue, (due, self.early, fn, arg))
        self.early += 1

    def run(self) -> None:
        """Run every event, in order, until none is left."""
        queue = self.queue
        while queue:
            self.now, self.running, fn, arg = heappop(queue)
            fn(arg)
