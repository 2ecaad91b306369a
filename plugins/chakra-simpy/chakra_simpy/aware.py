"""Collectives of the congestion-aware mode, message by message on shared links (:mod:`network`).

Each member rank runs its part of a collective from the moment it issues it, as ASTRA-sim's
system layer does (no barrier): every chunk goes through the plan's phases; a chunk phase waits
in the member's own queue of its dimension (at most ``active-chunks-per-dimension`` running,
first come first served); once running it waits one endpoint delay ``e``, then takes its steps.
A step sends the step's messages (posting the matching receives at that moment), waits until
every message it receives has arrived, then waits ``add`` ns (an endpoint delay, plus a
reduction where due) before the next step; the phase ends after the last step's ``add``.  These
are the steps that :mod:`stagger` chains in closed form for the congestion-unaware mode; here
every message crosses the links of its route and shares them with every other message in flight
(other members, chunks, collectives and point-to-point messages).

Messages per step (``P`` members of a ring in rank order, ``m`` bytes):

- ring: to the next member, from the previous one; ``2(P-1)`` steps (all-reduce), ``P-1``
  (reduce-scatter, all-gather), ``P(P-1)/2`` (all-to-all);
- direct: to the members 1, 2, ..., P-1 places on, in that order, from all of them (ASTRA-sim's
  direct algorithm turns its receiver round the ring); an all-reduce packet by packet, as
  ``AllToAll.cc`` sends them (:class:`_DirectAllReduce`);
- halvingDoubling: to and from the exchange partner of the step;
- doubleBinaryTree (the trees of :mod:`dbt`, max or min tree per chunk as there): a leaf sends
  up after one endpoint delay and finishes one endpoint delay after the message from its parent;
  an inner member posts its children's receives at the start, sends up ``e + r`` after both
  arrived, and ``e + r`` after its parent's message sends down to both children and finishes;
  the root sends down ``e + r`` after its child's message (``r`` = the reduction of the chunk).
"""

from __future__ import annotations

from collections import deque
from functools import partial
from typing import TYPE_CHECKING

from chakra_core.system import algorithm_base

from .dbt import tree
from .directar import DirectMember
from .perrank import Layout, dim_layout, group_layout
from .plans import DBT, dbt_visits
from .timing import GROUP_ENDPOINT_DELAY, red, ring_steps

if TYPE_CHECKING:
    from .collectives import Instance
    from .engine import Sim

__all__ = ["MessageRun", "runs_by_message"]

#: one step of a member: (members sent to, in order; members received from; bytes; ns after)
Step = tuple[tuple[int, ...], tuple[int, ...], int, int]
#: a step with every peer paired with the number of messages to (from) it in the steps before
Numbered = tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...], int, int]
#: a member's part of a chunk phase: ns before its first step, its steps
Part = tuple[int, list[Numbered]]


def _numbered(steps: list[Step]) -> list[Numbered]:
    """``steps`` with each peer numbered, so that a message is told apart from the others
    between the same two members in one chunk phase."""
    sent: dict[int, int] = {}
    got: dict[int, int] = {}
    out = []
    for to, frm, m, add in steps:
        to_n = tuple((k, sent.get(k, 0)) for k in to)
        frm_n = tuple((k, got.get(k, 0)) for k in frm)
        for k in to:
            sent[k] = sent.get(k, 0) + 1
        for k in frm:
            got[k] = got.get(k, 0) + 1
        out.append((to_n, frm_n, m, add))
    return out


def runs_by_message(per_phase) -> bool:
    """Whether a plan's phases run message by message: every plan but the one* variants on
    several dimensions (``per_phase`` None)."""
    return per_phase is not None


def _tree_parts(data: int, lay: Layout, root_max: bool, e: int, local_mem_bw: float) -> list[Part]:
    """Every member's part of a double-binary-tree chunk phase on the max or min tree."""
    parent = tree(lay.size, root_max)
    children: list[list[int]] = [[] for _ in parent]
    for o, q in enumerate(parent):
        if q >= 0:
            children[q].append(o)
    r = red(data, local_mem_bw)
    out: list[Part] = [(0, [])] * len(lay.index)
    for members in lay.slices:
        for o, j in enumerate(members):
            up = tuple(members[q] for q in (parent[o],) if q >= 0)
            kids = tuple(members[c] for c in children[o])
            if not kids:
                steps: list[Step] = [(up, up, data, e)]
            elif not up:
                steps = [((), kids, data, e + r), (kids, (), data, 0)]
            else:
                steps = [((), kids, data, e + r), (up, up, data, e + r), (kids, (), data, 0)]
            out[j] = (0 if kids else e, _numbered(steps))
    return out


def _parts(kind: str, data: int, impl: str, lay: Layout, e: int, local_mem_bw: float) -> list[Part]:
    """Every member's part of one chunk phase of ``data`` bytes with algorithm ``impl``
    (ring, direct or halvingDoubling)."""
    return [(e, _numbered(steps)) for steps in _steps(kind, data, impl, lay, e, local_mem_bw)]


def _steps(kind: str, data: int, impl: str, lay: Layout, e: int, local_mem_bw: float) -> list[list[Step]]:
    p = lay.size
    members = range(len(lay.index))
    base, _ = algorithm_base(impl)
    if base == "ring":
        count, nred, div = ring_steps(kind, p)
        m = data // div
        r = red(m, local_mem_bw) if nred else 0
        return [[((lay.offset(j, 1),), (lay.offset(j, -1),), m, e + (r if s < nred else 0))
                 for s in range(count)] for j in members]
    if base == "direct":
        m = data if kind == "AG" else data // p
        out = []
        for j in members:
            peers = tuple(lay.offset(j, o) for o in range(1, p))  # an all-reduce: _DirectAllReduce
            out.append([(peers, peers, m, e + (red(m, local_mem_bw) if kind == "RS" else 0))])
        return out
    k = p.bit_length() - 1
    msgs: list[tuple[int, int, int]] = []  # (bytes, distance, ns after its receive)
    if kind in ("AR", "RS"):
        sizes = [data // 2]
        for _ in range(k - 1):
            sizes.append(sizes[-1] // 2)
        for i in range(k):
            msgs.append((sizes[i], 1 << i, e + (red(sizes[i + 1], local_mem_bw) if i + 1 < k else 0)))
        if kind == "AR":
            t = 2 * (sizes[-1] // 2)
            msgs += [(t << (j - 1), p >> j, e) for j in range(1, k + 1)]
    else:
        msgs = [(data << (i - 1), p >> i, e) for i in range(1, k + 1)]
    out = []
    for j in members:
        steps = []
        for m, dist, add in msgs:
            partner = lay.offset(j, dist if (lay.index[j] // dist) % 2 == 0 else -dist)
            steps.append(((partner,), (partner,), m, add))
        out.append(steps)
    return out


class _DirectAllReduce:
    """A direct all-reduce chunk phase on the ring of ``lay``, ``m`` bytes a message, run packet
    by packet (:class:`directar.DirectMember`, ``e`` and ``r`` its endpoint delay and reduction),
    every message on the shared links."""

    __slots__ = ("lay", "m", "e", "r")

    def __init__(self, lay: Layout, m: int, e: int, r: int):
        self.lay, self.m, self.e, self.r = lay, m, e, r


class _Phase:
    """One chunk phase of a plan: its queue and label, and the members' parts, one list per
    tree (``trees[0]`` for any other algorithm); chunk c takes the tree ``(base + c * visits +
    visit) % 2``."""

    __slots__ = ("queue", "label", "trees", "base", "visits", "visit", "direct")

    def __init__(self, queue: int, label: str, trees: list[list[Part]], base: int = 0, visits: int = 0,
                 visit: int = 0, direct: _DirectAllReduce | None = None):
        self.queue = queue
        self.label = label
        self.trees = trees
        self.base, self.visits, self.visit = base, visits, visit
        #: a direct all-reduce runs packet by packet (:class:`_DirectAllReduce`), not by steps
        self.direct = direct

    def part(self, c: int, j: int) -> Part:
        """Member ``j``'s part for chunk ``c``."""
        if len(self.trees) == 1:
            return self.trees[0][j]
        return self.trees[(self.base + c * self.visits + self.visit) % 2][j]


class MessageRun:
    """A collective instance ``inst`` of ``sim`` run message by message; members start as they
    issue it (:meth:`issue`); ``on_done(inst, actor, last)`` runs when the ranks of an actor
    have finished it (``last``: the whole collective has), and ``broken`` is raised when ranks
    simulated as one finish at different times."""

    def __init__(self, sim: Sim, inst: Instance, per_phase, tree_bases: dict[int, int], on_done,
                 broken: type[Exception]):
        self.sim = sim
        self.inst = inst
        self.on_done = on_done
        self.broken = broken
        sd = sim.sd
        group = per_phase[0][2] is None
        ranks = list(inst.members)
        self.rank_of = ranks if group else list(range(sim.planner.total))
        self.pos = {r: j for j, r in enumerate(self.rank_of)}
        self.ranks = ranks
        layouts: dict = {}
        visits = dbt_visits(per_phase)
        seen: dict[int, int] = {}
        self.phases: list[_Phase] = []
        for (kind, data, d, impl), (queue, _cost, label) in zip(per_phase, inst.phases):
            lay = layouts.get(d)
            if lay is None:
                lay = layouts[d] = (group_layout(ranks, sim.planner.hop) if group
                                    else dim_layout(sim.planner.dims, d, sim.planner.total))
            e = GROUP_ENDPOINT_DELAY if group else sd.endpoint_delay
            if d is not None and algorithm_base(impl)[0] == DBT:
                visit = seen[d] = seen.get(d, -1) + 1
                trees = [_tree_parts(data, lay, root_max, e, sd.local_mem_bw) for root_max in (True, False)]
                self.phases.append(_Phase(queue, label, trees, tree_bases[d], visits[d], visit))
            elif kind == "AR" and algorithm_base(impl)[0] == "direct":
                m = data // lay.size
                direct = _DirectAllReduce(lay, m, e, red(m, sd.local_mem_bw))
                self.phases.append(_Phase(queue, label, [], direct=direct))
            else:
                self.phases.append(_Phase(queue, label, [_parts(kind, data, impl, lay, e, sd.local_mem_bw)]))
        self.active = sd.active_chunks_per_dimension
        self.running: dict[tuple[int, int], int] = {}
        self.queued: dict[tuple[int, int], deque] = {}
        self.chunks_left: dict[int, int] = {}
        self.arrived: set[tuple] = set()
        self.waiting: dict[tuple, tuple[int, int]] = {}
        self.needed: dict[tuple[int, int, int], int] = {}
        self.phase_start: dict[tuple[int, int, int], int] = {}
        self.left_per_actor: dict[int, int] = {}
        for r in ranks:
            ai = sim.rank_actor[r]
            self.left_per_actor[ai] = self.left_per_actor.get(ai, 0) + 1
        self.finish: dict[int, int] = {}
        self.members_left = len(ranks)
        self.packets: dict[tuple[int, int, int], DirectMember] = {}

    def issue(self, ai: int) -> None:
        """The ranks of actor ``ai`` issue the collective now: their chunks enter their first phase."""
        for r in self.sim.actors[ai].ranks:
            j = self.pos.get(r)
            if j is None:
                continue
            self.chunks_left[j] = self.inst.n
            for c in range(self.inst.n):
                self._enter(j, c, 0)

    def _later(self, delay: int, callback, value) -> None:
        ev = self.sim.env.timeout(delay, value)
        ev.callbacks.append(callback)
        self.sim.events += 1

    def _enter(self, j: int, c: int, p: int) -> None:
        q = (j, self.phases[p].queue)
        if self.running.get(q, 0) < self.active:
            self._go(j, c, p)
        else:
            self.queued.setdefault(q, deque()).append((c, p))

    def _go(self, j: int, c: int, p: int) -> None:
        q = (j, self.phases[p].queue)
        self.running[q] = self.running.get(q, 0) + 1
        self.phase_start[(j, c, p)] = int(self.sim.env.now)
        direct = self.phases[p].direct
        if direct is not None:
            me = self._member(j, c, p)
            for _ in range(direct.lay.size - 1):
                self._later(me.make(), self._packet_ready, (j, c, p))
            return
        self._later(self.phases[p].part(c, j)[0], self._step_due, (j, c, p, 0))

    # -- direct all-reduce, packet by packet --------------------------------------------
    def _member(self, j: int, c: int, p: int) -> DirectMember:
        me = self.packets.get((j, c, p))
        if me is None:
            d = self.phases[p].direct
            assert d is not None
            me = self.packets[(j, c, p)] = DirectMember(d.lay.size, d.e, d.r)
        return me

    def _packet_ready(self, ev) -> None:
        j, c, p = ev.value
        d = self.phases[p].direct
        assert d is not None and self.sim.network is not None
        me = self.packets[(j, c, p)]
        for k in me.packet_ready():
            dst = d.lay.offset(j, k)
            self.sim.network.send(self.rank_of[j], self.rank_of[dst], d.m, partial(self._packet_in, (dst, c, p, k)))
            if me.post(k):
                self._later(me.receive(), self._packet_ready, (j, c, p))
        if me.done:
            del self.packets[(j, c, p)]
            self._phase_done(j, c, p)

    def _packet_in(self, key: tuple[int, int, int, int]) -> None:
        """A direct all-reduce message from the member ``k`` places before reached member ``j``."""
        j, c, p, k = key
        me = self._member(j, c, p)
        if me.arrive(k):
            self._later(me.receive(), self._packet_ready, (j, c, p))

    def _step_due(self, ev) -> None:
        j, c, p, s = ev.value
        steps = self.phases[p].part(c, j)[1]
        if s == len(steps):
            self._phase_done(j, c, p)
            return
        to, frm, m, add = steps[s]
        net = self.sim.network
        assert net is not None  # message runs exist in the congestion-aware mode only
        src = self.rank_of[j]
        for k, n in to:
            net.send(src, self.rank_of[k], m, partial(self._delivered, (c, p, j, k, n)))
        need = 0
        for k, n in frm:
            key = (c, p, k, j, n)
            if key in self.arrived:
                self.arrived.discard(key)
            else:
                self.waiting[key] = (j, s)
                need += 1
        if need:
            self.needed[(c, p, j)] = need
        else:
            self._later(add, self._step_due, (j, c, p, s + 1))

    def _delivered(self, key: tuple) -> None:
        got = self.waiting.pop(key, None)
        if got is None:
            self.arrived.add(key)
            return
        c, p, _src, j, _n = key
        need = self.needed[(c, p, j)] - 1
        if need:
            self.needed[(c, p, j)] = need
        else:
            del self.needed[(c, p, j)]
            s = got[1]
            self._later(self.phases[p].part(c, j)[1][s][3], self._step_due, (j, c, p, s + 1))

    def _phase_done(self, j: int, c: int, p: int) -> None:
        sim = self.sim
        now = int(sim.env.now)
        ph = self.phases[p]
        start = self.phase_start.pop((j, c, p))
        r = self.rank_of[j]
        a = sim.actors[sim.rank_actor[r]]
        tl = sim.timeline
        if r == a.rank and tl is not None and len(tl) < sim.max_spans:
            tl.append((a.index, 10 + ph.queue, (ph.label, c, self.inst.key), start, now - start))
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
            self._member_done(r, a.index, now)

    def _member_done(self, r: int, ai: int, now: int) -> None:
        if self.finish.setdefault(ai, now) != now:
            raise self.broken(f"ranks simulated as rank {self.sim.actors[ai].rank} finish collective "
                                 f"#{self.inst.key[1] + 1} of group {self.inst.key[0] or 'all'!r} at different "
                                 "times")
        self.members_left -= 1
        self.left_per_actor[ai] -= 1
        if self.left_per_actor[ai] == 0:
            self.on_done(self.inst, ai, self.members_left == 0)
