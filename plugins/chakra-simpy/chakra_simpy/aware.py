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
  direct algorithm turns its receiver round the ring); all-reduce in two such steps;
- halvingDoubling: to and from the exchange partner of the step.
"""

from __future__ import annotations

from collections import deque
from functools import partial
from typing import TYPE_CHECKING

from chakra_core.system import algorithm_base

from .perrank import Layout, dim_layout, group_layout
from .plans import DBT
from .timing import GROUP_ENDPOINT_DELAY, red, ring_steps

if TYPE_CHECKING:
    from .collectives import Instance
    from .engine import Sim

__all__ = ["MessageRun", "runs_by_message"]

#: one step of a member: (members sent to, in order; members received from; bytes; ns after)
Step = tuple[tuple[int, ...], tuple[int, ...], int, int]


def runs_by_message(per_phase) -> bool:
    """Whether a plan's phases run message by message (ring, direct, halvingDoubling); the
    one* variants on several dimensions (``per_phase`` None) and doubleBinaryTree phases do not."""
    return per_phase is not None and all(d is None or algorithm_base(impl)[0] != DBT
                                         for _k, _data, d, impl in per_phase)


def _steps(kind: str, data: int, impl: str, lay: Layout, e: int, local_mem_bw: float) -> list[list[Step]]:
    """Every member's steps of one chunk phase of ``data`` bytes with algorithm ``impl``."""
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
            peers = tuple(lay.offset(j, o) for o in range(1, p))
            if kind == "AR":
                out.append([(peers, peers, m, e + red(m, local_mem_bw)), (peers, peers, m, e)])
            else:
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


class _Phase:
    """One chunk phase of a plan: its queue, label, first endpoint delay and members' steps."""

    __slots__ = ("queue", "label", "e", "steps")

    def __init__(self, queue: int, label: str, e: int, steps: list[list[Step]]):
        self.queue = queue
        self.label = label
        self.e = e
        self.steps = steps


class MessageRun:
    """A collective instance ``inst`` of ``sim`` run message by message; members start as they
    issue it (:meth:`issue`); ``on_done(inst, actor, last)`` runs when the ranks of an actor
    have finished it (``last``: the whole collective has), and ``broken`` is raised when ranks
    simulated as one finish at different times."""

    def __init__(self, sim: Sim, inst: Instance, per_phase, on_done, broken: type[Exception]):
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
        self.phases: list[_Phase] = []
        for (kind, data, d, impl), (queue, _cost, label) in zip(per_phase, inst.phases):
            lay = layouts.get(d)
            if lay is None:
                lay = layouts[d] = (group_layout(ranks, sim.planner.hop) if group
                                    else dim_layout(sim.planner.dims, d, sim.planner.total))
            e = GROUP_ENDPOINT_DELAY if group else sd.endpoint_delay
            self.phases.append(_Phase(queue, label, e, _steps(kind, data, impl, lay, e, sd.local_mem_bw)))
        self.active = sd.active_chunks_per_dimension
        self.running: dict[tuple[int, int], int] = {}
        self.queued: dict[tuple[int, int], deque] = {}
        self.chunks_left: dict[int, int] = {}
        self.arrived: set[tuple] = set()
        self.waiting: dict[tuple, int] = {}
        self.phase_start: dict[tuple[int, int, int], int] = {}
        self.left_per_actor: dict[int, int] = {}
        for r in ranks:
            ai = sim.rank_actor[r]
            self.left_per_actor[ai] = self.left_per_actor.get(ai, 0) + 1
        self.finish: dict[int, int] = {}
        self.members_left = len(ranks)

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
        self._later(self.phases[p].e, self._step_due, (j, c, p, 0))

    def _step_due(self, ev) -> None:
        j, c, p, s = ev.value
        steps = self.phases[p].steps[j]
        if s == len(steps):
            self._phase_done(j, c, p)
            return
        to, frm, m, add = steps[s]
        net = self.sim.network
        assert net is not None  # message runs exist in the congestion-aware mode only
        src = self.rank_of[j]
        for k in to:
            net.send(src, self.rank_of[k], m, partial(self._delivered, (c, p, s, j, k)))
        need = 0
        for k in frm:
            key = (c, p, s, k, j)
            if key in self.arrived:
                self.arrived.discard(key)
            else:
                need += 1
        if need:
            self.waiting[(c, p, s, j)] = need
        else:
            self._later(add, self._step_due, (j, c, p, s + 1))

    def _delivered(self, key: tuple) -> None:
        c, p, s, _src, j = key
        wait = (c, p, s, j)
        need = self.waiting.get(wait)
        if need is None:
            self.arrived.add(key)
        elif need > 1:
            self.waiting[wait] = need - 1
        else:
            del self.waiting[wait]
            self._later(self.phases[p].steps[j][s][3], self._step_due, (j, c, p, s + 1))

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
