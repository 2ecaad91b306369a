"""One streaming pass over a rank: dependency checks and its communication skeleton.

The skeleton keeps only the nodes that can wait on another rank or on the communication slot
(collectives, sends, receives, memory ops), each with the skeleton nodes it waits for through any
chain of other nodes.  Every other node finishes on its own, so this is all a deadlock search
needs (:mod:`._deadlock`).

When every dependency names an earlier node (what every writer of this project and the PyTorch
converter produce), one pass suffices.  While node ids ascend in file order the state is 4 bytes
per node (a frontier number; 12 with non-consecutive ids, which are kept for a binary search),
plus the distinct frontiers; from the first id that does not ascend (the PyTorch converter's
dependency order), a position per id in a dict.  Otherwise (a dependency on a later node, a
repeated id, or a missing dependency in a rank whose ids do not ascend) the rank is read once
more into a :class:`~._graph.DepGraph` (numpy) for duplicate ids, missing dependencies and
cycles, with the findings in that read's order.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING

from chakra_core.io._schema import Node

if TYPE_CHECKING:
    from chakra_core.trace._graph import DepGraph

__all__ = ["RankScan", "scan_rank"]


@dataclass
class RankScan:
    """What one pass found in a rank.

    ``skel_pos`` are the file positions of the skeleton nodes; skeleton node ``k`` waits for the
    skeleton nodes ``skel_preds[skel_ptr[k]:skel_ptr[k+1]]`` (None when the graph is broken:
    duplicates, missing dependencies or a cycle).
    """

    count: int = 0
    duplicates: list[int] = field(default_factory=list)
    missing: list[tuple[int, int]] = field(default_factory=list)  # (node id, missing dep id)
    cycle: list[int] = field(default_factory=list)  # the ids of one cycle
    skel_pos: array = field(default_factory=lambda: array("q"))
    skel_ptr: array | None = None
    skel_preds: array | None = None


class _Frontiers:
    """Interned sets of skeleton nodes ("frontiers", number 0 is the empty set), and what each
    skeleton node waits for."""

    def __init__(self) -> None:
        self.sets: list[frozenset[int]] = [frozenset()]
        self.index: dict[frozenset[int], int] = {frozenset(): 0}
        self.unions: dict[tuple[int, int], int] = {}
        self.waits_for: dict[int, frozenset[int]] = {}

    def intern(self, s: frozenset[int]) -> int:
        """The number of set ``s``."""
        k = self.index.get(s)
        if k is None:
            k = self.index[s] = len(self.sets)
            self.sets.append(s)
        return k

    def union(self, a: int, b: int) -> int:
        """The number of the union of frontiers ``a`` and ``b``."""
        if a == b or b == 0:
            return a
        if a == 0:
            return b
        key = (a, b) if a < b else (b, a)
        k = self.unions.get(key)
        if k is None:
            k = self.unions[key] = self.intern(self._reduce(self.sets[a] | self.sets[b]))
        return k

    def _reduce(self, s: frozenset[int]) -> frozenset[int]:
        """``s`` without the nodes that another member of ``s`` waits for directly (a node
        starts only after those, so they add nothing and would make frontiers grow)."""
        waits = self.waits_for
        implied: set[int] = set()
        for y in s:
            w = waits[y]
            if w and not w.isdisjoint(s):
                implied.update(w)
        return s - implied if implied else s

    def add_skeleton(self, k: int, frontier: int) -> int:
        """Record that skeleton node ``k`` waits for ``frontier``; the frontier it passes on."""
        self.waits_for[k] = self.sets[frontier]
        return self.intern(frozenset((k,)))

    def csr(self, count: int) -> tuple[array, array]:
        """What each of the ``count`` skeleton nodes waits for, as (pointer, list)."""
        ptr, preds = array("q", [0]), array("q")
        for k in range(count):
            preds.extend(sorted(self.waits_for[k]))
            ptr.append(len(preds))
        return ptr, preds


def scan_rank(batches: Callable[[], Iterable[Iterable[Node]]], visit: Callable[[Node], bool]) -> RankScan:
    """Stream ``batches()`` once, calling ``visit(node)`` (True: a skeleton node) on each node.

    Reads the rank a second time only when a dependency does not name an earlier node, an id
    repeats, or a dependency is missing from a rank whose ids do not ascend.
    """
    out = RankScan()
    fr = _Frontiers()
    fid = array("i")  # frontier number per node position
    ids: array | None = None  # node ids, kept once they stop being consecutive
    pos_of: dict[int, int] | None = None  # position per id, once ids stop ascending
    first = prev = -1
    ordered = True
    pos = out.skel_pos
    union = fr.union
    count = 0
    for batch in batches():
        for n in batch:
            is_skel = visit(n)
            if is_skel:
                pos.append(count)
            count += 1
            if not ordered:
                continue
            nid = n.id
            cd = n.ctrl_deps
            deps = chain(n.data_deps, cd) if cd else n.data_deps
            if pos_of is None and nid <= prev:
                if out.missing:
                    ordered = False
                    continue
                pos_of = _positions(first, prev, ids)
            if pos_of is not None:
                if nid in pos_of:
                    ordered = False
                    continue
                f = _frontier_by_id(deps, pos_of, fid, union)
                if f < 0:
                    ordered = False
                    continue
                pos_of[nid] = count - 1
                fid.append(fr.add_skeleton(len(pos) - 1, f) if is_skel else f)
                continue
            if first < 0:
                first = nid
            elif ids is None and nid != prev + 1:
                ids = array("Q", range(first, prev + 1))
            if ids is not None:
                ids.append(nid)
            prev = nid
            f = 0
            for d in deps:
                if d >= nid:
                    ordered = False
                    break
                if ids is None:
                    p = d - first
                else:
                    p = bisect_left(ids, d)
                    if ids[p] != d:
                        p = -1
                if p < 0:
                    out.missing.append((nid, d))
                    continue
                g = fid[p]
                if g != f:
                    f = g if f == 0 else union(f, g)
            fid.append(fr.add_skeleton(len(pos) - 1, f) if is_skel else f)
    out.count = count
    if ordered:
        if not out.missing:
            out.skel_ptr, out.skel_preds = fr.csr(len(pos))
        return out
    del fid, ids, pos_of
    _scan_graph(_graph(batches()), out)
    return out


def _positions(first: int, last: int, ids: array | None) -> dict[int, int]:
    """The position of each id read so far: ``first..last`` consecutive, else ``ids``."""
    if first < 0:
        return {}
    read = range(first, last + 1) if ids is None else ids
    return dict(zip(read, range(len(read))))


def _frontier_by_id(deps: Iterable[int], pos_of: dict[int, int], fid: array,
                    union: Callable[[int, int], int]) -> int:
    """The frontier a node passes its dependencies' union to; -1 when one of them is not an
    earlier node (later, or missing: the second read tells)."""
    f = 0
    get = pos_of.get
    for d in deps:
        p = get(d)
        if p is None:
            return -1
        g = fid[p]
        if g != f:
            f = g if f == 0 else union(f, g)
    return f


def _graph(nodes: Iterable[Iterable[Node]]) -> DepGraph:
    """The rank's :class:`~chakra_core.trace._graph.DepGraph` (numpy: loaded for this read only)."""
    from chakra_core.trace._graph import DepGraph

    return DepGraph.build(nodes)


def _scan_graph(g: DepGraph, out: RankScan) -> None:
    """Structure checks and skeleton of a rank whose file order is not a dependency order."""
    import numpy as np

    from chakra_core.trace._graph import _arr

    out.duplicates, out.missing = g.duplicates, g.missing
    order, left = g.topo_order()
    if left:
        out.cycle = g.find_cycle(left)
    if out.duplicates or out.missing or left:
        return
    n = len(g)
    skel_of = np.full(n, -1, dtype=np.int64)
    skel_of[np.frombuffer(out.skel_pos, dtype=np.int64)] = np.arange(len(out.skel_pos))
    skel = _arr(skel_of)
    del skel_of
    deps, ptr = _arr(g.deps), _arr(g.dep_ptr)
    fr = _Frontiers()
    fid = array("i", bytes(4 * n))
    for i in _arr(order):
        f = 0
        for k in deps[ptr[i]:ptr[i + 1]]:
            f = fr.union(f, fid[k])
        s = skel[i]
        fid[i] = fr.add_skeleton(s, f) if s >= 0 else f
    out.skel_ptr, out.skel_preds = fr.csr(len(out.skel_pos))
