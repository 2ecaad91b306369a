"""Collective plans: chunks and the phases each chunk goes through, per dimension queue.

A :class:`Plan` is ``(chunks, phases, per_member)``: every chunk goes through the same
``phases`` in order (ASTRA-sim gives the remainder chunk the full chunk size too), each waiting
in the queue of its network dimension (group rings use dimension 0's queue, as ASTRA-sim does).
``per_member`` lists what each phase is built from (:class:`chunk_phases.PhaseSpec`), from which
:mod:`member_timing` times every member and :mod:`message_run` sends every message; None for the
one* variants.

Plans depend on nothing but the system's planning inputs (:func:`planning_inputs`) and the
collective, so :func:`planner_for` shares one :class:`Planner`, and the plans it made, among the
runs of a process on systems of the same inputs (a sweep's many small simulations).
"""

from __future__ import annotations

from typing import NamedTuple

from chakra_core import ConfigError
from chakra_core.system import SystemDescription

from .algorithms import all_npus, find, lookup
from .algorithms.ring import Ring, group_cost
from .chunk_phases import PhaseSpec, one_phase_cost, phase_cost
from .formulas import Cost, chunking, final_size, net, peer_hops
from .lru import LruStore

__all__ = ["Planner", "Plan", "PlannedPhase", "KIND_NAME", "MAX_CHUNKS", "planner_for", "planning_inputs",
           "KEPT_PLANNERS", "KEPT_PLANS"]

#: most chunks one collective may split into (each chunk phase is an event; beyond this a
#: mistyped preferred-dataset-splits would exhaust memory instead of failing).
MAX_CHUNKS = 1 << 20

KIND_NAME = {"AR": "all-reduce", "RS": "reduce-scatter", "AG": "all-gather", "A2A": "all-to-all"}
_LONG = {"AR": "all_reduce", "RS": "reduce_scatter", "AG": "all_gather", "A2A": "all_to_all"}


class PlannedPhase(NamedTuple):
    """One chunk phase as the lockstep flow shop runs it: the dimension queue it waits in, its
    cost (None where the collective is not timed by phases) and its label."""

    queue: int
    cost: Cost | None
    label: str


class Plan(NamedTuple):
    """Chunks of a collective, the phases each goes through, and what each phase is built from
    per member (None: one* variants, timed in lockstep only)."""

    chunks: int
    phases: list[PlannedPhase]
    per_member: list[PhaseSpec] | None


_NOTHING = Plan(0, [], None)

#: planners kept for the systems most recently planned for (:func:`planner_for`)
KEPT_PLANNERS = 8
#: plans a planner keeps; it starts afresh past this many
KEPT_PLANS = 4096

_kept: LruStore[Planner] = LruStore()


def planning_inputs(sd: SystemDescription) -> tuple:
    """What a :class:`Planner` reads of ``sd``: the dimensions, the collective implementations,
    the dataset splits, the collective optimization, the endpoint delay, the local memory
    bandwidth and the system file its errors name."""
    return (sd.dimensions, sd.all_reduce_implementation, sd.all_gather_implementation,
            sd.reduce_scatter_implementation, sd.all_to_all_implementation, sd.preferred_dataset_splits,
            sd.collective_optimization, sd.endpoint_delay, sd.local_mem_bw, sd.sources.get("system"))


def planner_for(sd: SystemDescription) -> Planner:
    """A :class:`Planner` for ``sd``: the one made for an earlier system of the same
    :func:`planning_inputs`, among the :data:`KEPT_PLANNERS` most recent, else a new one."""
    return _kept.get_or_make(planning_inputs(sd), lambda: Planner(sd), KEPT_PLANNERS)


class Planner:
    """Builds (and caches) collective plans for one system description."""

    def __init__(self, sd: SystemDescription):
        self.sd = sd
        self.dims = sd.dimensions
        self.total = sd.npus
        self._cache: dict[tuple, Plan] = {}
        self._coords = [sd.coords(r) for r in range(self.total)]

    def hop(self, a: int, b: int):
        """``(Dimension, hops)`` of the physical path from rank ``a`` to rank ``b``."""
        d, h = peer_hops(self.dims, self._coords[a], self._coords[b])
        return self.dims[d], h

    def p2p_cost(self, a: int, b: int, size: int) -> int:
        """ns of a message of ``size`` bytes from rank ``a`` to rank ``b`` (congestion-unaware):
        ``net(size)`` on the lowest differing dimension, no endpoint delay, no chunking."""
        d, h = peer_hops(self.dims, self._coords[a], self._coords[b])
        return net(self.dims[d], size, h)

    def one_star_phases(self, kind: str, size: int) -> list[PhaseSpec]:
        """``per_member`` of a one* collective of ``size`` bytes on a one-dimensional network:
        its ring over every NPU in rank order is the dimension's ring, so it is the dimension's
        algorithm (for the congestion-aware mode, which runs it message by message)."""
        _n, c = chunking(kind, size, self.sd.preferred_dataset_splits, self.total)
        return [PhaseSpec(kind, c, 0, self.sd.implementation(_LONG[kind])[0])]

    def plan(self, kind: str, size: int, involved: tuple[bool, ...] | None,
             members: tuple[int, ...] | None) -> Plan:
        """Plan of a collective of ``kind`` (AR, RS, AG, A2A) and ``size`` bytes.

        ``members`` None: all ranks, over the network dimensions; else a ring over the members.
        """
        key = (kind, size, involved, members)
        got = self._cache.get(key)
        if got is None:
            if len(self._cache) >= KEPT_PLANS:
                self._cache.clear()
            got = self._cache[key] = self._plan(kind, size, involved, members)
        return got

    def _plan(self, kind: str, size: int, involved: tuple[bool, ...] | None,
              members: tuple[int, ...] | None) -> Plan:
        n, c = self._chunks(kind, size)
        if n == 0:
            return _NOTHING
        if members is not None:
            return self._group_plan(kind, n, c, members)
        impl = self.sd.implementation(_LONG[kind])
        if not impl:
            raise ConfigError(f"no '{KIND_NAME[kind]}-implementation' in the system description",
                              self.sd.sources.get("system"))
        try:
            if all_npus(impl[0]):
                return self._all_npus_plan(kind, n, c, impl)
            return self._dimension_plan(n, c, impl, self._steps(kind, impl, involved))
        except ConfigError as e:  # an implementation the algorithm does not model here, named where it is given
            if e.where is not None or type(e) is not ConfigError:  # located, or a kind its caller locates
                raise
            raise ConfigError(e.message, self.sd.sources.get("system"),
                              f"key '{KIND_NAME[kind]}-implementation'") from None

    def _chunks(self, kind: str, size: int) -> tuple[int, int]:
        """``(chunks, chunk bytes)``; a ConfigError beyond :data:`MAX_CHUNKS`."""
        sd = self.sd
        n, c = chunking(kind, size, sd.preferred_dataset_splits, self.total)
        if n > MAX_CHUNKS:
            raise ConfigError(f"a {KIND_NAME[kind]} of {size} bytes splits into {n} chunks "
                              f"(preferred-dataset-splits {sd.preferred_dataset_splits}); the simpy "
                              f"backend times at most {MAX_CHUNKS} chunks per collective: lower "
                              "preferred-dataset-splits", sd.sources.get("system"),
                              "key 'preferred-dataset-splits'")
        return n, c

    def _group_plan(self, kind: str, n: int, c: int, members: tuple[int, ...]) -> Plan:
        """A ring over the members of a communicator group (ASTRA-sim's rule for groups)."""
        if len(members) < 2:
            return _NOTHING
        cost = group_cost(kind, list(members), self.hop, c, self.sd.local_mem_bw)
        return Plan(n, [PlannedPhase(0, cost, f"{KIND_NAME[kind]} ring over group")],
                    [PhaseSpec(kind, c, None, Ring.name)])

    def _all_npus_plan(self, kind: str, n: int, c: int, impl: tuple[str, ...]) -> Plan:
        """One phase over every NPU (a one* implementation)."""
        sd = self.sd
        if any(not all_npus(x) for x in impl[:min(len(impl), len(self.dims))]):
            raise ConfigError(f"'{KIND_NAME[kind]}-implementation' mixes one* and per-dimension "
                              "algorithms; ASTRA-sim stops at the first one*", sd.sources.get("system"))
        cost = one_phase_cost(kind, impl[0], self.dims, c, sd.endpoint_delay, sd.local_mem_bw)
        return Plan(n, [PlannedPhase(0, cost, f"{KIND_NAME[kind]} over all NPUs ({impl[0]})")], None)

    def _steps(self, kind: str, impl: tuple[str, ...], involved: tuple[bool, ...] | None) -> list[tuple[str, int]]:
        """``(kind, dimension)`` of every phase over the dimensions with more than one NPU that
        ``involved`` allows: all-reduce ``baseline`` on each in turn, ``localBWAware``
        reduce-scatter up to the last, all-reduce there, all-gather back down; reduce-scatter
        and all-to-all ascending; all-gather descending."""
        ndims = min(len(impl), len(self.dims))
        active = [d for d in range(ndims) if self.dims[d].npus_count > 1
                  and (involved is None or d >= len(involved) or involved[d])]
        if kind == "AR" and self.sd.collective_optimization == "localBWAware" and active:
            last = active[-1]
            steps = [("RS", d) for d in active if d < last] + [("AR", last)]
            steps += [("AG", d) for d in reversed(active) if d < last]
        elif kind == "AG":
            steps = [("AG", d) for d in reversed(active)]
        else:
            steps = [(kind, d) for d in active]
        self._check_short_list(kind, impl, steps)
        return steps

    def _check_short_list(self, kind: str, impl: tuple[str, ...], steps: list[tuple[str, int]]) -> None:
        """Refuse an alternating (tree) algorithm on the last entry of a list shorter than the
        network, on a dimension the plan visits (ASTRA-sim crashes there)."""
        ndims = min(len(impl), len(self.dims))
        if ndims == len(self.dims) or not any(d == ndims - 1 for _k, d in steps):
            return
        found = find(impl[ndims - 1])
        if found is not None and found.algorithm.alternates:
            raise ConfigError(f"{found.algorithm.name} on the last entry of an '{KIND_NAME[kind]}-implementation' "
                              "list shorter than the network: ASTRA-sim builds that dimension's trees over "
                              "the wrong ranks and crashes; give one entry per dimension",
                              self.sd.sources.get("system"))

    def _dimension_plan(self, n: int, c: int, impl: tuple[str, ...], steps: list[tuple[str, int]]) -> Plan:
        """One phase per ``(kind, dimension)`` step, each with the dimension's algorithm; the
        data shrinks and grows through them (RS: /P, AG: xP)."""
        sd = self.sd
        phases: list[PlannedPhase] = []
        specs: list[PhaseSpec] = []
        data = c
        for asked, d in steps:
            dim = self.dims[d]
            k = lookup(impl[d]).algorithm.phase_kind(asked)
            label = f"{KIND_NAME[k]} on dim {d} ({impl[d]})"
            if k != asked:
                label = f"{KIND_NAME[k]} on dim {d} ({impl[d]}, in place of {KIND_NAME[asked]})"
            cost = phase_cost(k, impl[d], dim, data, sd.endpoint_delay, sd.local_mem_bw)
            phases.append(PlannedPhase(d, cost, label))
            specs.append(PhaseSpec(k, data, d, impl[d]))
            data = final_size(k, data, dim.npus_count)
        return Plan(n if phases else 0, phases, specs)
