"""One chunk phase of a plan, through the algorithm registry (:mod:`algorithms`): its closed-form
cost on a dimension or over every NPU, its per-member timing, and the turns of alternating
(tree) algorithms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from chakra_core.system import Dimension, SystemDescription

from .algorithms import find, lookup, not_modelled
from .algorithms.base import MemberPhase, TreeTurn
from .formulas import GROUP_ENDPOINT_DELAY, Cost, peer_hops, ring_hops
from .layouts import MemberLayout

__all__ = ["PhaseSpec", "phase_cost", "one_phase_cost", "build_phase", "tree_visits", "tree_turns",
           "members_finish_apart"]


class PhaseSpec(NamedTuple):
    """What one chunk phase is built from per member: its kind (AR, RS, AG, A2A), the bytes
    entering it, its dimension (None: a ring over a communicator group) and implementation."""

    kind: str
    data: int
    dim: int | None
    impl: str


def phase_cost(kind: str, impl: str, dim: Dimension, d: int, e: int, local_mem_bw: float) -> Cost:
    """Cost of one chunk phase of ``kind`` with ``d`` bytes entering it on network dimension
    ``dim`` with implementation ``impl`` (its algorithm's ``cost``)."""
    found = lookup(impl)
    if found.all_npus:
        raise not_modelled(impl)
    return Cost(found.algorithm.cost(kind, found, dim.npus_count, lambda dist: (dim, ring_hops(dim, dist)), d, e,
                                     local_mem_bw))


def one_phase_cost(kind: str, impl: str, dims: tuple[Dimension, ...], d: int, e: int,
                   local_mem_bw: float) -> Cost:
    """Cost of one chunk phase of a ``one*`` implementation: one logical ring over every NPU
    (rank order), each message charged on the lowest dimension where the two ranks differ
    (seen from rank 0: the network is symmetric)."""
    total = 1
    for dim in dims:
        total *= dim.npus_count
    found = lookup(impl)
    found.algorithm.check_all_npus(found, dims)

    def coords(r: int) -> list[int]:
        out = []
        for dim in dims:
            out.append(r % dim.npus_count)
            r //= dim.npus_count
        return out

    zero = coords(0)

    def link(dist: int) -> tuple[Dimension, int]:
        dd, h = peer_hops(dims, tuple(zero), tuple(coords(dist % total)))
        return dims[dd], h

    return Cost(found.algorithm.cost(kind, found, total, link, d, e, local_mem_bw))


def build_phase(kind: str, data: int, impl: str, lay: MemberLayout, queue: int, e: int, local_mem_bw: float,
                group: bool, turn: TreeTurn | None = None) -> MemberPhase:
    """One chunk phase per member (``data`` bytes in) with implementation ``impl`` on ``lay``
    (``group``: a ring over a communicator group, with ASTRA-sim's group endpoint delay)."""
    if group:
        e = GROUP_ENDPOINT_DELAY
    return lookup(impl).algorithm.member_phase(kind, data, lay, queue, e, local_mem_bw, turn)


def _alternates(spec: PhaseSpec) -> bool:
    return spec.dim is not None and lookup(spec.impl).algorithm.alternates


def tree_visits(per_member: Sequence[PhaseSpec] | None) -> dict[int, int]:
    """Phases of alternating algorithms per chunk, by dimension, of a plan's per-member list."""
    out: dict[int, int] = {}
    for spec in per_member or ():
        if spec.dim is not None and _alternates(spec):
            out[spec.dim] = out.get(spec.dim, 0) + 1
    return out


def tree_turns(per_member: Sequence[PhaseSpec], bases: dict[int, int]) -> list[TreeTurn | None]:
    """The turn of every phase of an alternating algorithm (None for the others); ``bases``:
    such phases each dimension ran before this collective."""
    visits = tree_visits(per_member)
    seen: dict[int, int] = {}
    out: list[TreeTurn | None] = []
    for spec in per_member:
        if spec.dim is not None and _alternates(spec):
            visit = seen[spec.dim] = seen.get(spec.dim, -1) + 1
            out.append(TreeTurn(bases[spec.dim], visits[spec.dim], visit))
        else:
            out.append(None)
    return out


def members_finish_apart(sd: SystemDescription) -> bool:
    """Whether a world all-reduce can take an alternating algorithm on ``sd`` (its members then
    finish at different times)."""
    impl = sd.implementation("all_reduce")
    for d, name in enumerate(impl[:len(sd.dimensions)]):
        found = find(name)
        if found is not None and found.algorithm.alternates and sd.dimensions[d].npus_count > 1:
            return True
    return False
