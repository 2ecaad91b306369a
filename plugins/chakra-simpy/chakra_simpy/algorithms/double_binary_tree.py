"""Double binary tree all-reduce (ASTRA-sim's ``doubleBinaryTree``), timed per member.

Read from ASTRA-sim 2.x's source (``DoubleBinaryTreeAllReduce``, ``BinaryTree``,
``DoubleBinaryTreeTopology``, ``GeneralComplexTopology``, ``MemBus``, ``PacketBundle``); not
checked against its binary.  On one dimension of P = 2^k NPUs (members in coordinate order,
offsets 0..P-1) there are two trees:

- *max* tree: a complete binary tree of k levels numbered in order over offsets 0..P-2, whose
  top (offset P/2-1) is the only child of the root, offset P-1;
- *min* tree: the same shifted by one: complete tree over 1..P-1 (top P/2), root 0.

In both, the edge between depth i-1 and depth i spans P/2^i offsets.  Every member of a chunk
phase moves ``d`` bytes (the full chunk) on every edge.  Each rank takes the max tree for its
1st, 3rd, ... double-binary-tree phase on a dimension and the min tree for its 2nd, 4th, ...
(one counter per dimension over all its all-reduces, advanced chunk by chunk, phase by phase).

A member starting at ``t`` (e = endpoint delay, r = red(d), n = net(d) of the edge)::

    leaf:          up = t + e                                   (then sends to its parent)
    intermediate:  up = max(t, up_c + n_c for both children) + e + r
    root:          down = max(t, up_c + n_c) + e + r            (then sends to its child)
    intermediate:  down = max(down_parent + n, up) + e + r      (then sends to both children)
    leaf:          down = max(down_parent + n, up) + e

and finishes at ``down``.  With equal starts a member at depth i finishes at ``F_i``::

    F_0 = (k+1) e + k r + S,   S = n_1 + ... + n_k   (n_i: the edge into depth i)
    F_i = F_0 + (n_1 + ... + n_i) + i (e + r)        (0 < i < k)
    F_k = F_0 + S + (k-1)(e + r) + e                 (the leaves, the last ones)
"""

from __future__ import annotations

from chakra_core import ConfigError

from ..formulas import chain_cost, net, red
from ..layouts import MemberLayout
from .base import Algorithm, Implementation, Link, MessageStep, Part, StepMessages, TreeTurn, numbered

__all__ = ["DoubleBinaryTree", "tree", "depths", "TreePhase", "check_size"]


def check_size(p: int) -> int:
    """``k = log2 p``; a ConfigError unless ``p`` is a power of two (ASTRA-sim builds a tree of
    2^floor(log2 p) nodes and crashes on the other ranks)."""
    k = p.bit_length() - 1
    if p < 2 or p != 1 << k:
        raise ConfigError(f"doubleBinaryTree needs a power-of-two NPU count per dimension, got {p} "
                          "(ASTRA-sim builds its trees over 2^floor(log2 P) NPUs and crashes on the others)")
    return k


def tree(p: int, root_max: bool) -> list[int]:
    """Parent offset of every offset 0..p-1 (-1 for the root) in the max or min tree."""
    check_size(p)
    parent = [-1] * p
    lo, hi, root = (0, p - 2, p - 1) if root_max else (1, p - 1, 0)

    def build(a: int, b: int, up: int) -> None:
        mid = (a + b) // 2
        parent[mid] = up
        if a < mid:
            build(a, mid - 1, mid)
            build(mid + 1, b, mid)

    build(lo, hi, root)
    return parent


def depths(parent: list[int]) -> list[int]:
    """Depth of every offset (root 0) of a tree given by its parents."""
    out = [-1] * len(parent)

    def depth(o: int) -> int:
        if out[o] < 0:
            out[o] = 0 if parent[o] < 0 else depth(parent[o]) + 1
        return out[o]

    for o in range(len(parent)):
        depth(o)
    return out


class _Shape:
    """One tree over offsets: parents, children, the net of each edge, a leaves-first order."""

    __slots__ = ("parent", "children", "nets", "order")

    def __init__(self, p: int, root_max: bool, edge_net):
        self.parent = tree(p, root_max)
        self.children: list[list[int]] = [[] for _ in range(p)]
        for o, q in enumerate(self.parent):
            if q >= 0:
                self.children[q].append(o)
        self.nets = [edge_net(abs(q - o)) if q >= 0 else 0 for o, q in enumerate(self.parent)]
        dep = depths(self.parent)
        self.order = sorted(range(p), key=lambda o: -dep[o])


class TreePhase:
    """A double-binary-tree chunk phase on one dimension, per member (see the module doc).

    ``slices`` are the members of each tree (global member indices in coordinate order);
    ``link(distance)`` gives ``(Dimension, hops)`` of a message between offsets that far apart;
    chunk c takes the max tree when ``turn.choice(c)`` is 0.
    """

    __slots__ = ("queue", "e", "red", "slices", "shapes", "turn", "n")

    work = 2  # passes over the members per chunk (up, down)

    def __init__(self, queue: int, data: int, p: int, slices: list[list[int]], link: Link, e: int,
                 local_mem_bw: float, turn: TreeTurn):
        def edge_net(dist: int) -> int:
            dim, hops = link(dist)
            return net(dim, data, hops)

        self.queue = queue
        self.e = e
        self.red = red(data, local_mem_bw)
        self.slices = slices
        self.shapes = (_Shape(p, True, edge_net), _Shape(p, False, edge_net))
        self.turn = turn
        self.n = sum(len(s) for s in slices)

    def root_max(self, chunk: int) -> bool:
        """Whether chunk ``chunk`` (0-based) of this collective takes the max tree here."""
        return self.turn.choice(chunk) == 0

    def run(self, start: list[int], chunk: int) -> list[int]:
        """Finish time (ns) of every member for chunk ``chunk`` started at ``start``."""
        sh = self.shapes[0 if self.root_max(chunk) else 1]
        e, r = self.e, self.red
        parent, children, nets, order = sh.parent, sh.children, sh.nets, sh.order
        up = list(start)
        down = list(start)
        for members in self.slices:
            for o in order:  # leaves first
                j = members[o]
                kids = children[o]
                if not kids:
                    up[j] = start[j] + e
                    continue
                got = start[j]
                for c in kids:
                    got = max(got, up[members[c]] + nets[c])
                up[j] = got + e + r
            for o in reversed(order):  # root first
                j = members[o]
                q = parent[o]
                if q < 0:
                    down[j] = up[j]  # the root's reduction done, it sends down
                    continue
                got = max(down[members[q]] + nets[o], up[j])
                down[j] = got + e + (r if children[o] else 0)
        return down


def _tree_parts(data: int, lay: MemberLayout, root_max: bool, e: int, local_mem_bw: float) -> list[Part]:
    """Every member's part of a chunk phase on the max or min tree, message by message."""
    parent = tree(lay.size, root_max)
    children: list[list[int]] = [[] for _ in parent]
    for o, q in enumerate(parent):
        if q >= 0:
            children[q].append(o)
    r = red(data, local_mem_bw)
    out: list[Part] = [(0, [])] * len(lay.index)
    for members in lay.slices:
        for o, j in enumerate(members):
            up = tuple(members[q] for q in (parent[o],) if q >= 0)
            kids = tuple(members[c] for c in children[o])
            if not kids:
                steps: list[MessageStep] = [(up, up, data, e)]
            elif not up:
                steps = [((), kids, data, e + r), (kids, (), data, 0)]
            else:
                steps = [((), kids, data, e + r), (up, up, data, e + r), (kids, (), data, 0)]
            out[j] = numbered(0 if kids else e, steps)
    return out


class DoubleBinaryTree(Algorithm):
    """The double binary tree all-reduce (module docstring).  Wherever a plan visits its
    dimension it runs a full all-reduce, as ASTRA-sim does."""

    name = "doubleBinaryTree"
    alternates = True

    def phase_kind(self, kind: str) -> str:
        """Always an all-reduce."""
        return "AR"

    def cost(self, kind: str, impl: Implementation, p: int, link: Link, d: int, e: int,
             local_mem_bw: float) -> int:
        """The slowest member (a leaf) with equal starts: 2k messages of d bytes, to the peers
        P/2, P/4, ..., 1 away and back, 2k+1 endpoint delays, 2k-1 reductions of d."""
        k = p.bit_length() - 1
        if p != 1 << k:
            raise ConfigError(f"doubleBinaryTree needs a power-of-two NPU count, got {p}")
        msgs = [(d, *link(p >> i)) for i in range(1, k + 1)] * 2
        return chain_cost(e, 2 * k + 1, msgs, (2 * k - 1) * red(d, local_mem_bw)).fixed

    def member_phase(self, kind: str, data: int, lay: MemberLayout, queue: int, e: int, local_mem_bw: float,
                     turn: TreeTurn | None) -> TreePhase:
        """Both trees over the members of ``lay`` (:class:`TreePhase`)."""
        assert turn is not None  # the planner gives every alternating phase its turn
        return TreePhase(queue, data, lay.size, lay.slices, lambda o: lay.link(0, o), e, local_mem_bw, turn)

    def messages(self, kind: str, data: int, lay: MemberLayout, e: int, local_mem_bw: float) -> StepMessages:
        """A leaf sends up after one endpoint delay and finishes one endpoint delay after the
        message from its parent; an inner member posts its children's receives at the start,
        sends up ``e + r`` after both arrived, and ``e + r`` after its parent's message sends
        down to both children and finishes; the root sends down ``e + r`` after its child's
        message (``r`` = the reduction of the chunk).  One list of parts per tree (max, min)."""
        return StepMessages([_tree_parts(data, lay, root_max, e, local_mem_bw) for root_max in (True, False)])
