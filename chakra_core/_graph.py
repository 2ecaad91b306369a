"""A compact dependency graph of one rank, built in one streaming pass.

Nodes are indexed by position; ids, types, durations and dependencies live in flat numpy arrays
(no per-node Python objects and no id dictionary: dependency ids are resolved by a sorted
search, or by arithmetic when ids are consecutive), so a million-node rank takes tens of
megabytes.  Used by validation (missing deps, cycles) and statistics (critical path).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable

import numpy as np

from ._schema import Node

__all__ = ["RankGraph"]


class RankGraph:
    """Ids, types, durations (us) and dependency lists of one rank's nodes, in file order.

    ``deps`` holds, for node ``i``, the positions ``deps[dep_ptr[i]:dep_ptr[i+1]]`` of the nodes
    it depends on (data deps, then ctrl deps; -1 where the id is missing from the file).
    """

    def __init__(self, ids, types, durations, dep_ptr, dep_ids):
        # zero-copy views of the arrays filled while streaming
        self.ids = np.frombuffer(ids, dtype=np.uint64) if len(ids) else np.zeros(0, np.uint64)
        self.types = np.frombuffer(types, dtype=np.uint8) if len(types) else np.zeros(0, np.uint8)
        self.durations = np.frombuffer(durations, dtype=np.uint64) if len(durations) else np.zeros(0, np.uint64)
        self.dep_ptr = np.frombuffer(dep_ptr, dtype=np.int64)
        dep_ids = np.frombuffer(dep_ids, dtype=np.uint64) if len(dep_ids) else np.zeros(0, np.uint64)
        self.duplicates: list[int] = []
        self.missing: list[tuple[int, int]] = []  # (node id, missing dep id)
        self.deps = self._resolve(dep_ids)

    @classmethod
    def build(cls, nodes: Iterable[Iterable[Node]], visit: Callable[[Node], None] | None = None) -> RankGraph:
        """Build from node batches (``RankTrace.batches()``), calling ``visit(node)`` on each."""
        ids, durs, dep_ids = array("Q"), array("Q"), array("Q")
        ptr = array("q", [0])
        types = bytearray()
        for batch in nodes:
            for n in batch:
                ids.append(n.id)
                types.append(n.type & 0xFF)
                durs.append(n.duration_micros)
                dep_ids.extend(n.data_deps)
                dep_ids.extend(n.ctrl_deps)
                ptr.append(len(dep_ids))
                if visit is not None:
                    visit(n)
        return cls(ids, types, durs, ptr, dep_ids)

    def _resolve(self, dep_ids: np.ndarray) -> np.ndarray:
        ids = self.ids
        n = len(ids)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        first = ids[0]
        if np.array_equal(ids - first, np.arange(n, dtype=np.uint64)):  # consecutive ids (uint64 math)
            off = dep_ids - first  # wraps around for dep ids below ``first``: caught by ``< first``
            bad = (dep_ids < first) | (off >= np.uint64(n))
            pos = np.where(bad, 0, off).astype(np.int64)
        else:
            order = np.argsort(ids, kind="stable")
            sorted_ids = ids[order]
            dup = sorted_ids[1:] == sorted_ids[:-1]
            if dup.any():
                # every later occurrence (in file order) of a repeated id
                seen: set[int] = set()
                for i in map(int, ids):
                    if i in seen:
                        self.duplicates.append(i)
                    seen.add(i)
            at = np.searchsorted(sorted_ids, dep_ids)
            at_c = np.minimum(at, n - 1)
            bad = sorted_ids[at_c] != dep_ids
            pos = order[at_c].astype(np.int64)
        pos = np.where(bad, -1, pos)
        if bad.any():
            owner = np.searchsorted(self.dep_ptr, np.nonzero(bad)[0], side="right") - 1
            self.missing = [(int(ids[o]), int(d)) for o, d in zip(owner, dep_ids[bad])]
        return pos

    def __len__(self) -> int:
        return len(self.ids)

    def _children(self) -> tuple[array, array, array]:
        """(in-degree per node, CSR pointer and list of dependents) over existing deps."""
        n = len(self.ids)
        dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.dep_ptr))
        ok = self.deps >= 0
        src = self.deps[ok]  # edge: src must finish before dst
        dst = dst[ok]
        del ok
        indeg = _arr(np.bincount(dst, minlength=n))
        cptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=cptr[1:])
        children = _arr(dst[np.argsort(src, kind="stable")])
        return indeg, _arr(cptr), children

    def topo_order(self) -> tuple[array, list[int]]:
        """Kahn's order of node positions, and the positions left over (on or behind cycles)."""
        n = len(self.ids)
        indeg, cptr, children = self._children()
        order = array("q", np.flatnonzero(np.asarray(indeg) == 0).tobytes())
        head = 0
        while head < len(order):
            k = order[head]
            head += 1
            for c in children[cptr[k]:cptr[k + 1]]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    order.append(c)
        left = np.flatnonzero(np.asarray(indeg) > 0).tolist() if len(order) < n else []
        return order, left

    def deps_of(self, i: int) -> list[int]:
        """Positions of the existing nodes that node ``i`` depends on."""
        return [k for k in self.deps[self.dep_ptr[i]:self.dep_ptr[i + 1]].tolist() if k >= 0]

    def find_cycle(self, left: list[int]) -> list[int]:
        """Ids of one dependency cycle among the leftover positions of :meth:`topo_order`."""
        on = set(left)
        seen: dict[int, int] = {}
        path: list[int] = []
        i = left[0]
        while i not in seen:
            seen[i] = len(path)
            path.append(i)
            i = next(k for k in self.deps_of(i) if k in on)
        return [int(self.ids[k]) for k in reversed(path[seen[i]:])]

    def critical_path(self) -> tuple[int, list[int]]:
        """Longest path by ``duration_micros`` through the DAG: (length in us, node ids on it).

        Nodes on cycles are left out (validation reports cycles).
        """
        order, _ = self.topo_order()
        if not order:
            return 0, []
        n = len(self.ids)
        finish = array("q", bytes(8 * n))
        via = array("q", bytes(8 * n))
        durs = _arr(self.durations.astype(np.int64))
        deps, ptr = _arr(self.deps), _arr(self.dep_ptr)
        for i in order:
            best, arg = -1, -1
            for k in deps[ptr[i]:ptr[i + 1]]:
                if k >= 0 and finish[k] > best:
                    best, arg = finish[k], k
            finish[i] = max(best, 0) + durs[i]
            via[i] = arg + 1  # 0 = none
        end = max(order, key=finish.__getitem__)
        path = []
        i = end
        while i >= 0:
            path.append(int(self.ids[i]))
            i = via[i] - 1
        return finish[end], path[::-1]


def _arr(a: np.ndarray) -> array:
    """A compact ``array('q')`` copy of an integer numpy array (fast scalar indexing, 8 bytes each)."""
    out = array("q")
    out.frombytes(np.ascontiguousarray(a, dtype=np.int64).data.cast("B"))
    return out
