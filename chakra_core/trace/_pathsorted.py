"""The longest dependency path of a rank whose ids do not ascend (the PyTorch converter's order:
every dependency on an earlier node, ids out of order), in two passes over its runs of columns
and flat memory.

The first pass collects the ids (:meth:`SortedPath.collect`, 8 bytes a node in a table grown in
place); they are then sorted as offsets from the lowest, narrowed in place (4 bytes a node while
they span less than 2^32, else 8), and
the second pass (:meth:`SortedPath.relax`) keeps each node's finish (8 bytes) and path length (4)
at the place of its id among them, found by binary search.  The rule and the answer are those of
:meth:`chakra_core.trace._graph.DepGraph.longest_path` on a rank in dependency order: a node
finishes at the largest finish among its dependencies (the first such one is followed) plus its
duration; the path ends at the first node, in file order, with the largest finish.  A dependency
on no earlier node (missing, later, or a repeated id), or a path past 2^63-1 us, stops the pass:
the caller then builds the graph, which takes the first and words the error of the second.
"""

from __future__ import annotations

import numpy as np

from chakra_core.base._inplace import GrowingTable
from chakra_core.base._kernels import compiled, kernel
from chakra_core.trace._pathkernel import OVERFLOW, RESOLVED, UNRESOLVED, id_position, settle

__all__ = ["SortedPath", "relax_sorted"]


@kernel(cache=True, nogil=True)
def relax_sorted(ids, dep_ptr, dep_ids, durations, low, keys, finish, count, best):  # pragma: no cover - compiled
    """Relax a run's nodes (node ``j``: id ``ids[j]``, dependencies ``dep_ids[dep_ptr[j]:
    dep_ptr[j+1]]``, ``durations[j]`` us) into ``finish`` and ``count`` at the places of their
    ids (as offsets from ``low``) in ``keys``; ``best`` = (finish, path length) of the first
    node with the largest finish so far, updated.  Returns RESOLVED, UNRESOLVED (a dependency
    on no node settled before, or an id settled twice) or OVERFLOW (a path past 2^63-1 us)."""
    at = np.empty(len(dep_ids), np.int64)
    for d in range(len(dep_ids)):
        at[d] = id_position(dep_ids[d], low, keys, len(keys))
        if at[d] < 0:
            return UNRESOLVED
    for j in range(len(durations)):
        own = id_position(ids[j], low, keys, len(keys))
        if own < 0 or count[own] != 0:
            return UNRESOLVED
        for d in range(dep_ptr[j], dep_ptr[j + 1]):
            if count[at[d]] == 0:
                return UNRESOLVED
        if not settle(at, dep_ptr[j], dep_ptr[j + 1], durations[j], own, finish, count):
            return OVERFLOW
        if finish[own] > best[0] or best[1] == 0:
            best[0], best[1] = finish[own], count[own]
    return RESOLVED


class SortedPath:
    """The longest path of a rank in dependency order whose ids do not ascend: :meth:`collect`
    every run's ids, then :meth:`relax` every run again, in the same order; ``ok`` turns False
    where the rank is not in dependency order (or repeats an id)."""

    def __init__(self, ids: np.ndarray) -> None:
        self._ids = GrowingTable(max(len(ids), 1 << 16), np.uint64)
        self.size = 0
        self.keys = np.zeros(0, np.uint32)
        self.low = np.uint64(0)
        self.finish = np.zeros(0, np.int64)
        self.count = np.zeros(0, np.uint32)
        self.best = np.zeros(2, np.int64)
        self.ok = True
        self.collect(ids)

    def collect(self, ids: np.ndarray) -> None:
        """The first pass: a run's ids (8 bytes a node, in a table grown in place)."""
        need = self.size + len(ids)
        if need > len(self._ids.array):
            self._ids.grow(max(need, len(self._ids.array) * 5 // 4))
        self._ids.array[self.size:need] = ids
        self.size = need

    def seal(self) -> None:
        """The end of the first pass: the ids sorted as offsets from the lowest (narrowed in
        place), and a place for each node's finish and path length."""
        if not self.size:
            return
        ids = self._ids.array[:self.size]
        self.low = ids.min()
        span = ids.max() - self.low
        del ids
        self._ids.offsets(np.uint32 if span < np.uint64(1 << 32) else np.uint64, self.size, int(self.low))
        self.keys = self._ids.array
        self.keys.sort()
        self.finish = np.zeros(self.size, np.int64)
        self.count = np.zeros(self.size, np.uint32)

    def relax(self, ids: np.ndarray, dep_ptr: np.ndarray, dep_ids: np.ndarray, durations: np.ndarray) -> None:
        """The second pass: a run's nodes.  ``ok`` turns False where the rank is not in dependency
        order or a path sums past 2^63-1 us (the graph then gives the answer, or the error at the
        node the graph's order reaches first)."""
        if self.ok and len(ids):
            self.ok = compiled(relax_sorted)(ids, dep_ptr, dep_ids, durations, self.low, self.keys, self.finish,
                                             self.count, self.best) == RESOLVED

    def result(self) -> tuple[int, int]:
        """``(length in us, nodes on the path)`` of the longest path (the first one found)."""
        return int(self.best[0]), int(self.best[1])
