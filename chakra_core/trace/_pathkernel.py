"""The longest dependency path of a rank streamed a run of nodes at a time, as one compiled loop
per run: kernels (:mod:`chakra_core.base._kernels`) that :class:`PathRuns` runs compiled (numba)
or as Python, as its caller chooses, with the same answer.

The rule is :func:`chakra_core.trace._graph.longest_path`'s: a node finishes at the largest
finish among its dependencies (the first such one is followed) plus its duration, and counts
the nodes on that path.  Held per node: its finish (8 bytes) and count (4 bytes); the ids only
when they are not consecutive, as offsets from the first id (4 bytes while they fit in 32 bits,
else 8: :class:`PathRuns`).
"""

from __future__ import annotations

import numpy as np

from chakra_core.base._kernels import chosen, kernel

__all__ = ["PathRuns", "relax_run", "settle", "id_position", "RESOLVED", "UNRESOLVED", "OVERFLOW"]

#: :func:`relax_run`'s status codes: every node relaxed; a dependency names no earlier node
#: (the rank is not streamable); a path sums past 2^63-1 us
RESOLVED, UNRESOLVED, OVERFLOW = 0, 1, 2
_MAX = np.uint64((1 << 63) - 1)


@kernel(cache=True, nogil=True)
def id_position(dep, first, known, own):  # pragma: no cover - compiled
    """The position of id ``dep`` among the nodes before position ``own``: ids ``first``,
    ``first + 1``, ... when ``known`` is empty, else ``first`` plus ``known`` (ascending);
    -1 when none."""
    if dep < first:
        return -1
    offset = dep - first
    if len(known) == 0:
        return np.int64(offset) if offset < np.uint64(own) else -1
    lo, hi = 0, own
    while lo < hi:
        mid = (lo + hi) // 2
        if np.uint64(known[mid]) < offset:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < own and np.uint64(known[lo]) == offset else -1


@kernel(cache=True, nogil=True)
def relax_run(dep_ptr, dep_ids, durations, base, first, known, finish, count):  # pragma: no cover - compiled
    """Relax the run's nodes (positions ``base``, ``base + 1``, ...; node ``j`` depends on the
    ids ``dep_ids[dep_ptr[j]:dep_ptr[j+1]]`` and lasts ``durations[j]`` us; the ids of the nodes
    so far as :func:`id_position` reads them) into ``finish`` and ``count``; returns ``(status,
    position)``: UNRESOLVED (nothing relaxed) when a dependency names no earlier node, OVERFLOW
    at the first node whose finish passes 2^63-1 us."""
    n = len(durations)
    at = np.empty(len(dep_ids), np.int64)
    for j in range(n):
        for d in range(dep_ptr[j], dep_ptr[j + 1]):
            at[d] = id_position(dep_ids[d], first, known, base + j)
            if at[d] < 0:
                return UNRESOLVED, base + j
    for j in range(n):
        if not settle(at, dep_ptr[j], dep_ptr[j + 1], durations[j], base + j, finish, count):
            return OVERFLOW, base + j
    return RESOLVED, 0


@kernel(cache=True, nogil=True)
def settle(at, start, end, duration, own, finish, count):  # pragma: no cover - compiled
    """The finish and path length of the node at place ``own``, whose dependencies are at the
    places ``at[start:end]`` (all settled): the largest finish among them (the first such one is
    followed) plus ``duration`` us; False, with nothing written, when that passes 2^63-1 us."""
    best, arg = np.int64(0), -1
    for d in range(start, end):
        k = at[d]
        if arg < 0 or finish[k] > best:
            best, arg = finish[k], k
    if duration > _MAX - np.uint64(best):
        return False
    finish[own] = best + np.int64(duration)
    count[own] = count[arg] + 1 if arg >= 0 else 1
    return True


class PathRuns:
    """The longest path of a rank whose nodes arrive in runs in a topological order with
    increasing ids (:meth:`add`); ``ok`` turns False (and stays) otherwise, as
    :class:`chakra_core.trace._graph.PathStream`, whose answer this gives.  Memory: 12 bytes a
    node; 16 when the ids are not consecutive (20 when they span 2^32 or more).
    ``compile_it``: :func:`relax_run` runs compiled (numba), else as Python."""

    def __init__(self, compile_it: bool) -> None:
        self.relax = chosen(relax_run, compile_it)
        self.ok = True
        self.unordered = False  # ``ok`` turned False because the ids did not ascend
        self.size = 0
        self.first = np.uint64(0)
        self.last = np.uint64(0)
        self.known = np.zeros(0, np.uint64)
        self.finish = np.zeros(0, np.int64)
        self.count = np.zeros(0, np.int32)

    def add(self, ids: np.ndarray, dep_ptr: np.ndarray, dep_ids: np.ndarray, durations: np.ndarray) -> int:
        """Add a run (as :func:`relax_run` reads it); the position of a node whose path sums
        past 2^63-1 us, else -1."""
        if not self.ok or not len(ids):
            return -1
        if (self.size and ids[0] <= self.last) or bool((ids[1:] <= ids[:-1]).any()):
            self.ok, self.unordered = False, True
            return -1
        if not self.size:
            self.first = ids[0]
        base, self.size = self.size, self.size + len(ids)
        consecutive = ids[-1] - self.first == np.uint64(self.size - 1)
        if len(self.known) or not consecutive:
            wide = ids[-1] - self.first >= np.uint64(1 << 32)
            if not len(self.known):
                self.known = np.arange(base, dtype=np.uint64 if wide else np.uint32)
            elif wide and self.known.dtype == np.uint32:
                self.known = self.known.astype(np.uint64)
            self.known.resize(self.size, refcheck=False)
            self.known[base:] = ids - self.first
        self.last = ids[-1]
        self.finish.resize(self.size, refcheck=False)
        self.count.resize(self.size, refcheck=False)
        status, at = self.relax(dep_ptr, dep_ids, durations, base, self.first, self.known, self.finish, self.count)
        if status == UNRESOLVED:
            self.ok = False
        return at if status == OVERFLOW else -1

    def result(self) -> tuple[int, int]:
        """``(length in us, nodes on the path)`` of the longest path (the first one found)."""
        if not self.size:
            return 0, 0
        end = int(np.argmax(self.finish))
        return int(self.finish[end]), int(self.count[end])

    def id_at(self, position: int) -> int:
        """The id of the node at ``position``."""
        return int(self.first) + (int(self.known[position]) if len(self.known) else position)

    def ids(self) -> np.ndarray:
        """The ids of the nodes so far (uint64), in file order."""
        if len(self.known):
            return self.known.astype(np.uint64) + self.first
        return np.arange(self.size, dtype=np.uint64) + self.first
