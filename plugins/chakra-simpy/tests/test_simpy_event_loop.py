"""The congestion-aware network on its event loop against the link rules run on SimPy event by
event (the statement of :mod:`chakra_simpy.network`: a link serves one message at a time, first
come first served; each hop is an arrival event and an end-of-serialization event; events due at
one ns run in the order they were scheduled).

The network leaves a link's end of serialization off the queue unless a message waits for it,
and schedules plain calls: on seeded random traffic full of ties (sends at the same ns, messages
of 0 bytes whose link frees at the ns it starts, replies sent from arrivals) every message must
arrive at the same ns and in the same order as on SimPy, with the same count of events.
"""

from __future__ import annotations

import random
from collections import deque

import pytest
import simpy

from chakra_core.system import Dimension
from chakra_simpy.event_loop import EventLoop
from chakra_simpy.network import Network

SIZES = (0, 1000, 32768, 65536)


class _OnSimpy:
    """The link rules on SimPy, two timeouts per hop, over the routes of ``net``."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self.busy: set[int] = set()
        self.waiting: dict[int, deque] = {}
        self.events = 0

    def send(self, links, size, done) -> None:
        self._offer([links, 0, size, done])

    def _offer(self, msg) -> None:
        link = msg[0][msg[1]]
        if id(link) in self.busy:
            self.waiting.setdefault(id(link), deque()).append(msg)
        else:
            self._start(link, msg)

    def _start(self, link, msg) -> None:
        self.busy.add(id(link))
        serial = msg[2] / link.bytes_per_ns
        self.env.timeout(int(link.latency + serial)).callbacks.append(lambda _ev: self._arrived(msg))
        self.env.timeout(int(serial)).callbacks.append(lambda _ev: self._freed(link))
        self.events += 2

    def _arrived(self, msg) -> None:
        msg[1] += 1
        if msg[1] == len(msg[0]):
            msg[3]()
        else:
            self._offer(msg)

    def _freed(self, link) -> None:
        self.busy.discard(id(link))
        queue = self.waiting.get(id(link))
        if queue:
            self._start(link, queue.popleft())


def _traffic(seed: int, npus: int) -> list[tuple[int, int, int, int]]:
    """(send ns, src, dst, bytes) per message, many sent at one ns."""
    rng = random.Random(seed)
    out = []
    for _ in range(300):
        src, dst = rng.sample(range(npus), 2)
        out.append((rng.randrange(0, 20_000, 500), src, dst, rng.choice(SIZES)))
    return out


def _run(dims: tuple[Dimension, ...], coords, traffic, on_simpy: bool) -> tuple[list[tuple[int, int]], int]:
    """Every message's (arrival ns, id) in arrival order, and the events of the model; message i
    with i % 3 == 0 is answered from its destination on arrival (id i + 10_000, same size)."""
    loop = EventLoop()
    net = Network(loop, dims, coords)
    env = simpy.Environment() if on_simpy else loop
    ref = _OnSimpy(env) if on_simpy else None
    log: list[tuple[int, int]] = []

    def send(i: int, src: int, dst: int, size: int) -> None:
        def arrived(_arg=None) -> None:
            log.append((int(env.now), i))
            if i % 3 == 0:
                send(i + 10_000, dst, src, size)
        if ref is not None:
            ref.send(net.route(src, dst), size, arrived)
        else:
            net.send(src, dst, size, arrived)

    for i, (t, src, dst, size) in enumerate(traffic):
        env.timeout(t, (i, src, dst, size)).callbacks.append(lambda ev: send(*ev.value))
    env.run()
    return log, (ref.events if ref is not None else net.events)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("dims", "npus"), [((Dimension("Ring", 8, 50.0, 500.0),), 8),
                                            ((Dimension("Switch", 8, 50.0, 500.0),), 8),
                                            ((Dimension("FullyConnected", 8, 50.0, 500.0),), 8),
                                            ((Dimension("FullyConnected", 2, 200.0, 100.0),
                                              Dimension("Ring", 4, 25.0, 1000.0)), 8)])
def test_arrivals_and_events_equal_the_rules_run_on_simpy(seed, dims, npus):
    sizes = [d.npus_count for d in dims]
    coords = [(r % sizes[0], r // sizes[0]) if len(sizes) == 2 else (r,) for r in range(npus)]
    traffic = _traffic(seed, npus)
    got, got_events = _run(dims, coords, traffic, on_simpy=False)
    want, want_events = _run(dims, coords, traffic, on_simpy=True)
    assert len(got) == 400 and got == want
    assert got_events == want_events
    assert len({t for t, _i in got}) < len(got)  # arrivals at one ns: ties were exercised
