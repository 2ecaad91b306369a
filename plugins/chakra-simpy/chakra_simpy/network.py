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

from chakra_core.system import Dimension

__all__ = ["Network", "Link"]

#: the device number of a Switch dimension's switch, in that dimension's coordinates.
SWITCH = -1


class Link:
    """One direction of one physical link: ``busy`` while a message serializes onto it, and the
    messages waiting for it in arrival order."""

    __slots__ = ("dim", "busy", "waiting")

    def __init__(self, dim: Dimension):
        self.dim = dim
        self.busy = False
        self.waiting: deque = deque()


class _Message:
    """A message on its way: bytes, the links of its route still to cross, and what to call on
    arrival."""

    __slots__ = ("size", "links", "hop", "done")

    def __init__(self, size: int, links: list[Link], done: Callable[[], None]):
        self.size = size
        self.links = links
        self.hop = 0
        self.done = done


class Network:
    """The links of system ``dims`` (``coords[r]`` = coordinates of rank r) on SimPy ``env``.

    ``count`` is called once per scheduled SimPy event (the simulation's event counter).
    """

    def __init__(self, env, dims: tuple[Dimension, ...], coords: list[tuple[int, ...]],
                 count: Callable[[], None]):
        self.env = env
        self.dims = dims
        self.coords = coords
        self.count = count
        self.links: dict[tuple, Link] = {}
        self.routes: dict[tuple[int, int], list[Link]] = {}
        self.messages = 0

    def route(self, src: int, dst: int) -> list[Link]:
        """The links a message from rank ``src`` to rank ``dst`` crosses, in order."""
        got = self.routes.get((src, dst))
        if got is None:
            got = self.routes[(src, dst)] = self._route(src, dst)
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

    def send(self, src: int, dst: int, size: int, done: Callable[[], None]) -> None:
        """Send ``size`` bytes from rank ``src`` to rank ``dst`` now; ``done()`` runs when the
        message has reached ``dst``."""
        self.messages += 1
        self._offer(_Message(size, self.route(src, dst), done))

    def _offer(self, msg: _Message) -> None:
        link = msg.links[msg.hop]
        if link.busy:
            link.waiting.append(msg)
        else:
            self._start(link, msg)

    def _start(self, link: Link, msg: _Message) -> None:
        link.busy = True
        dim = link.dim
        serial = msg.size / dim.bytes_per_ns
        arrive = self.env.timeout(int(dim.latency + serial), msg)
        arrive.callbacks.append(self._arrived)
        free = self.env.timeout(int(serial), link)
        free.callbacks.append(self._freed)
        self.count()
        self.count()

    def _arrived(self, ev) -> None:
        msg = ev.value
        msg.hop += 1
        if msg.hop == len(msg.links):
            msg.done()
        else:
            self._offer(msg)

    def _freed(self, ev) -> None:
        link = ev.value
        link.busy = False
        if link.waiting:
            self._start(link, link.waiting.popleft())
