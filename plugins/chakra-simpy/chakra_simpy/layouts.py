"""Member layouts: how the members of a collective phase form the logical rings its algorithm
runs on (one ring over a communicator group, or the rings of one network dimension)."""

from __future__ import annotations

from collections.abc import Callable

from chakra_core.system import Dimension

from .formulas import ring_hops

__all__ = ["MemberLayout", "group_layout", "dim_layout"]


class MemberLayout:
    """Members of one logical ring per slice: ``offset(j, o)`` is the member ``o`` places after
    member j in its ring, ``index[j]`` its place, ``slices`` the rings, ``link(j, o)`` the
    ``(Dimension, hops)`` of the message from that member to j."""

    __slots__ = ("size", "index", "offset", "slices", "link")

    def __init__(self, size: int, index: list[int], offset: Callable[[int, int], int], slices: list[list[int]],
                 link: Callable[[int, int], tuple[Dimension, int]]):
        self.size = size
        self.index = index
        self.offset = offset
        self.slices = slices
        self.link = link


def group_layout(members: list[int], hop: Callable[[int, int], tuple[Dimension, int]]) -> MemberLayout:
    """One ring over ``members`` (rank order); ``hop(a, b)`` gives the physical path."""
    p = len(members)

    def offset(j: int, o: int) -> int:
        return (j + o) % p

    def link(j: int, o: int) -> tuple[Dimension, int]:
        return hop(members[(j + o) % p], members[j])

    return MemberLayout(p, list(range(p)), offset, [list(range(p))], link)


def dim_layout(dims: tuple[Dimension, ...], d: int, total: int) -> MemberLayout:
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

    def link(j: int, o: int) -> tuple[Dimension, int]:
        return dim, ring_hops(dim, o)

    return MemberLayout(p, index, offset, list(slices.values()), link)
