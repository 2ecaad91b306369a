"""The ring algorithm (ASTRA-sim's ``ring``), and the ring over a communicator group.

Every member sends to the next member of its ring and receives from the previous one, step by
step (``m = d // P``; all-gather ``m = d``): all-reduce ``2(P-1)`` steps, ``P-1`` reductions,
``2P-1`` endpoint delays; reduce-scatter ``P-1`` steps and reductions, ``P`` delays; all-gather
``P-1`` steps, ``P`` delays; all-to-all ``P(P-1)/2`` steps, ``P(P-1)/2+1`` delays.
"""

from __future__ import annotations

from collections.abc import Callable

from chakra_core.system import Dimension

from ..formulas import GROUP_ENDPOINT_DELAY, Cost, link_net, net, red, same_steps_cost
from ..layouts import MemberLayout
from ..member_timing import Phase, Step
from .base import Algorithm, Implementation, Link, Part, RotatedParts, StepMessages, TreeTurn, numbered

__all__ = ["Ring", "ring_steps", "group_cost"]


def ring_steps(kind: str, p: int) -> tuple[int, int, int]:
    """``(network steps, reductions, message divisor)`` of the ring algorithm on ``p`` NPUs."""
    if kind == "AR":
        return 2 * (p - 1), p - 1, p
    if kind == "RS":
        return p - 1, p - 1, p
    if kind == "AG":
        return p - 1, 0, 1
    return p * (p - 1) // 2, 0, p  # A2A


class Ring(Algorithm):
    """The ring algorithm (module docstring)."""

    name = "ring"

    def cost(self, kind: str, impl: Implementation, p: int, link: Link, d: int, e: int,
             local_mem_bw: float) -> int:
        """The chain of the module docstring, every message charged as the one to the next member."""
        steps, nred, div = ring_steps(kind, p)
        m = d // div
        dim, h = link(1)
        return same_steps_cost(e, steps, m, dim, h, nred * red(m, local_mem_bw) if nred else 0).fixed

    def member_phase(self, kind: str, data: int, lay: MemberLayout, queue: int, e: int, local_mem_bw: float,
                     turn: TreeTurn | None) -> Phase:
        """Each step waits for the ring predecessor's message over its own incoming link."""
        steps, nred, div = ring_steps(kind, lay.size)
        m = data // div
        members = range(len(lay.index))
        pred = [lay.offset(j, -1) for j in members]
        nets = [link_net(lay.link(j, -1), m) for j in members]
        r = red(m, local_mem_bw) if nred else 0
        return Phase(queue, e, [Step(pred, nets, e + (r if s < nred else 0)) for s in range(steps)])

    def messages(self, kind: str, data: int, lay: MemberLayout, e: int, local_mem_bw: float) -> StepMessages:
        """To the next member, from the previous one, every step."""
        count, nred, div = ring_steps(kind, lay.size)
        m = data // div
        r = red(m, local_mem_bw) if nred else 0

        def part(j: int) -> Part:
            return numbered(e, [((lay.offset(j, 1),), (lay.offset(j, -1),), m, e + (r if s < nred else 0))
                                for s in range(count)])
        if len(lay.slices) == 1 and lay.index == list(range(lay.size)):  # one ring, members in index order
            return StepMessages([RotatedParts(lay.size, part(0))])
        return StepMessages([[part(j) for j in range(len(lay.index))]])


def group_cost(kind: str, members: list[int], hop_cost: Callable[[int, int], tuple[Dimension, int]], d: int,
               local_mem_bw: float) -> Cost:
    """Cost of one chunk phase of a ring over a communicator group (members in rank order).

    ``hop_cost(a, b)`` gives ``(Dimension, hops)`` of the physical path from rank a to rank b.
    Member j receives every step from its predecessor, so its phase lasts
    ``(S+1)*10 + reductions + sum of the S incoming messages`` walking the ring backwards.  This
    is the slowest member's time: exact for every member when the links are even; uneven rings
    are timed per member (:mod:`member_timing`), and this cost only serves when they are too large.
    """
    p = len(members)
    steps, nred, div = ring_steps(kind, p)
    m = d // div
    e = GROUP_ENDPOINT_DELAY
    links = [hop_cost(members[j - 1], members[j]) for j in range(p)]  # into member j
    nets = [net(dim, m, h) for dim, h in links]
    q, r = divmod(steps, p)
    reds = nred * red(m, local_mem_bw) if nred else 0

    def worst(vals: list[int]) -> int:
        total = sum(vals)
        if r == 0:
            return q * total
        pre = [0]
        for v in vals + vals:
            pre.append(pre[-1] + v)
        # the r messages into member j come over links j-r+1 .. j
        return q * total + max(pre[j + p + 1] - pre[j + p + 1 - r] for j in range(p))

    worst_net = int(worst(nets)) if steps else 0
    return Cost((steps + 1) * e + reds + worst_net)

