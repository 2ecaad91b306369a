"""Build the per-member phases of :mod:`stagger` for a collective's plan."""

from __future__ import annotations

import numpy as np

from chakra_core.system import Dimension, algorithm_base

from .stagger import DirectPhase, Phase, Step
from .timing import GROUP_ENDPOINT_DELAY, net, red, ring_hops, ring_steps

__all__ = ["Layout", "group_layout", "dim_layout", "build_phase"]


class Layout:
    """Members of one logical ring per slice: ``offset(j, o)`` is the member ``o`` places after
    member j in its ring, ``index[j]`` its place, ``slices`` the rings, ``link(j, o)`` the
    ``(Dimension, hops)`` of the message from that member to j."""

    def __init__(self, size: int, index: list[int], offset, slices: list[list[int]], link):
        self.size = size
        self.index = index
        self.offset = offset
        self.slices = slices
        self.link = link


def group_layout(members: list[int], hop) -> Layout:
    """One ring over ``members`` (rank order); ``hop(a, b)`` gives the physical path."""
    p = len(members)

    def offset(j: int, o: int) -> int:
        return (j + o) % p

    def link(j: int, o: int):
        return hop(members[(j + o) % p], members[j])

    return Layout(p, list(range(p)), offset, [list(range(p))], link)


def dim_layout(dims: tuple[Dimension, ...], d: int, total: int) -> Layout:
    """The rings of dimension ``d`` over all ``total`` ranks (members indexed by rank)."""
    dim = dims[d]
    p = dim.npus_count
    stride = 1
    for x in dims[:d]:
        stride *= x.npus_count
    index = [(r // stride) % p for r in range(total)]

    def offset(j: int, o: int) -> int:
        return j + ((index[j] + o) % p - index[j]) * stride

    slices: dict[int, list[int]] = {}
    for r in range(total):
        slices.setdefault(r - index[r] * stride, []).append(r)

    def link(j: int, o: int):
        return dim, ring_hops(dim, o)

    return Layout(p, index, offset, list(slices.values()), link)


def build_phase(kind: str, data: int, impl: str, lay: Layout, queue: int, e: int,
                local_mem_bw: float, group: bool) -> Phase | DirectPhase:
    """Per-member steps of one chunk phase (``data`` bytes in) with algorithm ``impl``."""
    p = lay.size
    members = range(len(lay.index))
    base, _ = algorithm_base(impl)
    if group:
        e = GROUP_ENDPOINT_DELAY
    if base == "ring":
        steps, nred, div = ring_steps(kind, p)
        m = data // div
        pred = [lay.offset(j, -1) for j in members]
        nets = [_net(lay.link(j, -1), m) for j in members]
        r = red(m, local_mem_bw) if nred else 0
        return Phase(queue, e, [Step(pred, nets, e + (r if s < nred else 0)) for s in range(steps)])
    if base == "direct":
        m = data if kind == "AG" else data // p
        cin = np.array([[_net(lay.link(j, p - o), m) for o in range(1, p)] for j in members], np.int64)
        r = red(m, local_mem_bw) if kind in ("AR", "RS") else 0
        return DirectPhase(queue, e, lay.slices, cin, e + r, kind == "AR")
    # halvingDoubling (the plan checked P is a power of two and the kind is modelled)
    k = p.bit_length() - 1
    msgs: list[tuple[int, int, int]] = []  # (bytes, distance, add after its receive)
    if kind in ("AR", "RS"):
        sizes = [data // 2]
        for _ in range(k - 1):
            sizes.append(sizes[-1] // 2)
        for i in range(k):
            nxt = red(sizes[i + 1], local_mem_bw) if i + 1 < k else 0
            msgs.append((sizes[i], 1 << i, e + nxt))
        if kind == "AR":
            t = 2 * (sizes[-1] // 2)
            for j in range(1, k + 1):
                msgs.append((t << (j - 1), p >> j, e))
    else:
        for i in range(1, k + 1):
            msgs.append((data << (i - 1), p >> i, e))
    steps_out = []
    for m, dist, add in msgs:
        pred = [lay.offset(j, dist if (lay.index[j] // dist) % 2 == 0 else -dist) for j in members]
        nets = [_net(lay.link(j, dist), m) for j in members]
        steps_out.append(Step(pred, nets, add))
    return Phase(queue, e, steps_out)


def _net(dim_hops: tuple[Dimension, int], m: int) -> int:
    dim, h = dim_hops
    return net(dim, m, h)
