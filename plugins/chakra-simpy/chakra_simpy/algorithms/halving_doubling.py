"""The halving-doubling algorithm (ASTRA-sim's ``halvingDoubling``; P a power of two, k = log2 P).

Each step exchanges one message with the step's partner: message i (i = 1..k) of a
reduce-scatter, and of an all-reduce's first half, is (d // 2) halved i-1 times, to and from the
member 2^(i-1) places away, reduced from the second on; an all-gather, and an all-reduce's second
half, double back from P/2 places away.  k+1 (reduce-scatter, all-gather) or 2k+1 (all-reduce)
endpoint delays.  ASTRA-sim has no halving-doubling all-to-all.
"""

from __future__ import annotations

from chakra_core import ConfigError
from chakra_core.system import Dimension

from ..formulas import chain_cost, link_net, red
from ..layouts import MemberLayout
from ..member_timing import Phase, Step
from .base import Algorithm, Implementation, Link, MessageStep, StepMessages, TreeTurn, numbered

__all__ = ["HalvingDoubling"]


def _exchanges(kind: str, data: int, p: int, e: int, local_mem_bw: float) -> list[tuple[int, int, int]]:
    """``(bytes, distance, ns after its receive)`` of every exchange of a chunk phase."""
    k = p.bit_length() - 1
    msgs: list[tuple[int, int, int]] = []
    if kind in ("AR", "RS"):
        sizes = [data // 2]
        for _ in range(k - 1):
            sizes.append(sizes[-1] // 2)
        for i in range(k):
            nxt = red(sizes[i + 1], local_mem_bw) if i + 1 < k else 0
            msgs.append((sizes[i], 1 << i, e + nxt))
        if kind == "AR":
            t = 2 * (sizes[-1] // 2)
            msgs += [(t << (j - 1), p >> j, e) for j in range(1, k + 1)]
    else:
        msgs = [(data << (i - 1), p >> i, e) for i in range(1, k + 1)]
    return msgs


def _partner(lay: MemberLayout, j: int, dist: int) -> int:
    """Member ``j``'s partner in an exchange over ``dist`` places."""
    return lay.offset(j, dist if (lay.index[j] // dist) % 2 == 0 else -dist)


class HalvingDoubling(Algorithm):
    """The halving-doubling algorithm (module docstring)."""

    name = "halvingDoubling"

    def check_all_npus(self, impl: Implementation, dims: tuple[Dimension, ...]) -> None:
        """Every dimension must have a power-of-two NPU count."""
        if any(x.npus_count & (x.npus_count - 1) for x in dims):
            raise ConfigError(f"'{impl.name}' needs power-of-two dimensions")

    def cost(self, kind: str, impl: Implementation, p: int, link: Link, d: int, e: int,
             local_mem_bw: float) -> int:
        """The exchanges one after the other (module docstring)."""
        k = p.bit_length() - 1
        if p != 1 << k:
            raise ConfigError(f"halvingDoubling needs a power-of-two NPU count, got {p}")
        if kind == "A2A":
            raise ConfigError("ASTRA-sim has no halvingDoubling all-to-all")
        msgs: list[tuple[int, Dimension, int]] = []
        reds = 0
        if kind in ("AR", "RS"):
            s = d // 2
            for i in range(1, k + 1):
                msgs.append((s, *link(1 << (i - 1))))
                if i >= 2:
                    reds += red(s, local_mem_bw)
                if i < k:
                    s //= 2
            if kind == "RS":
                return chain_cost(e, k + 1, msgs, reds).fixed
            t = 2 * (s // 2)
            for j in range(1, k + 1):
                msgs.append((t << (j - 1), *link(p >> j)))
            return chain_cost(e, 2 * k + 1, msgs, reds).fixed
        for i in range(1, k + 1):  # AG
            msgs.append((d << (i - 1), *link(p >> i)))
        return chain_cost(e, k + 1, msgs, 0).fixed

    def member_phase(self, kind: str, data: int, lay: MemberLayout, queue: int, e: int, local_mem_bw: float,
                     turn: TreeTurn | None) -> Phase:
        """Each step waits for the partner's message (the plan checked P and the kind)."""
        members = range(len(lay.index))
        steps = []
        for m, dist, add in _exchanges(kind, data, lay.size, e, local_mem_bw):
            pred = [_partner(lay, j, dist) for j in members]
            nets = [link_net(lay.link(j, dist), m) for j in members]
            steps.append(Step(pred, nets, add))
        return Phase(queue, e, steps)

    def messages(self, kind: str, data: int, lay: MemberLayout, e: int, local_mem_bw: float) -> StepMessages:
        """To and from the exchange partner of every step."""
        msgs = _exchanges(kind, data, lay.size, e, local_mem_bw)
        parts = []
        for j in range(len(lay.index)):
            steps: list[MessageStep] = []
            for m, dist, add in msgs:
                partner = _partner(lay, j, dist)
                steps.append(((partner,), (partner,), m, add))
            parts.append(numbered(e, steps))
        return StepMessages([parts])
