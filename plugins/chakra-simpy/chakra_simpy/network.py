"""Links shared by messages, timed by the rules of ASTRA-sim's congestion-aware analytical network.

Those rules (ASTRA-sim's ``congestion_aware`` network backend: ``Link``, ``Chunk``, ``Device``,
``Ring``, ``FullyConnected``, ``Switch``, and the front end's ``sim_send``):

- a message is sent whole (one chunk of its size), device by device along its route;
- a link serves the messages handed to it one at a time, first come first served; a message
  holds it for ``floor(m / b)`` ns and reaches the next device ``floor(L + m / b)`` ns after it
  started on the link (``b`` = bandwidth in bytes/ns, ``L`` = latency in ns); the next hop starts
  when it arrives there (store and forward: latency and serialization on every link);
- routes: a Ring is bidirectional and a message goes the shorter way, clockwise when both are
  equally long; a FullyConnected dimension has one link per ordered pair of NPUs; a Switch
  dimension sends up to the switch and down to the destination (two links);
- events due at the same ns run in the order they were scheduled (SimPy's order too).

ASTRA-sim's congestion-aware backend builds one dimension only.  On a network of several
dimensions a message is carried on the lowest dimension where the two ranks differ (the
congestion-unaware backend's charge), on that dimension's links between the two coordinates;
that extension has no ASTRA-sim counterpart to compare with.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from heapq import heappush
from typing import Any

from chakra_core.system import Dimension

from .event_loop import EventLoop

__all__ = ["Network", "Link"]

#: the device number of a Switch dimension's switch, in that dimension's coordinates.
SWITCH = -1


class Link:
    """One direction of one physical link: its bandwidth (bytes/ns) and latency (ns), the
    times of the message sizes seen (``times[m]``: ns it holds the link, ns to cross it), the
    messages waiting for it in arrival order, and the end of serialization of the message that
    last started on it: due at ``free_at`` ns (-1: none yet) with scheduling order ``free_eid``,
    on the event queue only while ``pending`` (a message waits for it)."""

    __slots__ = ("bytes_per_ns", "latency", "times", "waiting", "free_at", "free_eid", "pending")

    def __init__(self, dim: Dimension):
        self.bytes_per_ns = dim.bytes_per_ns
        self.latency = dim.latency
        self.times: dict[int, tuple[int, int]] = {}
        self.waiting: deque = deque()
        self.free_at = -1
        self.free_eid = -1
        self.pending = False

    def time(self, size: int) -> tuple[int, int]:
        """A message of ``size`` bytes: ns it holds the link, ns to cross it (kept in ``times``)."""
        serial = size / self.bytes_per_ns
        got = self.times[size] = (int(serial), int(self.latency + serial))
        return got


class _Message:
    """A message of several hops on its way: bytes, the links of its route, the hop it is on,
    and ``done(arg)`` to call on arrival."""

    __slots__ = ("size", "links", "hop", "done", "arg")

    def __init__(self, size: int, links: tuple[Link, ...], done: Callable[[Any], None], arg: Any):
        self.size = size
        self.links = links
        self.hop = 0
        self.done = done
        self.arg = arg


class Network:
    """The links of system ``dims`` (``coords[r]`` = coordinates of rank r) on event loop ``loop``.

    Each hop of a message is two events of the model: its arrival at the end of the link (on
    the last link, the call ``done(arg)`` itself) and the link's end of serialization
    (``events`` counts both).  The end of serialization is put on the queue only when a message
    waits for the link; otherwise it keeps its time and scheduling order on the link
    (``free_at``, ``free_eid``), and the link is free once the loop has run past that place, so
    every event keeps the time and order SimPy would give it.
    """

    def __init__(self, loop: EventLoop, dims: tuple[Dimension, ...], coords: list[tuple[int, ...]]):
        self.loop = loop
        self.dims = dims
        self.coords = coords
        self.links: dict[tuple, Link] = {}
        #: ``src * len(coords) + dst`` -> the links of the route from rank src to rank dst
        self.routes: dict[int, tuple[Link, ...]] = {}
        #: events of the model scheduled (two per hop)
        self.events = 0

    def route(self, src: int, dst: int) -> tuple[Link, ...]:
        """The links a message from rank ``src`` to rank ``dst`` crosses, in order."""
        key = src * len(self.coords) + dst
        got = self.routes.get(key)
        if got is None:
            got = self.routes[key] = tuple(self._route(src, dst))
        return got

    def _route(self, src: int, dst: int) -> list[Link]:
        ca, cb = self.coords[src], self.coords[dst]
        d = next((k for k, (x, y) in enumerate(zip(ca, cb)) if x != y), None)
        if d is None:
            raise ValueError("a message to oneself")
        dim = self.dims[d]
        rest = ca[:d] + ca[d + 1:]
        a, b = ca[d], cb[d]
        if dim.topology == "Switch":
            path = [a, SWITCH, b]
        elif dim.topology == "FullyConnected":
            path = [a, b]
        else:
            p = dim.npus_count
            step = -1 if p - (b - a) % p < (b - a) % p else 1
            path = [a]
            while path[-1] != b:
                path.append((path[-1] + step) % p)
        return [self._link(d, rest, u, v) for u, v in zip(path, path[1:])]

    def _link(self, d: int, rest: tuple[int, ...], u: int, v: int) -> Link:
        key = (d, rest, u, v)
        link = self.links.get(key)
        if link is None:
            link = self.links[key] = Link(self.dims[d])
        return link

    def send(self, src: int, dst: int, size: int, done: Callable[[Any], None], arg: Any = None) -> None:
        """Send ``size`` bytes from rank ``src`` to rank ``dst`` now; ``done(arg)`` runs when the
        message has reached ``dst``."""
        self.carry(self.routes.get(src * len(self.coords) + dst) or self.route(src, dst), size, done, arg)

    def carry(self, links: tuple[Link, ...], size: int, done: Callable[[Any], None], arg: Any) -> None:
        """Send ``size`` bytes now over ``links`` (a route); ``done(arg)`` runs when the message
        has crossed the last one."""
        if len(links) == 1:
            self.offer(links[0], size, done, arg)
        else:
            self.offer(links[0], size, self._arrived, _Message(size, links, done, arg))

    def offer(self, link: Link, size: int, fn: Callable[[Any], None], arg: Any) -> None:
        """Hand a message of ``size`` bytes to ``link``: it starts now if the link is free and
        no message waits for it, else waits; ``fn(arg)`` runs when it reaches the link's end."""
        loop = self.loop
        now = loop.now
        if link.pending:
            link.waiting.append((size, fn, arg))
        elif now < link.free_at or (now == link.free_at and loop.running < link.free_eid):
            link.pending = True
            loop.call_at(link.free_at, link.free_eid, self._freed, link)
            link.waiting.append((size, fn, arg))
        else:  # it starts: its arrival queued, the end of serialization's place kept on the link
            busy, cross = link.times.get(size) or link.time(size)
            link.free_at = now + busy
            eid = loop.eid
            heappush(loop.queue, (now + cross, eid, fn, arg))
            link.free_eid = eid + 1
            loop.eid = eid + 2
            self.events += 2

    def _arrived(self, msg: _Message) -> None:
        msg.hop += 1
        links = msg.links
        if msg.hop == len(links) - 1:
            self.offer(links[-1], msg.size, msg.done, msg.arg)
        else:
            self.offer(links[msg.hop], msg.size, self._arrived, msg)

    def _freed(self, link: Link) -> None:
        """The end of serialization of ``link`` that a message waits for: the first waiting
        message starts (the link is free at this event)."""
        link.pending = False
        self.offer(link, *link.waiting.popleft())
        if link.waiting:
            link.pending = True
            self.loop.call_at(link.free_at, link.free_eid, self._freed, link)
