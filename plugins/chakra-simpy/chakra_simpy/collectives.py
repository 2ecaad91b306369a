"""Collectives: matching across ranks by issue order per group, and their timing.

The k-th collective a rank issues on a group matches the k-th of every other member.  When every
member has issued it at the same time, its chunks go through the plan's phases as a flow shop:
each dimension queue runs at most ``active-chunks-per-dimension`` chunks at once, first come
first served, each chunk phase is one SimPy event, and all members finish together.  When the
members issued it at different times (or a group ring's links differ, or a double binary tree
is used: its leaves, inner nodes and root finish apart), every member is timed by its message
chain (:mod:`stagger`, :mod:`dbt`) and gets its own completion event.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING

from chakra_core import ChakraError, CommType, TraceFormatError
from chakra_core.system import algorithm_base

from .aware import MessageRun, runs_by_message
from .custom import CustomCollective
from .dbt import TreePhase
from .perrank import build_phase, dim_layout, group_layout
from .plans import DBT, KIND_NAME, dbt_visits
from .program import ASTRA_KIND
from .stagger import DirectPhase, Phase, plan_finish

if TYPE_CHECKING:
    from .actor import Actor
    from .engine import Sim

__all__ = ["Collectives", "Instance", "SymmetryBroken"]

#: the collective each ``*-implementation-chakra`` key replaces.
_CUSTOM_KIND = {"all-reduce": CommType.ALL_REDUCE, "all-gather": CommType.ALL_GATHER,
                "reduce-scatter": CommType.REDUCE_SCATTER, "all-to-all": CommType.ALL_TO_ALL}


class SymmetryBroken(Exception):
    """Ranks simulated as one class finish a collective at different times (rerun without
    symmetry)."""



class Instance:
    """One collective across its members: who has issued it, and its chunk progress."""

    __slots__ = ("key", "ct", "size", "inv", "members", "actor_ids", "arrived", "last", "start",
                 "n", "phases", "per_phase", "done", "qact", "qwait", "actors", "batches", "run")

    def __init__(self, key, ct, size, inv, members, actor_ids):
        self.key = key
        self.ct = ct
        self.size = size
        self.inv = inv
        self.members = members
        self.actor_ids = actor_ids
        self.arrived: dict[int, tuple] = {}
        self.last: tuple[int, int] | None = None
        self.start = 0
        self.n = 0
        self.phases: list = []
        self.per_phase = None
        self.done = 0
        self.qact: dict[int, int] = {}
        self.qwait: dict[int, deque] = {}
        self.actors: list = []
        self.batches = 0
        self.run: MessageRun | None = None


class Collectives:
    """Matches collectives of ``sim`` and runs their chunk phases."""

    def __init__(self, sim: Sim, groups: dict[str, tuple[int, ...]]):
        self.sim = sim
        self.groups = groups
        self.all = tuple(range(len(sim.rank_actor)))
        self.open: dict[tuple, Instance] = {}
        self.stats: dict[tuple[str, str], dict] = {}
        self.active = sim.sd.active_chunks_per_dimension
        self.phase_events = 0
        self.per_rank = 0
        self.approximated = 0
        #: the phases built by :meth:`_per_rank` (not a double binary tree's), by what they are built from
        self.phase_cache: dict[tuple, Phase | DirectPhase] = {}
        self.tree_count: dict[int, int] = {}
        self.custom = {_CUSTOM_KIND[k]: CustomCollective(k, prefix, sim.sd, sim.planner)
                       for k, prefix in sim.sd.custom_implementations.items()}
        self.custom_runs = 0
        self.by_message = 0
        self.unshared = 0

    def members(self, pg: str) -> tuple[int, ...]:
        """Ranks of group ``pg`` ("" = all ranks)."""
        return self.groups.get(pg, self.all) if pg else self.all

    def arrive(self, a: Actor, i: int) -> None:
        """Rank ``a`` issues collective node ``i``."""
        ct, size, pg, inv = a.prog.extra[i]
        seq = a.seq.get(pg, 0)
        a.seq[pg] = seq + 1
        key = (pg, seq)
        inst = self.open.get(key)
        if inst is None:
            if pg and pg not in self.groups:
                raise TraceFormatError(f"collective names process group {pg!r}, which the trace set does "
                                       "not define (give its ranks with --comm-groups)", a.prog.label,
                                       f"node {a.prog.ids[i]}")
            members = self.members(pg)
            actor_ids = {self.sim.rank_actor[r] for r in members}
            inst = self.open[key] = Instance(key, ct, size, inv, members, actor_ids)
            self._plan(inst)
        elif (inst.ct, inst.size) != (ct, size):
            first = next(iter(inst.arrived.values()))
            raise ChakraError(
                f"collective #{seq + 1} of group {pg or 'all'!r} differs across ranks: rank "
                f"{first[0].rank} issues {CommType(inst.ct).name} of {inst.size} bytes (node "
                f"{first[0].prog.ids[first[1]]}), rank {a.rank} issues {CommType(ct).name} of {size} "
                f"bytes (node {a.prog.ids[i]}); collectives are matched by issue order per group")
        if a.index not in inst.actor_ids:
            raise ChakraError(f"rank {a.rank} node {a.prog.ids[i]} issues a collective on group {pg!r} "
                              f"but is not one of its members {list(inst.members)[:16]}", a.prog.label)
        now = int(self.sim.env.now)
        inst.arrived[a.index] = (a, i, now)
        inst.last = (a.index, i)
        if inst.run is not None:
            inst.run.issue(a.index)
        if len(inst.arrived) == len(inst.actor_ids):
            del self.open[key]
            self._start(inst, now)

    def _plan(self, inst: Instance) -> None:
        """Plan ``inst`` when its first member issues it; in the congestion-aware mode, set it
        to run message by message where its algorithms allow (:mod:`aware`); nothing to plan
        with ``comm=replay``."""
        sim = self.sim
        if sim.replay:
            return
        kind = ASTRA_KIND[CommType(inst.ct)]
        p = len(inst.members)
        size = inst.size
        # GATHER and SCATTER: comm_size is the per-rank piece, as for an all-gather (the
        # PyTorch plugin's meaning); BROADCAST (no duration to replay): S bytes as a scatter
        # then an all-gather of ceil(S/P) pieces, i.e. two all-gathers in sequence (the rule
        # of the ASTRA-sim exporter, so that both backends time it alike)
        if inst.ct == CommType.BROADCAST:
            size = -(-size // p)
        elif inst.ct == CommType.BARRIER:
            size = 0
        members = None if p == len(self.all) else inst.members
        inst.n, inst.phases, ring = sim.planner.plan(kind, size, inst.inv, members)
        if inst.ct == CommType.BROADCAST:
            inst.phases = inst.phases * 2
            ring = ring * 2 if ring else ring
        inst.per_phase = ring
        if not sim.aware or inst.n == 0:
            return
        steps: Sequence | None = ring
        if steps is None and len(sim.planner.dims) == 1:
            steps = sim.planner.one_star_phases(kind, size) * len(inst.phases)
        if runs_by_message(steps) and (members is not None or inst.ct not in self.custom):
            visits = dbt_visits(steps) if members is None else {}
            bases = {d: self.tree_count.get(d, 0) for d in visits}
            for d, v in visits.items():  # as in _start: every chunk takes the next tree, per visit
                self.tree_count[d] = bases[d] + inst.n * v
            inst.run = MessageRun(sim, inst, steps, bases, self._members_done, SymmetryBroken)
            self.by_message += 1
            self.phase_events += inst.n * len(inst.phases)
        else:
            self.unshared += 1

    def _start(self, inst: Instance, now: int) -> None:
        sim = self.sim
        members = None if len(inst.members) == len(self.all) else inst.members
        ring = inst.per_phase
        inst.start = now
        inst.actors = [v[0] for v in inst.arrived.values()]
        last = inst.last
        for ai, ii in ((v[0].index, v[1]) for v in inst.arrived.values()):
            if last is not None and (ai, ii) != last:
                sim.cross[(ai, ii)] = last
        if sim.replay:
            self._replay(inst, now)
            return
        if inst.run is not None:
            return
        custom = self.custom.get(inst.ct)
        if custom is not None and members is None:
            self._run_custom(inst, custom, now)
            return
        visits = dbt_visits(ring) if members is None else {}
        bases = {d: self.tree_count.get(d, 0) for d in visits}
        for d, v in visits.items():  # every chunk takes the next tree of the dimension, per visit
            self.tree_count[d] = bases[d] + inst.n * v
        if inst.n and ring:
            times = self._per_rank(inst, ring, bases, visits)
            if times is not None:
                self._finish_per_rank(inst, times, now)
                return
        if inst.n == 0:
            ev = sim.env.timeout(0, inst)
            ev.callbacks.append(lambda ev: self._finish(ev._value))
            sim.events += 1
            return
        for c in range(inst.n):
            self._enter(inst, c, 0)

    def _enter(self, inst: Instance, c: int, p: int) -> None:
        q = inst.phases[p][0]
        if inst.qact.get(q, 0) < self.active:
            self._go(inst, c, p)
        else:
            inst.qwait.setdefault(q, deque()).append((c, p))

    def _go(self, inst: Instance, c: int, p: int) -> None:
        sim = self.sim
        q, cost, label = inst.phases[p]
        inst.qact[q] = inst.qact.get(q, 0) + 1
        dur = cost.fixed
        ev = sim.env.timeout(dur, (inst, c, p))
        ev.callbacks.append(self._phase_end)
        sim.events += 1
        self.phase_events += 1
        tl = sim.timeline
        if tl is not None and len(tl) < sim.max_spans:
            tl.append((inst.actors[0].index, 10 + q, (label, c, inst.key), int(sim.env.now), dur))

    def _phase_end(self, ev) -> None:
        inst, c, p = ev._value
        q = inst.phases[p][0]
        inst.qact[q] -= 1
        wait = inst.qwait.get(q)
        if wait:
            c2, p2 = wait.popleft()
            self._go(inst, c2, p2)
        if p + 1 < len(inst.phases):
            self._enter(inst, c, p + 1)
        else:
            inst.done += 1
            if inst.done == inst.n:
                self._finish(inst)

    def _per_rank(self, inst: Instance, per_phase: Sequence, bases: dict[int, int],
                  visits: dict[int, int]) -> dict[int, int] | None:
        """Finish time per actor of a collective whose members do not move in lockstep
        (different issue times, different incoming links, or double binary trees); None when
        the closed form is exact or the collective is too large to time per rank.  ``bases``:
        tree phases each dimension ran before this collective; ``visits``: per chunk."""
        sim = self.sim
        planner = sim.planner
        arrived = {a.index: t for a, _i, t in inst.arrived.values()}
        group = per_phase[0][2] is None
        ranks = list(inst.members) if group else list(range(planner.total))
        issue = [arrived[sim.rank_actor[r]] for r in ranks]
        if group:
            uneven = len({planner.hop(ranks[j - 1], ranks[j]) for j in range(len(ranks))}) > 1
            if not uneven and len(set(issue)) == 1:
                return None
        elif len(set(issue)) == 1 and not visits:
            return None
        layouts: dict = {}
        phases: list[Phase | DirectPhase | TreePhase] = []
        work = 0
        seen: dict[int, int] = {}
        for kind, data, d, impl in per_phase:
            tree = not group and algorithm_base(impl)[0] == DBT
            built = (kind, data, d, impl, tuple(ranks) if group else None)
            if not tree and built in self.phase_cache:
                phases.append(self.phase_cache[built])
                work += inst.n * phases[-1].work * len(ranks)
                continue
            lay = layouts.get(d)
            if lay is None:
                lay = layouts[d] = (group_layout(ranks, planner.hop) if group
                                    else dim_layout(planner.dims, d, planner.total))
            if tree:
                visit = seen[d] = seen.get(d, -1) + 1
                phases.append(TreePhase(d, data, lay.size, lay.slices, lambda o, lay=lay: lay.link(0, o),
                                        sim.sd.endpoint_delay, sim.sd.local_mem_bw, bases[d], visits[d], visit))
            else:
                phase = self.phase_cache[built] = build_phase(kind, data, impl, lay, 0 if group else d,
                                                              sim.sd.endpoint_delay, sim.sd.local_mem_bw, group)
                phases.append(phase)
            work += inst.n * phases[-1].work * len(ranks)
        if work > sim.stagger_limit:
            self.approximated += 1
            return None
        fin = plan_finish(issue, phases, inst.n, self.active)
        out: dict[int, int] = {}
        for r, t in zip(ranks, fin):
            ai = sim.rank_actor[r]
            if out.setdefault(ai, t) != t:
                raise SymmetryBroken(f"ranks simulated as rank {sim.actors[ai].rank} finish collective "
                                     f"#{inst.key[1] + 1} of group {inst.key[0] or 'all'!r} at different times")
        self.per_rank += 1
        return out

    def _replay(self, inst: Instance, now: int) -> None:
        """``comm=replay``: each member lasts its recorded duration from when it issued the
        collective, and ends no earlier than the last member issued it (``now``)."""
        inst.n, inst.phases = 1, [(0, None, "recorded duration")]
        self._finish_per_rank(inst, {a.index: max(t + a.prog.dur[i], now)
                                     for a, i, t in inst.arrived.values()}, now)

    def _run_custom(self, inst: Instance, custom: CustomCollective, now: int) -> None:
        """Time a collective over all ranks by its custom implementation (:mod:`custom`)."""
        sim = self.sim
        arrived = {a.index: t for a, _i, t in inst.arrived.values()}
        fin = custom.finish([arrived[sim.rank_actor[r]] for r in range(len(self.all))])
        times: dict[int, int] = {}
        for r, t in enumerate(fin):
            ai = sim.rank_actor[r]
            if times.setdefault(ai, t) != t:
                raise SymmetryBroken(f"ranks simulated as rank {sim.actors[ai].rank} finish the custom "
                                     f"{custom.kind} #{inst.key[1] + 1} at different times")
        inst.n, inst.phases = 1, [(0, None, f"custom {custom.kind} ({custom.prefix})")]
        self.custom_runs += 1
        self._finish_per_rank(inst, times, now)

    def _finish_per_rank(self, inst: Instance, times: dict[int, int], now: int) -> None:
        sim = self.sim
        by_time: dict[int, list] = {}
        for a, i, _t in inst.arrived.values():
            by_time.setdefault(times[a.index], []).append((a, i))
        inst.batches, inst.done = len(by_time), 0
        tl = sim.timeline
        rep = inst.actors[0]
        if tl is not None and len(tl) < sim.max_spans:
            tl.append((rep.index, 10, (inst.phases[0][2] + " (per rank)", "all", inst.key), now,
                       times[rep.index] - now))
        for t in sorted(by_time):
            ev = sim.env.timeout(t - now, (inst, by_time[t]))
            ev.callbacks.append(self._end_some)
            sim.events += 1

    def _end_some(self, ev) -> None:
        inst, members = ev._value
        inst.done += 1
        if inst.done == inst.batches:
            self._record(inst, int(self.sim.env.now))
        for a, i in members:
            self.sim.end_node(a, i)

    def _members_done(self, inst: Instance, ai: int, last: bool) -> None:
        """The ranks of actor ``ai`` finished message-run collective ``inst`` now."""
        if last:
            self._record(inst, int(self.sim.env.now))
        a, i, _t = inst.arrived[ai]
        self.sim.end_node(a, i)

    def _finish(self, inst: Instance) -> None:
        self._record(inst, int(self.sim.env.now))
        for a, i, _t in inst.arrived.values():
            self.sim.end_node(a, i)

    def _record(self, inst: Instance, now: int) -> None:
        pg = inst.key[0]
        name = CommType(inst.ct).name
        st = self.stats.get((name, pg))
        if st is None:
            st = self.stats[(name, pg)] = {"collective": name, "group": pg or "all", "count": 0,
                                           "bytes": 0, "total_ns": 0, "max_ns": 0, "sync_wait_ns": 0,
                                           "chunks": inst.n, "phases": [ph[2] for ph in inst.phases]}
        dur = now - inst.start
        st["count"] += 1
        st["bytes"] += inst.size
        st["total_ns"] += dur
        st["max_ns"] = max(st["max_ns"], dur)
        st["sync_wait_ns"] += max(inst.start - v[2] for v in inst.arrived.values())

    def waiting_report(self) -> list[str]:
        """Lines naming the collectives some members issued and others never did."""
        out = []
        for (pg, seq), inst in self.open.items():
            got = sorted(r for v in inst.arrived.values() for r in v[0].ranks)
            missing = [r for r in inst.members if r not in set(got)]
            a, i, _ = next(iter(inst.arrived.values()))
            kind = KIND_NAME.get(ASTRA_KIND[CommType(inst.ct)], "")
            out.append(f"collective #{seq + 1} ({CommType(inst.ct).name}, {kind}) of group "
                       f"{pg or 'all'!r}: rank(s) {_short(got)} wait (rank {a.rank} in node "
                       f"{a.prog.ids[i]}) for rank(s) {_short(missing)} that never issue it")
        return out


def _short(ranks: list[int]) -> str:
    text = ", ".join(map(str, ranks[:8]))
    return text + (f" ... ({len(ranks)} ranks)" if len(ranks) > 8 else "")
