"""Collectives of the congestion-aware mode, message by message on shared links (:mod:`network`).

Each member rank runs its part of a collective from the moment it issues it, as ASTRA-sim's
system layer does (no barrier): every chunk goes through the plan's phases; a chunk phase waits
in the member's own queue of its dimension (at most ``active-chunks-per-dimension`` running,
first come first served); once running it waits its part's first delay (an endpoint delay ``e``
for most algorithms), then takes its steps.  A step sends the step's messages (posting the
matching receives at that moment), waits until every message it receives has arrived, then waits
``add`` ns (an endpoint delay, plus a reduction where due) before the next step; the phase ends
after the last step's ``add``.  Each algorithm says which messages its members send
(:meth:`algorithms.base.Algorithm.messages`): steps, or packets sent as they become ready (the
direct all-reduce).  Every message crosses the links of its route and shares them with every
other message in flight (other members, chunks, collectives and point-to-point messages).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from heapq import heappush
from typing import TYPE_CHECKING

from .algorithms.base import Messages, PacketMember, PacketMessages
from .chunk_phases import PhaseSpec
from .closed_check import RunCheck
from .closed_runs import ClosedRun, Kept
from .message_phases import plan_phases
from .run_facts import RunFacts

if TYPE_CHECKING:
    from .collective_context import CollectiveContext, CollectiveTally
    from .collectives import Instance

__all__ = ["MessageRun"]


class MessageRun:
    """A collective instance ``inst`` run message by message; members start as they issue it
    (:meth:`issue`); ``on_done(inst, actor, last)`` runs when the ranks of an actor have
    finished it (``last``: the whole collective has), and ``broken`` is raised when ranks
    simulated as one finish at different times.  SimPy events it schedules are counted in
    ``tally``; ``memo`` keeps the messages of every phase built and the members' routed parts,
    and ``closed_runs`` the outcomes of closed runs (:mod:`closed_runs`), for the collectives
    after it (one of each per simulation).  Its closed-run check (``closed``,
    :mod:`closed_check`) sees it through :class:`run_facts.RunFacts`."""

    def __init__(self, ctx: CollectiveContext, tally: CollectiveTally, inst: Instance,
                 per_member: Sequence[PhaseSpec], tree_bases: dict[int, int],
                 on_done: Callable[[Instance, int, bool], None], broken: type[Exception],
                 memo: dict[tuple, tuple[Messages, dict]], closed_runs: Kept):
        self.ctx = ctx
        self.tally = tally
        self.inst = inst
        self.on_done = on_done
        self.broken = broken
        group = per_member[0].dim is None
        ranks = list(inst.members)
        self.rank_of = ranks if group else list(range(ctx.planner.total))
        self.pos = {r: j for j, r in enumerate(self.rank_of)}
        self.phases, phase_keys = plan_phases(ctx, memo, inst, per_member, tree_bases, ranks, group)
        #: the actors in the order they issued it
        self.issued: list[int] = []
        self.active = ctx.sd.active_chunks_per_dimension
        self.running: dict[tuple[int, int], int] = {}
        self.queued: dict[tuple[int, int], deque] = {}
        self.chunks_left: dict[int, int] = {}
        #: messages that reached their member before it posted their receive
        self.arrived: set[tuple] = set()
        #: message -> [messages its step still waits for, ns after the step, the next step's key]
        self.waiting: dict[tuple, list] = {}
        self.phase_start: dict[tuple[int, int, int], int] = {}
        self.left_per_actor: dict[int, int] = {}
        for r in ranks:
            ai = ctx.rank_actor[r]
            self.left_per_actor[ai] = self.left_per_actor.get(ai, 0) + 1
        self.finish: dict[int, int] = {}
        self.members_left = len(ranks)
        self.packets: dict[tuple[int, int, int], PacketMember] = {}
        net = ctx.network
        assert net is not None  # message runs exist in the congestion-aware mode only
        self.net = net
        self.loop = net.loop
        facts = RunFacts(inst, self.phases, phase_keys, self.pos, self.rank_of, net, self.issued, on_done)
        #: what its closed-run check reads of it, and the links between its members (:meth:`RunFacts.links`)
        self.facts = facts
        self.closed = RunCheck(facts, ctx, tally, closed_runs)

    def issue(self, ai: int) -> None:
        """The ranks of actor ``ai`` issue the collective now: their chunks enter their first phase."""
        self.issued.append(ai)
        alone = len(self.left_per_actor) == 1
        if alone and self.closed.defer(self.check_due, self._rotated):
            return
        events, eid = self.tally.events, self.loop.eid
        self._enter_all(ai)
        if len(self.issued) == len(self.left_per_actor):
            self.closed.issued(self, self.check_due, events, eid, alone)

    def _enter_all(self, ai: int) -> None:
        """The chunks of the ranks of actor ``ai`` enter their first phase."""
        for r in self.ctx.actors[ai].ranks:
            j = self.pos.get(r)
            if j is None:
                continue
            self.chunks_left[j] = self.inst.n
            for c in range(self.inst.n):
                self._enter(j, c, 0)

    def _rotated(self) -> ClosedRun | None:
        """This run's outcome timed by member 0 alone, where its members are rotations of member
        0 (:mod:`rotation_runs`, which builds on this class)."""
        from .rotation_runs import rotated_outcome

        return rotated_outcome(self)

    def build_issue(self) -> None:
        """Build the events of its deferred issue (:meth:`closed_check.RunCheck.build`)."""
        self.closed.build(self._enter_all)

    def check_due(self, _arg: None) -> None:
        """Its closed-run check (:meth:`closed_check.RunCheck.check`), queued as its own event."""
        self.closed.check(self, self._enter_all)

    def _later(self, delay: int, callback, value) -> None:
        self.loop.call(delay, callback, value)
        self.tally.events += 1

    def _enter(self, j: int, c: int, p: int) -> None:
        q = (j, self.phases[p].queue)
        if self.running.get(q, 0) < self.active:
            self._go(j, c, p)
        else:
            self.queued.setdefault(q, deque()).append((c, p))

    def _go(self, j: int, c: int, p: int) -> None:
        q = (j, self.phases[p].queue)
        self.running[q] = self.running.get(q, 0) + 1
        self.phase_start[(j, c, p)] = self.loop.now
        if isinstance(self.phases[p].messages, PacketMessages):
            for delay in self._member(j, c, p).start():
                self._later(delay, self._packet_ready, (j, c, p))
            return
        delay, steps = self.phases[p].part(c, j, self.facts.links)
        self._later(delay, self._step_due, (j, c, p, 0, steps))
        self.tally.events += len(steps)  # the events of its steps, counted here at once

    # -- packet by packet ---------------------------------------------------------------
    def _packets(self, p: int) -> PacketMessages:
        msgs = self.phases[p].messages
        assert isinstance(msgs, PacketMessages)
        return msgs

    def _member(self, j: int, c: int, p: int) -> PacketMember:
        me = self.packets.get((j, c, p))
        if me is None:
            me = self.packets[(j, c, p)] = self._packets(p).member()
        return me

    def _packet_ready(self, key: tuple[int, int, int]) -> None:
        j, c, p = key
        msgs = self._packets(p)
        net = self.net
        me = self.packets[key]
        for k in me.packet_ready():
            dst = msgs.layout.offset(j, k)
            net.send(self.rank_of[j], self.rank_of[dst], msgs.m, self._packet_in, (dst, c, p, k))
            if me.post(k):
                self._later(me.receive(), self._packet_ready, (j, c, p))
        if me.done:
            del self.packets[(j, c, p)]
            self._phase_done(j, c, p)

    def _packet_in(self, key: tuple[int, int, int, int]) -> None:
        """A packet from the member ``k`` places before reached member ``j``."""
        j, c, p, k = key
        me = self._member(j, c, p)
        if me.arrive(k):
            self._later(me.receive(), self._packet_ready, (j, c, p))

    # -- step by step -------------------------------------------------------------------
    def _step_due(self, key: tuple[int, int, int, int, list]) -> None:
        """Member ``j`` takes step ``s`` of its ``steps`` for chunk ``c`` of phase ``p`` (``key``
        = ``(j, c, p, s, steps)``): it sends, and waits for what it receives."""
        j, c, p, s, steps = key
        if s == len(steps):
            self._phase_done(j, c, p)
            return
        to, frm, m, add = steps[s]
        net = self.net
        delivered = self._delivered
        for links, k, n in to:
            if len(links) == 1:  # net.carry's one-hop case, one call less
                net.offer(links[0], m, delivered, (c, p, j, k, n))
            else:
                net.carry(links, m, delivered, (c, p, j, k, n))
        arrived = self.arrived
        waiting = self.waiting
        wait = [0, add, (j, c, p, s + 1, steps)]
        for k, n in frm:
            got = (c, p, k, j, n)
            if got in arrived:
                arrived.remove(got)
            else:
                waiting[got] = wait
                wait[0] += 1
        if not wait[0]:
            loop = self.loop
            eid = loop.eid
            heappush(loop.queue, (loop.now + add, eid, self._step_due, wait[2]))
            loop.eid = eid + 1

    def _delivered(self, key: tuple[int, int, int, int, int]) -> None:
        """Message ``key`` = ``(c, p, src, dst, n)`` reached its member."""
        wait = self.waiting.pop(key, None)
        if wait is None:
            self.arrived.add(key)
            return
        wait[0] -= 1
        if wait[0] == 0:
            loop = self.loop
            eid = loop.eid
            heappush(loop.queue, (loop.now + wait[1], eid, self._step_due, wait[2]))
            loop.eid = eid + 1

    def _phase_done(self, j: int, c: int, p: int) -> None:
        ctx = self.ctx
        now = self.loop.now
        ph = self.phases[p]
        start = self.phase_start.pop((j, c, p))
        r = self.rank_of[j]
        a = ctx.actors[ctx.rank_actor[r]]
        if self._draws(r, a.rank):
            ctx.spans.add(a.index, 10 + ph.queue, (ph.label, c, self.inst.key), start, now - start)
        q = (j, ph.queue)
        self.running[q] -= 1
        wait = self.queued.get(q)
        if wait:
            self._go(j, *wait.popleft())
        if p + 1 < len(self.phases):
            self._enter(j, c, p + 1)
            return
        self.chunks_left[j] -= 1
        if self.chunks_left[j] == 0:
            self._member_done(a.index, now)

    def _draws(self, r: int, actor_rank: int) -> bool:
        """Whether member rank ``r`` draws its chunk phases: the rank its actor is named by."""
        return r == actor_rank

    def _member_done(self, ai: int, now: int) -> None:
        if self.finish.setdefault(ai, now) != now:
            raise self.broken(f"ranks simulated as rank {self.ctx.actors[ai].rank} finish collective "
                              f"#{self.inst.key[1] + 1} of group {self.inst.key[0] or 'all'!r} at different "
                              "times")
        self.members_left -= 1
        self.left_per_actor[ai] -= 1
        if self.left_per_actor[ai] == 0:
            self.closed.hand_back(self, ai, self.members_left == 0)
            self.on_done(self.inst, ai, self.members_left == 0)

