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
from heapq import heapify, heappush
from typing import TYPE_CHECKING, Any

from .algorithms import lookup
from .algorithms.base import Messages, PacketMember, PacketMessages, TreeTurn
from .chunk_phases import PhaseSpec, tree_turns
from .closed_runs import (
    ClosedRun,
    Issue,
    Kept,
    Recording,
    Undecided,
    closed,
    earliest_loud,
    links_free,
    outcome,
    quiet,
    split,
)
from .formulas import GROUP_ENDPOINT_DELAY
from .layouts import dim_layout, group_layout
from .network import Link

if TYPE_CHECKING:
    from .collective_context import CollectiveContext, CollectiveTally
    from .collectives import Instance

__all__ = ["MessageRun"]


#: a member's part of a chunk phase with the route of every message it sends: ns before its
#: first step, and its steps: ((links, peer, number) per message sent; (peer, number) per message
#: received; bytes; ns after)
Routed = tuple[int, list[tuple[tuple[tuple[tuple[Link, ...], int, int], ...], tuple[tuple[int, int], ...], int, int]]]


class _Phase:
    """One chunk phase of a plan: its queue and label, its algorithm's messages, for an
    alternating algorithm its turn, and the members' parts with routes built so far
    (``routed``, shared by the phases of the same messages)."""

    __slots__ = ("queue", "label", "messages", "turn", "routed")

    def __init__(self, queue: int, label: str, messages: Messages, turn: TreeTurn | None,
                 routed: dict[tuple[int, int], Routed]):
        self.queue = queue
        self.label = label
        self.messages = messages
        self.turn = turn
        self.routed = routed

    def part(self, c: int, j: int, links: Callable[[int, int], tuple[Link, ...]]) -> Routed:
        """Member ``j``'s part for chunk ``c`` (a phase run by steps), every message with its
        route (``links(j, k)``: from member j to member k)."""
        msgs = self.messages
        assert not isinstance(msgs, PacketMessages)
        choice = 0 if self.turn is None else self.turn.choice(c)
        got = self.routed.get((choice, j))
        if got is None:
            delay, steps = msgs.choices[choice][j]
            got = self.routed[(choice, j)] = (delay, [(tuple((links(j, k), k, n) for k, n in to), frm, m, add)
                                                      for to, frm, m, add in steps])
        return got


class MessageRun:
    """A collective instance ``inst`` run message by message; members start as they issue it
    (:meth:`issue`); ``on_done(inst, actor, last)`` runs when the ranks of an actor have
    finished it (``last``: the whole collective has), and ``broken`` is raised when ranks
    simulated as one finish at different times.  SimPy events it schedules are counted in
    ``tally``; ``memo`` keeps the messages of every phase built and the members' routed parts,
    and ``closed_runs`` the outcomes of closed runs (:mod:`closed_runs`), for the collectives
    after it (one of each per simulation)."""

    def __init__(self, ctx: CollectiveContext, tally: CollectiveTally, inst: Instance,
                 per_member: Sequence[PhaseSpec], tree_bases: dict[int, int],
                 on_done: Callable[[Instance, int, bool], None], broken: type[Exception],
                 memo: dict[tuple, tuple[Messages, dict]], closed_runs: Kept):
        self.ctx = ctx
        self.memo = memo
        self.closed_runs = closed_runs
        self.tally = tally
        self.inst = inst
        self.on_done = on_done
        self.broken = broken
        group = per_member[0].dim is None
        ranks = list(inst.members)
        self.rank_of = ranks if group else list(range(ctx.planner.total))
        self.pos = {r: j for j, r in enumerate(self.rank_of)}
        #: the memo key of each phase's messages
        self.phase_keys: list[tuple] = []
        self.phases = self._phases(per_member, tree_bases, ranks, group)
        #: the actors in the order they issued it
        self.issued: list[int] = []
        #: what its issue did (:meth:`issue`), its check being due
        self.issue_did = Issue(0, -1, 0)
        #: a deferred issue's ns and first scheduling order (:meth:`_defer`)
        self.deferred: tuple[int, int] | None = None
        self.recording: Recording | None = None
        #: what fixes its course (:meth:`_kind`), once it is being recorded
        self.kind: tuple = ()
        #: recorded with other runs starting with it (:meth:`_check_group`): the runs, its place
        #: among them, the group's kind and how many of them have not ended
        self.group: tuple[tuple[MessageRun, ...], int, tuple, list[int], tuple[Link, ...]] | None = None
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

    def _phases(self, per_member: Sequence[PhaseSpec], tree_bases: dict[int, int], ranks: list[int],
                group: bool) -> list[_Phase]:
        """Every phase's messages, from its algorithm on its member layout (once per phase
        spec and group in ``memo``)."""
        memo = self.memo
        members = tuple(ranks) if group else None
        out = []
        for spec, turn, planned in zip(per_member, tree_turns(per_member, tree_bases), self.inst.phases):
            key = (spec, members)
            self.phase_keys.append(key)
            got = memo.get(key)
            if got is None:
                got = memo[key] = (self._messages(spec, ranks, group), {})
            out.append(_Phase(planned.queue, planned.label, got[0], turn, got[1]))
        return out

    def _messages(self, spec: PhaseSpec, ranks: list[int], group: bool) -> Messages:
        """A phase's messages from its algorithm, on its member layout."""
        ctx = self.ctx
        sd = ctx.sd
        lay = (group_layout(ranks, ctx.planner.hop) if spec.dim is None
               else dim_layout(ctx.planner.dims, spec.dim, ctx.planner.total))
        e = GROUP_ENDPOINT_DELAY if group else sd.endpoint_delay
        return lookup(spec.impl).algorithm.messages(spec.kind, spec.data, lay, e, sd.local_mem_bw)

    def issue(self, ai: int) -> None:
        """The ranks of actor ``ai`` issue the collective now: their chunks enter their first phase."""
        self.issued.append(ai)
        alone = len(self.left_per_actor) == 1
        if alone and self._defer():
            return
        loop = self.loop
        events, eid = self.tally.events, loop.eid
        self._enter_all(ai)
        if len(self.issued) == len(self.left_per_actor) and self._may_close():
            first = min((e[0] for e in loop.queue if getattr(e[2], "__self__", None) is self), default=None)
            if first is not None and first > loop.now:  # none of its events can have run yet
                self.issue_did = Issue(first - loop.now, self.tally.events - events if alone else -1, loop.eid - eid)
                loop.call_first(first, self._check, None)

    def _enter_all(self, ai: int) -> None:
        """The chunks of the ranks of actor ``ai`` enter their first phase."""
        for r in self.ctx.actors[ai].ranks:
            j = self.pos.get(r)
            if j is None:
                continue
            self.chunks_left[j] = self.inst.n
            for c in range(self.inst.n):
                self._enter(j, c, 0)

    # -- closed runs (:mod:`closed_runs`) ----------------------------------------------
    def _may_close(self) -> bool:
        """Whether every member issued it at this ns and no timeline is drawn."""
        now = self.loop.now
        return self.ctx.spans.spans is None and all(t == now for _a, _i, t in self.inst.arrived.values())

    def _defer(self) -> bool:
        """One actor issues all of it now: when a kept outcome of its kind says what its issue
        does, take the scheduling orders of the events its issue schedules and leave them
        unbuilt until its check (:meth:`_build`, unless it is replayed)."""
        if not self._may_close():
            return False
        got = self.closed_runs.outcomes.get(self._kind())
        if got is None or got.issue.events < 0:
            return False
        loop = self.loop
        self.deferred = (loop.now, loop.eid)
        loop.eid += got.issue.eids
        loop.call_first(loop.now + got.issue.first, self._check, None)
        return True

    def _build(self) -> None:
        """Build the events of a deferred issue as the issue would have, at its ns and with the
        scheduling orders it took (the clock and the order counter set back meanwhile)."""
        assert self.deferred is not None
        loop = self.loop
        now, eid = loop.now, loop.eid
        loop.now, loop.eid = self.deferred
        self.deferred = None
        self._enter_all(self.issued[0])
        loop.now, loop.eid = now, eid

    def _kind(self) -> tuple:
        """What fixes a closed run's course from its check on."""
        n = self.inst.n
        turns = tuple(None if ph.turn is None else tuple(ph.turn.choice(c) for c in range(n)) for ph in self.phases)
        ctx = self.ctx
        return (tuple(self.phase_keys), tuple(ph.queue for ph in self.phases), turns, n, self.inst.members,
                tuple(ctx.rank_actor[r] for r in self.inst.members), tuple(self.issued))

    def _run_links(self, kind: tuple) -> tuple[Link, ...]:
        """Every link a message of this run can cross (kept per kind)."""
        got = self.closed_runs.links.get(kind)
        if got is None:
            seen: dict[Link, None] = {}
            for ph in self.phases:
                if isinstance(ph.messages, PacketMessages):
                    lay = ph.messages.layout
                    for j in self.pos.values():
                        for k in range(1, lay.size):
                            seen.update(dict.fromkeys(self._links(j, lay.offset(j, k))))
                    continue
                for c in range(self.inst.n):
                    for j in self.pos.values():
                        for to, _frm, _m, _add in ph.part(c, j, self._links)[1]:
                            for links, _k, _n in to:
                                seen.update(dict.fromkeys(links))
            got = self.closed_runs.links[kind] = tuple(seen)
        return got

    def _check(self, _arg: None) -> None:
        """Just before this run's first own event: replay its kept outcome when it runs closed
        (alone, or among quiet events), or run it event by event and keep the outcome when it
        may."""
        if self.recording is not None:  # recorded with its group
            return
        loop = self.loop
        now = loop.now
        runs = self._starting()
        if len(runs) > 1 and self._check_group(runs):
            return
        kind = self._kind()
        got = self.closed_runs.outcomes.get(kind)
        others, own, real, stand = split(loop.queue, (self,), _STAND_INS)
        among = got is not None and not closed(now + got.duration, real, stand)
        if got is not None and among and not self._among_quiet(got, others, now + got.duration, stand,
                                                                self.inst.actor_ids) or \
                not links_free(self._run_links(kind), now):
            if self.deferred is not None:
                self._build()
            return
        if got is None:
            self.kind = kind
            node_end = self.ctx.node_end
            if self.closed_runs.quiet and node_end is not None:
                real = earliest_loud(others, node_end, self.inst.actor_ids)
            self.recording = Recording(now, own, real, stand, self.tally.events, self.net.events, self.issue_did)
            return
        if self.deferred is not None:
            self.tally.events += got.issue.events
        self._replay(got, others, among, self._close, got.order)

    def _replay(self, got: ClosedRun, others: list, among: bool, close: Callable[[Any], None], arg: Any) -> None:
        """Replay kept outcome ``got`` from now: the queue keeps ``others`` only, the outcome's
        event counts are added and its links' final state set, and ``close(arg)`` runs at its end
        (after the quiet events due then when ``among``)."""
        loop = self.loop
        now = loop.now
        loop.queue[:] = others
        heapify(loop.queue)
        self.tally.events += got.tally_events
        self.net.events += got.net_events
        for link, free in got.links:
            link.free_at = now + free
        if among:
            loop.call_first(max(now, now + got.duration - got.lead), self._mark, (now + got.duration, close, arg))
        else:
            loop.call(got.duration, close, arg)

    def _starting(self) -> list[MessageRun]:
        """This run and the runs whose checks are due now after it, none of them deferred."""
        loop = self.loop
        now = loop.now
        checks = sorted((eid, getattr(fn, "__self__", None)) for due, eid, fn, _arg in loop.queue
                        if due == now and eid < 0 and getattr(fn, "__func__", None) is MessageRun._check)
        runs = [self] + [run for _eid, run in checks if isinstance(run, MessageRun) and run is not self]
        return runs if all(run.deferred is None for run in runs) else [self]

    def _check_group(self, runs: list[MessageRun]) -> bool:
        """Runs starting together (``runs``, their checks due now, no rank in two of them): replay
        their kept joint outcome when they run closed together (alone, or among quiet events), or
        record them together; False when they may not (this run is then checked alone)."""
        loop = self.loop
        now = loop.now
        kinds = [run._kind() for run in runs]
        links = tuple(dict.fromkeys(link for run, k in zip(runs, kinds) for link in run._run_links(k)))
        actors = [ai for run in runs for ai in run.inst.actor_ids]
        ais = set(actors)
        if len(ais) < len(actors):
            return False
        others, own, real, stand = split(loop.queue, tuple(runs), _STAND_INS)
        place = {id(run): k for k, run in enumerate(runs)}
        owner = [(due, eid, place.get(id(getattr(fn, "__self__", None)))) for due, eid, fn, _arg in loop.queue]
        order = tuple((due - now, k) for due, eid, k in sorted(owner) if k is not None and eid >= 0)
        kind = (tuple(kinds), order)
        got = self.closed_runs.outcomes.get(kind)
        among = got is not None and not closed(now + got.duration, real, stand)
        if got is not None and among and not self._among_quiet(got, others, now + got.duration, stand, ais) or \
                not links_free(links, now):
            return False
        if got is None:
            node_end = self.ctx.node_end
            if self.closed_runs.quiet and node_end is not None:
                real = earliest_loud(others, node_end, ais)
            rec = Recording(now, own, real, stand, self.tally.events, self.net.events, self.issue_did)
            left = [len(runs)]
            for k, run in enumerate(runs):
                run.kind, run.recording, run.group = kinds[k], rec, (tuple(runs), k, kind, left, links)
            return True
        self._replay(got, others, among, self._close_group, (tuple(runs), got.order))
        return True

    def _close_group(self, arg: tuple[tuple[MessageRun, ...], tuple]) -> None:
        """The end of runs replayed together: their actors' ranks are handed back in ``order``
        (``(run, actor)`` pairs)."""
        runs, order = arg
        last = {k: n for n, (k, _ai) in enumerate(order)}
        for n, (k, ai) in enumerate(order):
            run = runs[k]
            run.on_done(run.inst, ai, last[k] == n)

    def _among_quiet(self, got: ClosedRun, others: list, end: int, stand: float, actors: set[int]) -> bool:
        """Whether a run (or group) of kept outcome ``got`` ending at ``end`` ns, of ``actors``,
        runs closed among quiet events (:mod:`closed_runs`), ``others`` being the other events
        queued and ``stand`` the earliest due of a replayed end."""
        node_end = self.ctx.node_end
        return (self.closed_runs.quiet and got.lead >= 0 and end < stand and node_end is not None
                and quiet(others, end, node_end, actors))

    def _mark(self, arg: tuple[int, Callable, object]) -> None:
        """``lead`` ns before the end of a run replayed among quiet events (ahead of that ns): its
        hand-back call (``close(what)``, ``arg = (end, close, what)``) takes its scheduling order
        now; the end is checked (:meth:`_verify`)."""
        end, close, what = arg
        loop = self.loop
        eid = loop.eid
        heappush(loop.queue, (end, eid, close, what))
        loop.eid = eid + 1
        loop.call_first(end, self._verify, eid)

    def _verify(self, eid: int) -> None:
        """At the end of a run replayed among quiet events, ahead of that ns: raise
        :class:`Undecided` when an event due now was scheduled after its hand-back call (order
        ``eid``), before this ns."""
        now = self.loop.now
        if any(due == now and e > eid for due, e, _fn, _arg in self.loop.queue):
            raise Undecided(f"collective #{self.inst.key[1] + 1} of group {self.inst.key[0] or 'all'!r}")

    def _close(self, order: tuple[int, ...]) -> None:
        """The end of a replayed closed run: its actors' ranks are handed back in ``order``."""
        last = len(order) - 1
        for k, ai in enumerate(order):
            self.on_done(self.inst, ai, k == last)

    def _hand_back(self, rec: Recording, ai: int) -> None:
        """Actor ``ai``'s ranks are about to be handed back: note it in ``rec``; after the last,
        keep the outcome if the run ran closed."""
        loop = self.loop
        now = loop.now
        if self.group is not None:
            self._group_hand_back(rec, ai, self.group)
            return
        tie = not rec.order and any(due == now and getattr(fn, "__self__", None) is not self
                                    for due, _eid, fn, _arg in loop.queue)
        rec.hand_back(ai, now, loop.eid, self._run_links(self.kind), self.tally.events, self.net.events, tie)
        if self.members_left == 0:
            got = outcome(rec, loop.now, loop.running, self._lead())
            if got is not None:
                self.closed_runs.outcomes[self.kind] = got

    def _group_hand_back(self, rec: Recording, ai: int, group: tuple) -> None:
        """:meth:`_hand_back` for a run recorded with its group."""
        loop = self.loop
        now = loop.now
        runs, k, kind, left, links = group
        ids = {id(run) for run in runs}
        tie = not rec.order and any(due == now and id(getattr(fn, "__self__", None)) not in ids
                                    for due, _eid, fn, _arg in loop.queue)
        rec.hand_back((k, ai), now, loop.eid, links, self.tally.events, self.net.events, tie)
        if self.members_left == 0:
            left[0] -= 1
            if left[0] == 0:
                leads = [run._lead() for run in runs]
                got = outcome(rec, now, loop.running, -1 if min(leads) < 0 else max(leads))
                if got is not None:
                    self.closed_runs.outcomes[kind] = got

    def _lead(self) -> int:
        """The most ns before its end at which a member's last event is scheduled: the delay after
        the last step of a member's part of the last phase (its first delay when it has no step);
        -1 when one of them is 0 or the last phase runs packets."""
        ph = self.phases[-1]
        if isinstance(ph.messages, PacketMessages):
            return -1
        adds = []
        for c in range(self.inst.n):
            for j in self.pos.values():
                delay, steps = ph.part(c, j, self._links)
                adds.append(steps[-1][3] if steps else delay)
        return max(adds) if min(adds) > 0 else -1

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
        delay, steps = self.phases[p].part(c, j, self._links)
        self._later(delay, self._step_due, (j, c, p, 0, steps))
        self.tally.events += len(steps)  # the events of its steps, counted here at once

    def _links(self, j: int, k: int) -> tuple[Link, ...]:
        """The links from member j to member k."""
        return self.net.route(self.rank_of[j], self.rank_of[k])

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
        if r == a.rank:
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

    def _member_done(self, ai: int, now: int) -> None:
        if self.finish.setdefault(ai, now) != now:
            raise self.broken(f"ranks simulated as rank {self.ctx.actors[ai].rank} finish collective "
                              f"#{self.inst.key[1] + 1} of group {self.inst.key[0] or 'all'!r} at different "
                              "times")
        self.members_left -= 1
        self.left_per_actor[ai] -= 1
        if self.left_per_actor[ai] == 0:
            if self.recording is not None:
                self._hand_back(self.recording, ai)
            self.on_done(self.inst, ai, self.members_left == 0)


#: the calls that stand for the ends of replayed runs (:func:`closed_runs.split`)
_STAND_INS = (MessageRun._close, MessageRun._mark, MessageRun._close_group)
