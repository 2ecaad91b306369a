"""Collectives: matching across ranks by issue order per group, and their timing.

The k-th collective a rank issues on a group matches the k-th of every other member.  When every
member has issued it at the same time, its chunks go through the plan's phases as a flow shop
(:mod:`lockstep`) and all members finish together.  When the members issued it at different
times (or a group ring's links differ, or an alternating algorithm is used: the leaves, inner
nodes and root of a tree finish apart), every member is timed by its message chain
(:mod:`member_timing`) and gets its own completion event.  The congestion-aware mode runs it
message by message (:mod:`message_run`); a custom implementation runs its own ET
(:mod:`algorithms.custom`); ``comm=replay`` replays the recorded durations.

The collective code sees the simulation through a :class:`collective_context.CollectiveContext` and counts
what it did in a :class:`collective_context.CollectiveTally`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import ChakraError, CommType, TraceFormatError

from .algorithms.custom import CustomCollective
from .chunk_phases import tree_visits
from .classify import CollectiveArgs
from .closed_runs import Kept
from .collective_context import CollectiveTally
from .lockstep import FlowShop
from .member_phases import MemberPhases
from .member_timing import FinishPlans
from .message_run import MessageRun
from .parts import PartMap, Parts, part_map
from .planner import KIND_NAME, PlannedPhase
from .program import ASTRA_KIND, COMM_NAME

if TYPE_CHECKING:
    from .actor import Actor
    from .algorithms.base import Messages
    from .chunk_phases import PhaseSpec
    from .collective_context import CollectiveContext

__all__ = ["Collectives", "Instance", "SymmetryBroken"]

#: the collective each ``*-implementation-custom`` key (or ``-chakra``) replaces.
_CUSTOM_KIND = {"all-reduce": CommType.ALL_REDUCE, "all-gather": CommType.ALL_GATHER,
                "reduce-scatter": CommType.REDUCE_SCATTER, "all-to-all": CommType.ALL_TO_ALL}


class SymmetryBroken(Exception):
    """Ranks simulated as one class finish a collective at different times (rerun without
    symmetry)."""


class Instance:
    """One collective across its members: who has issued it (``arrived``: actor index ->
    ``(actor, node, issue time)``), its plan and its progress."""

    __slots__ = ("key", "args", "members", "actor_ids", "arrived", "last", "start", "n", "phases",
                 "per_member", "done", "actors", "batches", "run", "parts", "parent")

    def __init__(self, key: tuple[str, int], args: CollectiveArgs, members: tuple[int, ...], actor_ids: set[int]):
        self.key = key
        self.args = args
        self.members = members
        self.actor_ids = actor_ids
        self.arrived: dict[int, tuple[Actor, int, int]] = {}
        self.last: tuple[int, int] | None = None
        self.start = 0
        self.n = 0
        self.phases: list[PlannedPhase] = []
        self.per_member: list[PhaseSpec] | None = None
        self.done = 0
        self.actors: list[Actor] = []
        self.batches = 0
        self.run: MessageRun | None = None
        #: the parts of a collective left to fewer dimensions than its group (:mod:`parts`)
        self.parts: Parts | None = None
        #: the collective whose parts this instance times (None: a whole collective)
        self.parent: Instance | None = None


class Collectives:
    """Matches the collectives of a simulation (seen through ``ctx``) and times them."""

    def __init__(self, ctx: CollectiveContext, groups: dict[str, tuple[int, ...]]):
        self.ctx = ctx
        self.groups = groups
        self.all = tuple(range(len(ctx.rank_actor)))
        self.open: dict[tuple, Instance] = {}
        #: per group, the actors standing for its members (shared by its instances: read only)
        self.member_actors: dict[str, set[int]] = {}
        self.stats: dict[tuple[str, str], dict] = {}
        self.tally = CollectiveTally()
        self.active = ctx.sd.active_chunks_per_dimension
        self.plans = FinishPlans()
        #: the messages of each message-run phase built (:class:`MessageRun`)
        self.phase_messages: dict[tuple, tuple[Messages, dict]] = {}
        #: the outcomes of closed message runs (:mod:`closed_runs`)
        self.closed_runs = Kept()
        self.flow = FlowShop(ctx, self.tally, self.active, self._finish)
        self.member_phases = MemberPhases(ctx)
        #: phases of alternating algorithms each dimension ran so far (chunk by chunk)
        self.tree_count: dict[int, int] = {}
        #: :func:`chunk_phases.tree_visits` of each per-member list timed so far
        self.visits: dict[tuple[PhaseSpec, ...], dict[int, int]] = {}
        #: the parts of collectives over all ranks, per set of dimensions used (:mod:`parts`)
        self.part_maps: dict[frozenset[int], PartMap | None] = {}
        self.custom: dict[int, CustomCollective] = {_CUSTOM_KIND[k]: CustomCollective(k, prefix, ctx.sd, ctx.planner)
                       for k, prefix in ctx.sd.custom_implementations.items()}

    def members(self, pg: str) -> tuple[int, ...]:
        """Ranks of group ``pg`` ("" = all ranks)."""
        return self.groups.get(pg, self.all) if pg else self.all

    def arrive(self, a: Actor, i: int) -> None:
        """Rank ``a`` issues collective node ``i``."""
        args = a.prog.extra[i]
        assert isinstance(args, CollectiveArgs)
        pg = args.pg
        seq = a.seq.get(pg, 0)
        a.seq[pg] = seq + 1
        key = (pg, seq)
        inst = self.open.get(key)
        if inst is None:
            inst = self.open[key] = self._open(a, i, key, args)
        elif (inst.args.comm_type, inst.args.size) != (args.comm_type, args.size):
            self._differs(inst, a, i, seq)
        if a.index not in inst.actor_ids:
            raise ChakraError(f"rank {a.rank} node {a.prog.ids[i]} issues a collective on group {pg!r} "
                              f"but is not one of its members {list(inst.members)[:16]}", a.prog.label)
        now = int(self.ctx.env.now)
        inst.arrived[a.index] = (a, i, now)
        inst.last = (a.index, i)
        if inst.run is not None:
            inst.run.issue(a.index)
        last = len(inst.arrived) == len(inst.actor_ids)
        if last:
            del self.open[key]
            inst.start = now
        if inst.parts is not None:
            done = inst.parts.arrive(a.ranks)
            if done and not inst.parts.all_at_once(done):
                self._start_parts(inst, done, now)
                return
        if last:
            self._start(inst, now)

    def _open(self, a: Actor, i: int, key: tuple[str, int], args: CollectiveArgs) -> Instance:
        """The instance a collective's first member opens, planned."""
        pg = args.pg
        if pg and pg not in self.groups:
            raise TraceFormatError(f"collective names process group {pg!r}, which the trace set does "
                                   "not define (give its ranks with --comm-groups)", a.prog.label,
                                   f"node {a.prog.ids[i]}")
        members = self.members(pg)
        ids = self.member_actors.get(pg)
        if ids is None:
            ids = self.member_actors[pg] = {self.ctx.rank_actor[r] for r in members}
        inst = Instance(key, args, members, ids)
        self._plan(inst)
        return inst

    def _differs(self, inst: Instance, a: Actor, i: int, seq: int) -> None:
        first = next(iter(inst.arrived.values()))
        ct, size = inst.args.comm_type, inst.args.size
        got = a.prog.extra[i]
        assert isinstance(got, CollectiveArgs)
        raise ChakraError(
            f"collective #{seq + 1} of group {inst.key[0] or 'all'!r} differs across ranks: rank "
            f"{first[0].rank} issues {CommType(ct).name} of {size} bytes (node "
            f"{first[0].prog.ids[first[1]]}), rank {a.rank} issues {CommType(got.comm_type).name} of {got.size} "
            f"bytes (node {a.prog.ids[i]}); collectives are matched by issue order per group")

    def _world(self, inst: Instance) -> bool:
        return len(inst.members) == len(self.all)

    def _plan(self, inst: Instance) -> None:
        """Plan ``inst`` when its first member issues it; in the congestion-aware mode, set it
        to run message by message where its plan allows (:mod:`message_run`); nothing to plan
        with ``comm=replay``."""
        ctx = self.ctx
        if ctx.replay:
            return
        ct = inst.args.comm_type
        kind = ASTRA_KIND[ct]
        p = len(inst.members)
        size = inst.args.size
        # GATHER and SCATTER: comm_size is the per-rank piece, as for an all-gather (the
        # PyTorch plugin's meaning); BROADCAST (no duration to replay): S bytes as a scatter
        # then an all-gather of ceil(S/P) pieces, i.e. two all-gathers in sequence (the rule
        # of the ASTRA-sim exporter, so that both backends time it alike)
        if ct == CommType.BROADCAST:
            size = -(-size // p)
        elif ct == CommType.BARRIER:
            size = 0
        members = None if self._world(inst) else inst.members
        plan = ctx.planner.plan(kind, size, inst.args.involved, members)
        inst.n, inst.phases, inst.per_member = plan.chunks, plan.phases, plan.per_member
        if ct == CommType.BROADCAST:
            inst.phases = inst.phases * 2
            inst.per_member = inst.per_member * 2 if inst.per_member else inst.per_member
        if ctx.network is not None and inst.n:
            self._plan_messages(inst, kind, size)
        elif members is None and inst.per_member and ct not in self.custom and not tree_visits(inst.per_member):
            pm = self._parts_of(inst.per_member)
            if pm is not None:
                inst.parts = Parts(pm)

    def _parts_of(self, specs: list[PhaseSpec]) -> PartMap | None:
        """The parts of a collective over all ranks with per-member phases ``specs`` (None: one
        part), remembered per set of dimensions used."""
        used = frozenset(s.dim for s in specs if s.dim is not None)
        if used not in self.part_maps:
            self.part_maps[used] = part_map(self.ctx.sd, used)
        return self.part_maps[used]

    def _plan_messages(self, inst: Instance, kind: str, size: int) -> None:
        """Congestion-aware: run ``inst`` message by message, unless it is a one* collective on
        several dimensions or a custom one over all ranks."""
        world = self._world(inst)
        specs = inst.per_member
        if specs is None and len(self.ctx.planner.dims) == 1:
            specs = self.ctx.planner.one_star_phases(kind, size) * len(inst.phases)
        if specs is not None and (not world or inst.args.comm_type not in self.custom):
            bases = self._take_trees(specs if world else None, inst.n)
            inst.run = MessageRun(self.ctx, self.tally, inst, specs, bases, self._members_done, SymmetryBroken,
                                  self.phase_messages, self.closed_runs)
            self.tally.by_message += 1
            self.tally.phase_events += inst.n * len(inst.phases)
        else:
            self.tally.unshared += 1

    def _take_trees(self, specs: list[PhaseSpec] | None, chunks: int) -> dict[int, int]:
        """The tree counts of the dimensions a world collective's alternating phases visit,
        before it; every chunk takes the next tree of the dimension, per visit."""
        if not specs:
            return {}
        key = tuple(specs)
        visits = self.visits.get(key)
        if visits is None:
            visits = self.visits[key] = tree_visits(specs)
        bases = {d: self.tree_count.get(d, 0) for d in visits}
        for d, v in visits.items():
            self.tree_count[d] = bases[d] + chunks * v
        return bases

    def _start(self, inst: Instance, now: int) -> None:
        """Every member has issued ``inst`` (the last one now): time it."""
        inst.start = now
        inst.actors = [v[0] for v in inst.arrived.values()]
        if self.ctx.replay:
            self._replay(inst, now)
            return
        if inst.run is not None:
            return
        world = self._world(inst)
        custom = self.custom.get(inst.args.comm_type)
        if custom is not None and world:
            self._run_custom(inst, custom, now)
            return
        specs = inst.per_member
        bases = self._take_trees(specs if world else None, inst.n)
        if inst.n and specs:
            times = self._per_rank(inst, specs, bases)
            if times is not None:
                self._finish_per_rank(inst, times, now)
                return
        self.flow.run(inst)

    def _start_parts(self, inst: Instance, done: list[int], now: int) -> None:
        """The parts ``done`` of ``inst`` (not all of its parts) were completed now: time them
        as an instance of their members (:mod:`parts`)."""
        ctx = self.ctx
        parts = inst.parts
        assert parts is not None
        ranks = [r for p in done for r in parts.map.ranks[p]]
        ids = {ctx.rank_actor[r] for r in ranks}
        for ai in ids:
            if not parts.complete(ctx.actors[ai].ranks):
                raise SymmetryBroken(f"ranks simulated as rank {ctx.actors[ai].rank} finish the parts of collective "
                                     f"#{inst.key[1] + 1} of group {inst.key[0] or 'all'!r} at different times")
        sub = Instance(inst.key, inst.args, inst.members, ids)
        sub.arrived = {ai: v for ai, v in inst.arrived.items() if ai in ids}
        sub.n, sub.phases, sub.per_member, sub.parent = inst.n, inst.phases, inst.per_member, inst
        parts.sync_wait = max(parts.sync_wait, max(now - v[2] for v in sub.arrived.values()))
        sub.start = now
        sub.actors = [v[0] for v in sub.arrived.values()]
        specs = inst.per_member
        assert specs is not None  # a split collective has its per-member phases
        times = self._per_rank(sub, specs, {})
        if times is None:
            self.flow.run(sub)
        else:
            self._finish_per_rank(sub, times, now)

    def _per_rank(self, inst: Instance, specs: list[PhaseSpec], bases: dict[int, int]) -> dict[int, int] | None:
        """Finish time per actor of a collective whose members do not move in lockstep; None
        when the closed form is exact or the collective is too large to time per rank.  The
        ranks of actors not in ``inst`` (the other parts of a split collective, which exchange
        nothing with its own) are taken as issuing it now."""
        ctx = self.ctx
        arrived = {a.index: t for a, _i, t in inst.arrived.values()}
        if self.member_phases.lockstep(specs, inst.members, bases, len(set(arrived.values())) == 1):
            return None
        ranks = list(inst.members) if specs[0].dim is None else list(range(ctx.planner.total))
        now = int(ctx.env.now)
        issue = [arrived.get(ctx.rank_actor[r], now) for r in ranks]
        phases, work = self.member_phases.build(specs, ranks, bases, inst.n)
        if work > ctx.stagger_limit:
            self.tally.approximated += 1
            return None
        fin = self.plans.finish(issue, phases, inst.n, self.active)
        out: dict[int, int] = {}
        for r, t in zip(ranks, fin):
            ai = ctx.rank_actor[r]
            if ai not in arrived:
                continue
            if out.setdefault(ai, t) != t:
                raise SymmetryBroken(f"ranks simulated as rank {ctx.actors[ai].rank} finish collective "
                                     f"#{inst.key[1] + 1} of group {inst.key[0] or 'all'!r} at different times")
        self.tally.per_rank += 1
        return out

    def _replay(self, inst: Instance, now: int) -> None:
        """``comm=replay``: each member lasts its recorded duration from when it issued the
        collective, and ends no earlier than the last member issued it (``now``)."""
        inst.n, inst.phases = 1, [PlannedPhase(0, None, "recorded duration")]
        self._finish_per_rank(inst, {a.index: max(t + a.prog.dur[i], now)
                                     for a, i, t in inst.arrived.values()}, now)

    def _run_custom(self, inst: Instance, custom: CustomCollective, now: int) -> None:
        """Time a collective over all ranks by its custom implementation (:mod:`algorithms.custom`)."""
        ctx = self.ctx
        arrived = {a.index: t for a, _i, t in inst.arrived.values()}
        fin = custom.finish([arrived[ctx.rank_actor[r]] for r in range(len(self.all))])
        times: dict[int, int] = {}
        for r, t in enumerate(fin):
            ai = ctx.rank_actor[r]
            if times.setdefault(ai, t) != t:
                raise SymmetryBroken(f"ranks simulated as rank {ctx.actors[ai].rank} finish the custom "
                                     f"{custom.kind} #{inst.key[1] + 1} at different times")
        inst.n, inst.phases = 1, [PlannedPhase(0, None, f"custom {custom.kind} ({custom.prefix})")]
        self.tally.custom_runs += 1
        self._finish_per_rank(inst, times, now)

    def _finish_per_rank(self, inst: Instance, times: dict[int, int], now: int) -> None:
        """End every member at its own time ``times[actor]`` (one event per distinct time), and
        no earlier than ``now``, when the last member issued it: a member whose part finished
        before (a part on dimensions the collective leaves out, or of a custom implementation,
        all issued early) is held until then (counted)."""
        ctx = self.ctx
        if min(times.values()) < now:
            self.tally.held += 1
            times = {k: max(t, now) for k, t in times.items()}
        by_time: dict[int, list] = {}
        for a, i, _t in inst.arrived.values():
            by_time.setdefault(times[a.index], []).append((a, i))
        inst.batches, inst.done = len(by_time), 0
        rep = inst.actors[0]
        ctx.spans.add(rep.index, 10, (inst.phases[0].label + " (per rank)", "all", inst.key), now,
                      times[rep.index] - now)
        for t in sorted(by_time):
            ev = ctx.env.timeout(t - now, (inst, by_time[t]))
            ev.callbacks.append(self._end_some)
            self.tally.events += 1

    def _end_some(self, ev) -> None:
        inst, members = ev.value
        inst.done += 1
        if inst.done == inst.batches:
            self._record(inst, int(self.ctx.env.now))
        for a, i in members:
            self.ctx.end_node(a, i)

    def _members_done(self, inst: Instance, ai: int, last: bool) -> None:
        """The ranks of actor ``ai`` finished message-run collective ``inst`` now."""
        if last:
            self._record(inst, int(self.ctx.env.now))
        a, i, _t = inst.arrived[ai]
        self.ctx.end_node(a, i)

    def _finish(self, inst: Instance) -> None:
        """Every member finished ``inst`` now (lockstep)."""
        self._record(inst, int(self.ctx.env.now))
        for a, i, _t in inst.arrived.values():
            self.ctx.end_node(a, i)

    def _record(self, inst: Instance, now: int) -> None:
        parent = inst.parent
        if parent is not None:  # some parts of a split collective: the whole is recorded with its last
            assert parent.parts is not None
            parent.parts.done_ranks += sum(len(v[0].ranks) for v in inst.arrived.values())
            if parent.parts.done_ranks < len(self.members(parent.key[0])):
                return
            inst = parent
        pg = inst.key[0]
        name = COMM_NAME[inst.args.comm_type]
        st = self.stats.get((name, pg))
        if st is None:
            st = self.stats[(name, pg)] = {"collective": name, "group": pg or "all", "count": 0,
                                           "bytes": 0, "total_ns": 0, "max_ns": 0, "sync_wait_ns": 0,
                                           "chunks": inst.n, "phases": [ph.label for ph in inst.phases],
                                           "replayed": self.ctx.replay}
        dur = now - inst.start
        st["count"] += 1
        st["bytes"] += inst.args.size
        st["total_ns"] += dur
        st["max_ns"] = max(st["max_ns"], dur)
        st["sync_wait_ns"] += (inst.parts.sync_wait if inst.parts is not None and inst.parts.done_ranks
                               else max(inst.start - v[2] for v in inst.arrived.values()))

    def waiting_report(self) -> list[str]:
        """Lines naming the collectives some members issued and others never did."""
        out = []
        for (pg, seq), inst in self.open.items():
            got = sorted(r for v in inst.arrived.values() for r in v[0].ranks)
            missing = [r for r in inst.members if r not in set(got)]
            a, i, _ = next(iter(inst.arrived.values()))
            ct = CommType(inst.args.comm_type)
            kind = KIND_NAME.get(ASTRA_KIND[ct], "")
            out.append(f"collective #{seq + 1} ({ct.name}, {kind}) of group "
                       f"{pg or 'all'!r}: rank(s) {_short(got)} wait (rank {a.rank} in node "
                       f"{a.prog.ids[i]}) for rank(s) {_short(missing)} that never issue it")
        return out


def _short(ranks: list[int]) -> str:
    text = ", ".join(map(str, ranks[:8]))
    return text + (f" ... ({len(ranks)} ranks)" if len(ranks) > 8 else "")
