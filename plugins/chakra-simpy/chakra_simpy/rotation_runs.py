"""Closed runs timed by one member: a collective whose members are a ring's rotations of member 0
(congestion-aware mode).

A message run is timed by member 0 alone, and its outcome kept as a closed run's
(:class:`closed_runs.ClosedRun`), when one actor issues all of it, every phase is run by steps on
one ring of members in index order with each member's part member 0's moved j places on
(:class:`algorithms.base.RotatedParts`: ring algorithms), and its members' routes are rotations
of one another: member j's route to the member o places on has as many links as member 0's, each
of the same bandwidth and latency, and no link carries two members' messages.  Then, for as long
as the run is closed, member j's messages queue behind its own only, on links like member 0's,
and what it receives from the member o places before arrives when member 0's message to the
member o places on does: member 0's course is every member's, shifted.  So member 0 runs alone
on links of its own (a private :class:`network.Network` and event loop), each arrival of a
message it sent standing for the arrival of the rotated message it receives, and the outcome is
its course with every count multiplied by the members and every link's final state given to its
rotations.

Events at one ns run in the order they were scheduled.  Member 0's own events keep that order
among themselves, but a message it receives is scheduled by its sender, at another place in the
whole run's order; so the time is taken only when no arrival shares its ns with another event of
member 0 (else the run is timed event by event).  The outcome is used as a kept one is
(:mod:`closed_check`): only where the run runs closed, the guard checked at its time.
"""

from __future__ import annotations

from collections import deque
from heapq import heappop
from typing import TYPE_CHECKING

from .closed_runs import ClosedRun, Issue
from .collective_context import CollectiveTally, SpanSink
from .event_loop import EventLoop
from .message_phases import Phase
from .message_run import MessageRun
from .network import Link, Network
from .run_facts import RunFacts

if TYPE_CHECKING:
    from .algorithms.base import RotatedParts

__all__ = ["rotated_outcome"]


class _Member0(MessageRun):
    """Member 0 of ``run`` on its own event loop and network: the message it sent to the member
    ``o`` places on arrives as the one it receives from the member ``o`` places before."""

    def __init__(self, run: MessageRun, size: int):  # noqa: D107  (what the steps read; all state its own)
        self.size = size
        self.inst, self.rank_of, self.pos, self.active = run.inst, run.rank_of, run.pos, run.active
        # its chunk phases drawn into a list of its own, when a timeline is drawn
        self.ctx = run.ctx._replace(spans=SpanSink(None if run.ctx.spans.spans is None else [], 1 << 62))
        self.loop = loop = EventLoop()
        loop.now = run.loop.now
        self.net = net = Network(loop, run.net.dims, run.net.coords)
        self.tally = CollectiveTally()
        self.phases = [Phase(ph.queue, ph.label, ph.messages, ph.turn, {}) for ph in run.phases]
        f = run.facts
        self.facts = RunFacts(f.inst, self.phases, f.phase_keys, f.pos, f.rank_of, net, [], f.on_done)
        self.running, self.queued, self.chunks_left, self.phase_start = {}, {}, {}, {}
        self.arrived, self.waiting, self.packets = set(), {}, {}
        self.finished = -1

    def enter(self) -> None:
        """Member 0's chunks enter their first phase, now."""
        self.chunks_left[0] = self.inst.n
        for c in range(self.inst.n):
            self._enter(0, c, 0)

    def _delivered(self, key: tuple[int, int, int, int, int]) -> None:
        c, p, _src, dst, n = key
        super()._delivered((c, p, (self.size - dst) % self.size, 0, n))

    def _draws(self, r: int, actor_rank: int) -> bool:
        return actor_rank in self.pos  # member 0's phases are those of every member, its actor's rank's too

    def _member_done(self, ai: int, now: int) -> None:
        self.finished = now

    def spans(self, check: int) -> tuple[tuple[int, str, int, int, int], ...] | None:
        """The chunk phases its actor draws, ``(track, label, chunk, ns after check, ns)``; None
        when no timeline is drawn."""
        drawn = self.ctx.spans.spans
        if drawn is None:
            return None
        return tuple((track, label, c, start - check, dur) for _ai, track, (label, c, _key), start, dur in drawn)

    def run_in_turn(self) -> bool:
        """Time member 0 without its event loop where its course is one chain: one chunk phase
        at a time (one queue, one active chunk), each step sending one message and receiving the
        rotation of it, every hop finding its link free and every arrival strictly after the
        event before it and before the one after it (no time shared with an arrival, as
        :meth:`run_alone` requires).  Called after :meth:`MessageRun.enter`, before any event
        ran; on True its outcome is set as running every event sets it (finish, counts, the
        links' final state), on False nothing is changed."""
        if self.active != 1 or self.ctx.spans.spans is not None or len({ph.queue for ph in self.phases}) != 1:
            return False
        size, phases, links_to = self.size, self.phases, self.facts.links
        order = deque((c, 0) for c in range(self.inst.n))
        free: dict[Link, int] = {}
        now, events, hops, entered = self.loop.now, 0, 0, False
        while order:
            c, p = order.popleft()
            delay, steps = phases[p].part(c, 0, links_to)
            events += (1 + len(steps)) if entered else 0  # the first phase's were counted as it entered
            entered = True
            now += delay
            for to, frm, m, add in steps:
                if len(to) != 1 or len(frm) != 1 or add <= 0:
                    return False
                route, k, n = to[0]
                if frm[0] != ((size - k) % size, n):
                    return False
                for link in route:
                    busy, cross = link.times.get(m) or link.time(m)
                    if cross <= 0 or free.get(link, link.free_at) >= now:
                        return False
                    free[link] = now + busy
                    now += cross
                hops += len(route)
                now += add
            if p + 1 < len(phases):
                order.append((c, p + 1))
        for link, at in free.items():
            link.free_at = at
        self.tally.events += events
        self.net.events += 2 * hops
        self.finished = now
        self.loop.queue.clear()
        return True

    def run_alone(self) -> bool:
        """Run every event; False when an arrival shares its ns with another event (the order
        of the whole run would have to tell which runs first)."""
        loop = self.loop
        queue = loop.queue
        arrival = self._delivered
        last, last_arrival = -1, False
        while queue:
            due, eid, fn, arg = heappop(queue)
            is_arrival = fn == arrival
            if due == last and (is_arrival or last_arrival):
                return False
            loop.now, loop.running = due, eid
            fn(arg)
            last, last_arrival = due, is_arrival
        return self.finished >= 0


def rotated_outcome(run: MessageRun) -> ClosedRun | None:
    """The outcome of ``run`` from its check on, timed by member 0 alone (module docstring), or
    None when its members are not rotations of member 0 or the order of its events at one ns
    would depend on the others'.  Called when one actor issues all of it, before its events are
    built; the check then comes ``issue.first`` ns later."""
    parts = _rotated_parts(run)
    if parts is None:
        return None
    size = parts[0].size
    me = _Member0(run, size)
    images = _rotations(run, me, size, set().union(*(p.peers() for p in parts)))
    if images is None:
        return None
    start = me.loop.now
    me.enter()
    entered, eids = me.tally.events, me.loop.eid
    first = min((e[0] for e in me.loop.queue), default=start) - start
    if first <= 0 or not (me.run_in_turn() or me.run_alone()):
        return None
    check = start + first
    end = me.finished
    used: list[tuple[Link, int]] = []
    for link, rotations in images.items():
        if link.pending or link.waiting or link.free_at >= end:
            return None
        if link.free_at >= check:
            used.extend((real, link.free_at - check) for real in rotations)
    if end <= check:
        return None
    return ClosedRun(end - check, (run.issued[0],), size * (me.tally.events - entered), size * me.net.events,
                     tuple(used), Issue(first, size * entered, size * eids), run.facts.lead(), me.spans(check))


def _rotated_parts(run: MessageRun) -> list[RotatedParts] | None:
    """The parts of every phase and chunk of ``run`` (each once) when all are rotated on one ring
    of all its members, else None."""
    parts: dict[int, RotatedParts] = {}
    for ph in run.phases:
        for c in range(run.inst.n):
            rotated = ph.rotated(c)
            if rotated is None:
                return None
            parts[id(rotated)] = rotated
    if not parts:
        return None
    size = next(iter(parts.values())).size
    if any(p.size != size for p in parts.values()) or sorted(run.pos.values()) != list(range(size)):
        return None
    return list(parts.values())


def _rotations(run: MessageRun, me: _Member0, size: int, offsets: set[int]) -> dict[Link, list[Link]] | None:
    """Each link of member 0's routes to the members ``offsets`` places on (on its own network)
    with the links of ``run``'s network that are its rotations, one per member; None when the
    members' routes are not rotations of member 0's (module docstring)."""
    images: dict[Link, list[Link]] = {}
    owner: dict[Link, tuple[int, Link]] = {}
    for o in sorted(offsets):
        mine = me.facts.links(0, o)
        for j in range(size):
            theirs = run.facts.links(j, (j + o) % size)
            if len(theirs) != len(mine):
                return None
            for link, real in zip(mine, theirs):
                if (real.bytes_per_ns, real.latency) != (link.bytes_per_ns, link.latency):
                    return None
                if owner.setdefault(real, (j, link)) != (j, link):
                    return None
                rotations = images.setdefault(link, [])
                if len(rotations) == j:
                    rotations.append(real)
                elif rotations[j] is not real:  # member 0's routes share a link where member j's do not
                    return None
    for rotations in images.values():
        if len(rotations) != size:
            return None
    return images
