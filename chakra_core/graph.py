"""A compact dependency graph of one rank, built in one streaming pass.

Nodes are indexed by position; ids, types, durations and dependencies live in flat arrays
(no per-node Python objects beyond the id index), so a million-node rank fits in a few tens of
megabytes.  Used by validation (missing deps, cycles) and statistics (critical path).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable

from .schema import Node

__all__ = ["RankGraph"]


class RankGraph:
    """Ids, types, durations (us) and dependency lists of one rank's nodes, in file order."""

    def __init__(self) -> None:
        self.ids = array("Q")
        self.types = bytearray()
        self.durations = array("Q")
        self.names: list[str] | None = None
        self.index: dict[int, int] = {}
        self.duplicates: list[int] = []
        self.missing: list[tuple[int, int]] = []  # (node id, missing dep id)
        self._dep_ptr = array("q", [0])
        self._dep_ids = array("Q")
        self._deps = array("q")

    @classmethod
    def build(cls, nodes: Iterable[Iterable[Node]], visit: Callable[[Node], None] | None = None,
              keep_names: bool = False) -> RankGraph:
        """Build from node batches (``RankTrace.batches()``), calling ``visit(node)`` on each."""
        g = cls()
        ids, types, durs, index = g.ids, g.types, g.durations, g.index
        ptr, dep_ids = g._dep_ptr, g._dep_ids
        names: list[str] = []
        for batch in nodes:
            for n in batch:
                nid = n.id
                if nid in index:
                    g.duplicates.append(nid)
                else:
                    index[nid] = len(ids)
                ids.append(nid)
                types.append(n.type)
                durs.append(n.duration_micros)
                dep_ids.extend(n.data_deps)
                dep_ids.extend(n.ctrl_deps)
                ptr.append(len(dep_ids))
                if keep_names:
                    names.append(n.name)
                if visit is not None:
                    visit(n)
        if keep_names:
            g.names = names
        g._resolve()
        return g

    def _resolve(self) -> None:
        index, deps, missing = self.index, self._deps, self.missing
        ids, ptr = self.ids, self._dep_ptr
        for i in range(len(ids)):
            for j in range(ptr[i], ptr[i + 1]):
                d = self._dep_ids[j]
                k = index.get(d)
                if k is None:
                    missing.append((ids[i], d))
                    k = -1
                deps.append(k)
        self._dep_ids = array("Q")

    def __len__(self) -> int:
        return len(self.ids)

    def deps_of(self, i: int) -> list[int]:
        """Indices of the existing nodes that node ``i`` depends on (duplicates kept)."""
        return [k for k in self._deps[self._dep_ptr[i] : self._dep_ptr[i + 1]] if k >= 0]

    def topo_order(self) -> tuple[list[int], list[int]]:
        """Kahn's order of node indices, and the indices left over (they lie on or behind cycles)."""
        n = len(self.ids)
        indeg = array("q", [0]) * n
        children_ptr = array("q", [0]) * (n + 1)
        deps, ptr = self._deps, self._dep_ptr
        for i in range(n):
            for j in range(ptr[i], ptr[i + 1]):
                k = deps[j]
                if k >= 0:
                    indeg[i] += 1
                    children_ptr[k + 1] += 1
        for i in range(n):
            children_ptr[i + 1] += children_ptr[i]
        children = array("q", [0]) * children_ptr[n]
        fill = array("q", children_ptr[:n])
        for i in range(n):
            for j in range(ptr[i], ptr[i + 1]):
                k = deps[j]
                if k >= 0:
                    children[fill[k]] = i
                    fill[k] += 1
        order = [i for i in range(n) if indeg[i] == 0]
        head = 0
        while head < len(order):
            k = order[head]
            head += 1
            for j in range(children_ptr[k], children_ptr[k + 1]):
                c = children[j]
                indeg[c] -= 1
                if indeg[c] == 0:
                    order.append(c)
        left = [i for i in range(n) if indeg[i] > 0] if len(order) < n else []
        return order, left

    def find_cycle(self, left: list[int]) -> list[int]:
        """Ids of one dependency cycle among the leftover indices of :meth:`topo_order`."""
        on = set(left)
        seen: dict[int, int] = {}
        path: list[int] = []
        i = left[0]
        while i not in seen:
            seen[i] = len(path)
            path.append(i)
            i = next(k for k in self.deps_of(i) if k in on)
        cyc = path[seen[i]:]
        return [self.ids[k] for k in reversed(cyc)]

    def critical_path(self) -> tuple[int, list[int]]:
        """Longest path by ``duration_micros`` through the DAG: (length in us, node ids on it).

        Cycles are ignored (their nodes are left out); validation reports them.
        """
        order, _ = self.topo_order()
        n = len(self.ids)
        finish = array("Q", [0]) * n
        via = array("q", [-1]) * n
        durs = self.durations
        for i in order:
            best, arg = -1, -1
            for k in self.deps_of(i):
                if finish[k] > best:
                    best, arg = finish[k], k
            finish[i] = max(best, 0) + durs[i]
            via[i] = arg
        if not order:
            return 0, []
        end = max(order, key=finish.__getitem__)
        path = []
        i = end
        while i >= 0:
            path.append(self.ids[i])
            i = via[i]
        return finish[end], path[::-1]
