"""The per-member phases of a collective whose members do not move in lockstep, built from its
plan through the algorithm registry (:func:`chunk_phases.build_phase`) and cached."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .chunk_phases import PhaseSpec, build_phase, tree_turns
from .layouts import MemberLayout, dim_layout, group_layout

if TYPE_CHECKING:
    from .algorithms.base import MemberPhase
    from .collective_context import CollectiveContext

__all__ = ["MemberPhases"]


class MemberPhases:
    """Builds the per-member phases of collectives on ``ctx``'s system; phases that do not
    depend on a tree turn are cached by what they are built from."""

    def __init__(self, ctx: CollectiveContext):
        self.ctx = ctx
        self.cache: dict[tuple, MemberPhase] = {}
        #: per group (its ranks), whether its ring's links are even
        self.even: dict[tuple[int, ...], bool] = {}

    def lockstep(self, specs: list[PhaseSpec], members: tuple[int, ...], bases: dict[int, int],
                 together: bool) -> bool:
        """Whether the closed form is exact: the members issued it ``together`` (at one time), and
        the links of a group ring over ``members`` are even (world collectives: and no alternating
        algorithm)."""
        if not together:
            return False
        if specs[0].dim is None:
            return self._even(members)
        return not bases

    def _even(self, ranks: tuple[int, ...]) -> bool:
        """Whether every link of the ring over ``ranks`` is the same path (remembered per group)."""
        even = self.even.get(ranks)
        if even is None:
            hop = self.ctx.planner.hop
            even = self.even[ranks] = len({hop(ranks[j - 1], ranks[j]) for j in range(len(ranks))}) == 1
        return even

    def build(self, specs: list[PhaseSpec], ranks: list[int], bases: dict[int, int],
              chunks: int) -> tuple[list[MemberPhase], int]:
        """The phases of ``specs`` over ``ranks`` (a group's members, or every rank) and the
        evaluations timing them takes (``chunks`` x per-member work x members), for a collective
        whose closed form is not exact (:meth:`lockstep`).  ``bases``: phases each dimension's
        alternating algorithm ran before this collective."""
        sd = self.ctx.sd
        planner = self.ctx.planner
        group = specs[0].dim is None
        layouts: dict[int | None, MemberLayout] = {}
        phases: list[MemberPhase] = []
        work = 0
        for spec, turn in zip(specs, tree_turns(specs, bases)):
            built = (*spec, tuple(ranks) if group else None)
            phase = self.cache.get(built) if turn is None else None
            if phase is None:
                lay = layouts.get(spec.dim)
                if lay is None:
                    lay = layouts[spec.dim] = (group_layout(ranks, planner.hop) if spec.dim is None
                                               else dim_layout(planner.dims, spec.dim, planner.total))
                phase = build_phase(spec.kind, spec.data, spec.impl, lay, spec.dim or 0, sd.endpoint_delay,
                                    sd.local_mem_bw, group, turn)
                if turn is None:
                    self.cache[built] = phase
            phases.append(phase)
            work += chunks * phase.work * len(ranks)
        return phases, work
