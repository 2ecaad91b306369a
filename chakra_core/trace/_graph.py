"""The dependency graph of one rank in integer-indexed numpy arrays.

Nodes are indexed by position (0..n-1, file order unless the caller gives another order);
dependencies are a CSR structure of positions, with no per-node Python objects and no id
dictionary: dependency ids are resolved by a sorted search, or by arithmetic when ids are
consecutive.  Validation (missing deps, cycles), statistics (each rank's longest path) and the first-party
plugins (the simulator's ready lists, the ASTRA-sim exporter's and the PyTorch converter's
topological orders) all build their graph here.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Iterable

import numpy as np

from chakra_core.io._schema import Node

__all__ = ["DepGraph", "PathStream", "PathOverflow"]

#: the largest finish time (us) of the longest path: durations are summed in int64.
_INT64_MAX = (1 << 63) - 1


class PathOverflow(ArithmeticError):
    """The durations on a path sum past 2^63-1 us; ``position`` is the node where they do."""

    def __init__(self, position: int):
        super().__init__(f"durations sum past 2^63-1 us at position {position}")
        self.position = position


class DepGraph:
    """Ids and dependencies of one rank's nodes, indexed by position.

    ``ids`` (uint64) holds the node ids; node ``i`` depends on the positions
    ``deps[dep_ptr[i]:dep_ptr[i+1]]`` (data deps, then ctrl deps, as in the file; -1 where the id
    is not in the rank).  ``duplicates`` lists every later occurrence of a repeated id (in
    position order), ``missing`` the ``(node id, missing dep id)`` pairs in edge order.

    The arrays give node ``i`` the id ``ids[i]`` and the dependency ids
    ``dep_ids[dep_ptr[i]:dep_ptr[i+1]]``; with ``order`` (a permutation), position ``k`` of the
    graph holds node ``order[k]`` of the arrays (``order`` is kept as an attribute, None
    without one).
    """

    def __init__(self, ids: np.ndarray, dep_ptr: np.ndarray, dep_ids: np.ndarray,
                 order: np.ndarray | None = None):
        ids = np.asarray(ids, dtype=np.uint64)
        dep_ptr = np.asarray(dep_ptr, dtype=np.int64)
        dep_ids = np.asarray(dep_ids, dtype=np.uint64)
        self.order = order
        if order is not None:
            ids = ids[order]
            dep_ptr, dep_ids = _take_rows(dep_ptr, dep_ids, order)
        self.ids = np.ascontiguousarray(ids)
        self.dep_ptr = np.ascontiguousarray(dep_ptr)
        self.duplicates: list[int] = []
        self.missing: list[tuple[int, int]] = []
        self.deps = self._resolve(np.ascontiguousarray(dep_ids))

    @classmethod
    def build(cls, nodes: Iterable[Iterable[Node]], visit: Callable[[Node], None] | None = None) -> DepGraph:
        """Build from node batches (``RankTrace.batches()``), calling ``visit(node)`` on each."""
        ids, dep_ids = array("Q"), array("Q")
        ptr = array("q", [0])
        for batch in nodes:
            for n in batch:
                ids.append(n.id)
                dep_ids.extend(n.data_deps)
                dep_ids.extend(n.ctrl_deps)
                ptr.append(len(dep_ids))
                if visit is not None:
                    visit(n)
        return cls(_np(ids, np.uint64), _np(ptr, np.int64), _np(dep_ids, np.uint64))

    def _resolve(self, dep_ids: np.ndarray) -> np.ndarray:
        ids = self.ids
        if len(ids) == 0:
            return np.zeros(len(dep_ids), dtype=np.int64)
        pos, bad = _positions(ids, dep_ids, self._note_repeats)
        pos[bad] = -1
        if bad.any():
            owner = np.searchsorted(self.dep_ptr, np.flatnonzero(bad), side="right") - 1
            self.missing = [(int(ids[o]), int(d)) for o, d in zip(owner, dep_ids[bad])]
        return pos

    def _note_repeats(self, sorted_ids: np.ndarray) -> None:
        """Keep the ids given more than once (``sorted_ids``: the ids ascending)."""
        if (sorted_ids[1:] == sorted_ids[:-1]).any():
            self.duplicates = _later_repeats(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def drop_self_deps(self) -> int:
        """Mark dependencies of a node on itself as missing (-1); return how many there were.

        For consumers that read a self-dependency as noise rather than as a cycle.
        """
        owner = np.repeat(np.arange(len(self.ids), dtype=np.int64), np.diff(self.dep_ptr))
        self_dep = self.deps == owner
        self.deps[self_dep] = -1
        return int(self_dep.sum())

    def in_degree(self) -> np.ndarray:
        """Per node, how many existing dependencies it has (a repeated one counts each time)."""
        owner = np.repeat(np.arange(len(self.ids), dtype=np.int64), np.diff(self.dep_ptr))
        return np.bincount(owner[self.deps >= 0], minlength=len(self.ids))

    def children(self) -> tuple[np.ndarray, np.ndarray]:
        """The dependents in CSR form ``(child_ptr, child_idx)``: the nodes that depend on node
        ``i`` are ``child_idx[child_ptr[i]:child_ptr[i+1]]``, in ascending position (once per
        dependency)."""
        n = len(self.ids)
        dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.dep_ptr))
        ok = self.deps >= 0
        src = self.deps[ok]
        dst = dst[ok]
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
        if (src[1:] >= src[:-1]).all():  # dependencies in the order of what they name (a chain)
            return ptr, dst
        return ptr, dst[np.argsort(src, kind="stable")]

    def rows(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The dependencies of ``positions``, in that order, in CSR form ``(ptr, deps)``."""
        return _take_rows(self.dep_ptr, self.deps, positions)

    def in_file_order(self) -> bool:
        """True when every node depends only on earlier positions (file order is topological)."""
        owner = np.repeat(np.arange(len(self.ids), dtype=np.int64), np.diff(self.dep_ptr))
        return bool((self.deps < owner).all())

    def topo_order(self, priority: np.ndarray | None = None) -> tuple[np.ndarray, list[int]]:
        """Kahn's order of positions, and the positions left over (on or behind cycles,
        ascending).

        Among the ready nodes the one with the smallest ``priority`` (any sortable per-node
        array; ties by position) comes first; by default the smallest position, so that a file
        order that is already topological is kept as it is.
        """
        n = len(self.ids)
        if priority is None and self.in_file_order():
            return np.arange(n, dtype=np.int64), []
        by_rank = None if priority is None else np.argsort(priority, kind="stable")
        rank = None if by_rank is None else _arr(_inverse(by_rank))
        indeg = _arr(self.in_degree())
        cptr, kids = map(_arr, self.children())
        ready = np.flatnonzero(np.asarray(indeg) == 0).tolist()
        if rank is not None:
            ready = [rank[i] for i in ready]
        heapq.heapify(ready)
        back = None if by_rank is None else _arr(by_rank)
        order = array("q")
        pop, push = heapq.heappop, heapq.heappush
        while ready:
            i = pop(ready)
            if back is not None:
                i = back[i]
            order.append(i)
            for c in kids[cptr[i]:cptr[i + 1]]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    push(ready, c if rank is None else rank[c])
        left = np.flatnonzero(np.asarray(indeg) > 0).tolist() if len(order) < n else []
        return _np(order, np.int64), left

    def deps_of(self, i: int) -> list[int]:
        """Positions of the existing nodes that node ``i`` depends on."""
        return [k for k in self.deps[self.dep_ptr[i]:self.dep_ptr[i + 1]].tolist() if k >= 0]

    def find_cycle(self, left: Iterable[int]) -> list[int]:
        """Ids of one dependency cycle among the leftover positions of :meth:`topo_order`."""
        on = set(int(i) for i in left)
        seen: dict[int, int] = {}
        path: list[int] = []
        i = min(on)
        while i not in seen:
            seen[i] = len(path)
            path.append(i)
            i = next(k for k in self.deps_of(i) if k in on)
        return [int(self.ids[k]) for k in reversed(path[seen[i]:])]

    def longest_path(self, durations: np.ndarray, order: np.ndarray | None = None) -> tuple[int, int, int]:
        """Longest path by ``durations`` (us, per position) through the DAG: ``(length in us,
        nodes on it, position of its last node)``; ``(0, 0, -1)`` for an empty graph.

        Nodes on or behind cycles are left out (validation reports cycles); ``order`` is
        :meth:`topo_order`'s order when the caller has it.  Raises :class:`PathOverflow` when a
        path sums past 2^63-1 us.
        """
        if order is None:
            order, _ = self.topo_order()
        if not len(order):
            return 0, 0, -1
        if len(order) == len(self.ids) and self.in_file_order():
            finish, count = _longest(self.dep_ptr, self.deps, durations)
            end = _first_max(finish, order)
            return finish[end], count[end], end
        # renumber into topological order, so that one forward pass over positions relaxes every edge
        at = np.full(len(self.ids), -1, dtype=np.int64)
        at[order] = np.arange(len(order), dtype=np.int64)
        ptr, deps = self.rows(order)
        deps = np.where(deps >= 0, at[np.maximum(deps, 0)], -1)
        try:
            finish, count = _longest(ptr, deps, durations[order])
        except PathOverflow as e:
            raise PathOverflow(int(order[e.position])) from None
        k = _first_max(finish, order)
        return finish[k], count[k], int(order[k])


def longest_path(finish: array, count: array, base: int, ptr: array, deps: array, durations: array) -> None:
    """Relax nodes ``base .. base+len(durations)-1`` in that (topological) order.

    Node ``base+j`` depends on positions ``deps[ptr[j]:ptr[j+1]]`` (-1 = ignore), all relaxed
    before it.  Sets ``finish[base+j]`` (us: the longest dependency's finish plus the node's
    duration) and ``count[base+j]`` (nodes on that path; the first dependency with the largest
    finish is the one followed).  Raises :class:`PathOverflow` past 2^63-1 us.
    """
    j = 0
    try:
        for j in range(len(durations)):
            best, arg = 0, -1
            for k in deps[ptr[j]:ptr[j + 1]]:
                if k >= 0 and (arg < 0 or finish[k] > best):
                    best, arg = finish[k], k
            finish[base + j] = best + durations[j]
            count[base + j] = count[arg] + 1 if arg >= 0 else 1
    except OverflowError:
        raise PathOverflow(base + j) from None


class PathStream:
    """The longest path of nodes that arrive in a topological order, in flat memory.

    Feed batches with :meth:`add`; it holds 20 bytes per node (id, finish, path length).  As
    long as ids strictly increase and every dependency names an earlier node, ``ok`` stays True
    and :meth:`result` is the answer of :meth:`DepGraph.longest_path`; otherwise ``ok`` turns
    False and the caller builds the graph instead (a dependency that is missing or points
    forward cannot be told apart before the end).
    """

    def __init__(self) -> None:
        self.ok = True
        self.ids = array("Q")
        self.finish = array("q")
        self.count = array("i")

    def add(self, ids: array, ptr: array, dep_ids: array, durations: array) -> None:
        """Node ``j`` of the batch has id ``ids[j]``, ``durations[j]`` us, and depends on the ids
        ``dep_ids[ptr[j]:ptr[j+1]]``.  Raises :class:`PathOverflow` past 2^63-1 us."""
        if not self.ok or not len(ids):
            return
        new = _np(ids, np.uint64)
        base = len(self.ids)
        if (base and ids[0] <= self.ids[-1]) or (new[1:] <= new[:-1]).any():
            self.ok = False
            return
        self.ids.extend(ids)
        known = np.frombuffer(self.ids, dtype=np.uint64)  # released below: ``ids`` grows later
        deps = _np(dep_ids, np.uint64)
        at = np.minimum(np.searchsorted(known, deps), len(known) - 1)
        own = np.repeat(np.arange(base, len(known), dtype=np.int64), np.diff(_np(ptr, np.int64)))
        resolved = bool(((known[at] == deps) & (at < own)).all())
        del known
        if not resolved:
            self.ok = False
            return
        self.finish.frombytes(bytes(8 * len(ids)))
        self.count.frombytes(bytes(4 * len(ids)))
        longest_path(self.finish, self.count, base, ptr, _arr(at), durations)

    def result(self) -> tuple[int, int, int]:
        """``(length in us, nodes on the path, position of its last node)``, as
        :meth:`DepGraph.longest_path`."""
        if not self.ids:
            return 0, 0, -1
        end = int(np.argmax(np.frombuffer(self.finish, dtype=np.int64)))
        return self.finish[end], self.count[end], end


def _longest(ptr: np.ndarray, deps: np.ndarray, durations: np.ndarray) -> tuple[array, array]:
    """:func:`longest_path` over a whole graph whose positions are a topological order."""
    n = len(durations)
    finish, count = array("q", bytes(8 * n)), array("i", bytes(4 * n))
    longest_path(finish, count, 0, _arr(ptr), _arr(deps),
                 array("Q", np.ascontiguousarray(durations, dtype=np.uint64).tobytes()))
    return finish, count


def _first_max(finish: array, order: np.ndarray) -> int:
    """Index into ``order`` of the node, first in position, with the largest finish."""
    f = np.frombuffer(finish, dtype=np.int64)
    best = np.flatnonzero(f == f.max())
    return int(best[np.argmin(order[best])])


def _take_rows(ptr: np.ndarray, values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR rows ``rows`` of ``(ptr, values)``, in that order, as a new ``(ptr, values)``."""
    sizes = np.diff(ptr)[rows]
    out = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    take = np.repeat(ptr[rows] - out[:-1], sizes) + np.arange(out[-1], dtype=np.int64)
    return out, values[take]


def positions_of(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The position in ``ids`` (uint64) of each id of ``wanted`` (the first where an id repeats),
    -1 where it is not there."""
    if len(ids) == 0:
        return np.full(len(wanted), -1, dtype=np.int64)
    pos, bad = _positions(ids, wanted.astype(np.uint64, copy=False), None)
    pos[bad] = -1
    return pos


def _positions(ids: np.ndarray, wanted: np.ndarray, on_sorted: Callable[[np.ndarray], None] | None
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(position, absent)`` of each id of ``wanted`` in the non-empty ``ids`` (an absent one's
    position is any); ``on_sorted`` sees the ids ascending when they had to be sorted."""
    n = len(ids)
    first = ids[0]
    if np.array_equal(ids - first, np.arange(n, dtype=np.uint64)):  # consecutive ids (uint64 math)
        off = wanted - first  # wraps around for ids below ``first``: caught by ``< first``
        bad = (wanted < first) | (off >= np.uint64(n))
        return np.where(bad, 0, off).astype(np.int64), bad
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    if on_sorted is not None:
        on_sorted(sorted_ids)
    at = np.minimum(np.searchsorted(sorted_ids, wanted), n - 1)
    return order[at].astype(np.int64), sorted_ids[at] != wanted


def _later_repeats(ids: np.ndarray) -> list[int]:
    """Every later occurrence (in position order) of a repeated id."""
    seen: set[int] = set()
    out = []
    for i in map(int, ids):
        if i in seen:
            out.append(i)
        seen.add(i)
    return out


def _inverse(perm: np.ndarray) -> np.ndarray:
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm), dtype=perm.dtype)
    return inv


def _np(a: array, dtype: type) -> np.ndarray:
    """A numpy view of an ``array`` (a zero-length one when it is empty)."""
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype=dtype)


def _arr(a: np.ndarray) -> array:
    """A compact ``array('q')`` copy of an integer numpy array (fast scalar indexing, 8 bytes each)."""
    out = array("q")
    out.frombytes(np.ascontiguousarray(a, dtype=np.int64).data.cast("B"))
    return out
