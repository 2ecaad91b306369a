"""The skeleton of a rank in dependency order, as one compiled loop (a numba kernel of
:mod:`chakra_core.base._kernels`).

The same computation as :class:`._skeleton._Frontiers` in :func:`._skeleton.scan_rank`'s pass:
each node carries a frontier (an interned set of skeleton nodes: the latest ones it waits for),
the union of its dependencies' frontiers folded in their order, each union reduced by the members
that another member waits for directly; a skeleton node passes on itself and waits for its
frontier.  Sets are sorted rows of one growing pool, interned by a 64-bit hash; the sets by
hash and the unions already made are tables in arrays (:mod:`chakra_core.base._inttable`), not
numba's typed dicts, whose making from Python compiled code in every process (0.13 s of CPU).
Each node's frontier number is kept in a slot of a table that the caller chooses (the node's
position, or its id less the lowest); a slot read before it is written (a dependency on no
earlier node) or written twice (a repeated id) stops the loop.  The table has 2-byte entries
while the frontier numbers fit them (the sets of a rank are few: a converted PyTorch rank of 5 M
nodes has a few thousand) and is widened to 4 bytes, between two nodes, when they would not.
"""

from __future__ import annotations

import numpy as np

from chakra_core.base._copyrun import copy_run
from chakra_core.base._inplace import GrowingTable
from chakra_core.base._inttable import new_table, table_get, table_put
from chakra_core.base._kernels import compiled, kernel

__all__ = ["Frontiers", "advance", "csr", "OK", "COLLISION", "UNPLACED", "WIDEN"]

#: statuses: done; two different sets had the same hash; a dependency's slot was empty or a
#: node's was taken (the caller takes the Python path on either of the two); the next node's
#: frontier might not fit the table's entries (the caller widens them and goes on from it)
OK, COLLISION, UNPLACED, WIDEN = 0, 1, 2, 3
#: the highest value a table entry of each width holds (an entry is a frontier number + 1)
ENTRY_MAX = {np.dtype(np.uint16): (1 << 16) - 1, np.dtype(np.int32): (1 << 31) - 1}
_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@kernel(cache=True, nogil=True)
def _grow(arr, need):  # pragma: no cover - compiled
    """``arr`` with room for ``need`` items (grown by a quarter when short: the frontier number
    of every node is kept, and doubling would cost up to 4 more bytes a node)."""
    if need <= len(arr):
        return arr
    out = np.empty(max(need, len(arr) + len(arr) // 4), arr.dtype)
    out[:len(arr)] = arr
    return out


@kernel(cache=True, nogil=True)
def _hash(items, k):  # pragma: no cover - compiled
    """FNV-1a over ``items[:k]``, as a dictionary key."""
    h = _FNV_OFFSET
    for j in range(k):
        h = (h ^ np.uint64(items[j])) * _FNV_PRIME
    return np.int64(h)


@kernel(cache=True, nogil=True)
def _merge(pool, sa, na, sb, nb, out):  # pragma: no cover - compiled
    """The union of the sorted sets ``pool[sa:sa+na]`` and ``pool[sb:sb+nb]`` into ``out``;
    its size."""
    x = y = m = 0
    while x < na or y < nb:
        if y >= nb or (x < na and pool[sa + x] < pool[sb + y]):
            v = pool[sa + x]
            x += 1
        elif x >= na or pool[sb + y] < pool[sa + x]:
            v = pool[sb + y]
            y += 1
        else:
            v = pool[sa + x]
            x += 1
            y += 1
        out[m] = v
        m += 1
    return m


@kernel(cache=True, nogil=True)
def _mark_common(pool, sw, nw, items, m, marks):  # pragma: no cover - compiled
    """Mark in ``marks`` the members of ``items[:m]`` that are in ``pool[sw:sw+nw]`` (both
    sorted); whether there was one."""
    p = q = 0
    hit = False
    while p < nw and q < m:
        if pool[sw + p] < items[q]:
            p += 1
        elif pool[sw + p] > items[q]:
            q += 1
        else:
            marks[q] = 1
            hit = True
            p += 1
            q += 1
    return hit


@kernel(cache=True, nogil=True)
def _reduce(pool, start, size, waits, items, m, marks):  # pragma: no cover - compiled
    """``items[:m]`` without the members that another member waits for directly, in place;
    the size left."""
    marks[:m] = 0
    for t in range(m):
        w = waits[items[t]]
        if w != 0:
            _mark_common(pool, start[w], size[w], items, m, marks)
    r = 0
    for t in range(m):
        if marks[t] == 0:
            items[r] = items[t]
            r += 1
    return r


@kernel(cache=True, nogil=True)
def _intern(items, r, pool, start, size, counters, index):  # pragma: no cover - compiled
    """The number of the set ``items[:r]`` (sorted), added when new: ``(status, number, pool,
    start, size, index)``; ``counters[0:2]`` = (sets, pool items used) are advanced.  ``index``
    keeps every set but the empty one (set 0) by its hash: ``counters[0] - 1`` keys."""
    h = _hash(items, r)
    got = table_get(index, h)
    if got >= 0:
        if size[got] != r:
            return COLLISION, got, pool, start, size, index
        for t in range(r):
            if pool[start[got] + t] != items[t]:
                return COLLISION, got, pool, start, size, index
        return OK, got, pool, start, size, index
    nsets, used = counters[0], counters[1]
    start, size = _grow(start, nsets + 1), _grow(size, nsets + 1)
    pool = _grow(pool, used + r)
    copy_run(pool, used, items, 0, r)
    start[nsets], size[nsets] = used, r
    index = table_put(index, nsets - 1, h, nsets)
    counters[0], counters[1] = nsets + 1, used + r
    return OK, nsets, pool, start, size, index


@kernel(cache=True, nogil=True)
def advance(dep_at, dep_ptr, is_skel, at, pool, start, size, counters, tables, waits,
            fid, entry_max, first):  # pragma: no cover - compiled
    """Nodes ``first`` on, in an order where every dependency comes first (one per ``is_skel``
    row): node ``i``'s frontier goes to slot ``at[i]`` of ``fid`` (0: empty, else the frontier
    number + 1, at most ``entry_max``), its dependencies' are read from slots
    ``dep_at[dep_ptr[i]:dep_ptr[i+1]]``.  ``counters`` = (sets, pool items used, skeleton nodes
    so far, unions kept); ``tables`` = (sets by hash, unions by pair of sets).  Returns
    ``(status, pool, start, size, waits, tables, i)``, the arrays grown where they were short
    and ``i`` the node a WIDEN status stopped before (nothing of it done)."""
    index, unions = tables
    n = len(is_skel)
    waits = _grow(waits, counters[2] + np.sum(is_skel[first:]))
    items = np.empty(64, np.int64)
    marks = np.empty(64, np.int64)
    for i in range(first, n):
        if counters[0] + (dep_ptr[i + 1] - dep_ptr[i]) + 1 > entry_max:  # each dep and the node add a set at most
            return WIDEN, pool, start, size, waits, (index, unions), i
        f = 0
        for j in range(dep_ptr[i], dep_ptr[i + 1]):
            g = np.int64(fid[dep_at[j]]) - 1
            if g < 0:
                return UNPLACED, pool, start, size, waits, (index, unions), i
            if g == f or g == 0:
                continue
            if f == 0:
                f = g
                continue
            key = (min(f, g) << 31) | max(f, g)
            known = table_get(unions, key)
            if known >= 0:
                f = known
                continue
            items = _grow(items, size[f] + size[g])
            marks = _grow(marks, size[f] + size[g])
            m = _merge(pool, start[f], size[f], start[g], size[g], items)
            r = _reduce(pool, start, size, waits, items, m, marks)
            status, f, pool, start, size, index = _intern(items, r, pool, start, size, counters, index)
            if status != OK:
                return status, pool, start, size, waits, (index, unions), i
            unions = table_put(unions, counters[3], key, f)
            counters[3] += 1
        if is_skel[i]:
            k = counters[2]
            waits[k] = f
            items[0] = k
            status, f, pool, start, size, index = _intern(items, 1, pool, start, size, counters, index)
            if status != OK:
                return status, pool, start, size, waits, (index, unions), i
            counters[2] = k + 1
        if fid[at[i]] != 0:
            return UNPLACED, pool, start, size, waits, (index, unions), i
        fid[at[i]] = f + 1
    return OK, pool, start, size, waits, (index, unions), n


@kernel(cache=True, nogil=True)
def _shift_up(arr, k, used):  # pragma: no cover - compiled
    """Move ``arr[:used]`` to ``arr[k:k+used]`` and empty ``arr[:k]``, in place."""
    copy_run(arr, k, arr, 0, used)
    arr[:min(k, used)] = 0


@kernel(cache=True, nogil=True)
def csr(pool, start, size, waits, nskel):  # pragma: no cover - compiled
    """What each of the ``nskel`` skeleton nodes waits for: ``(ptr, preds)``."""
    ptr = np.zeros(nskel + 1, np.int64)
    for k in range(nskel):
        ptr[k + 1] = ptr[k] + size[waits[k]]
    preds = np.empty(ptr[nskel], np.int64)
    for k in range(nskel):
        w = waits[k]
        copy_run(preds, ptr[k], pool, start[w], size[w])
    return ptr, preds


class Frontiers:
    """The state of :func:`advance` over the runs of one rank (its compiled form).  ``fid`` is
    the slot table, zero-filled as it grows: by position, a larger copy; by id (after
    :meth:`reslot`), in place (:class:`chakra_core.base._inplace.GrowingTable`: a table that can
    take 4 slots a node is never held twice), downward too.  Its entries are 2 bytes until a frontier number
    would not fit them, then 4 (:meth:`_widen`: by id in place, by position by a copy)."""

    def __init__(self) -> None:
        self.pool = np.empty(1024, np.int64)
        self.start = np.zeros(1024, np.int64)
        self.size = np.zeros(1024, np.int64)
        self.counters = np.array([1, 0, 0, 0], np.int64)  # set 0 is the empty set
        self.tables = (new_table(), new_table())
        self.waits = np.zeros(1024, np.int64)
        self.fid = np.zeros(1024, np.uint16)
        self._by_id: GrowingTable | None = None

    def reserve(self, low: int, high: int) -> int:
        """Slots ``low`` to ``high - 1`` in the table (numbered from its slot 0 now; ``low`` < 0:
        under it); how far the slots so far moved up for that.  A quarter of the table more is
        made each way it grows, so that a table grown run by run moves few times."""
        have = len(self.fid)
        shift = max(-low, have // 4) if low < 0 else 0
        need = max(high, have) + shift
        if need <= have:
            return 0
        size = max(need, have + have // 4)
        if self._by_id is None:
            table = np.zeros(size, self.fid.dtype)
            table[shift:shift + have] = self.fid
            self.fid = table
            return shift
        self.fid = np.zeros(0, self.fid.dtype)  # the table moves only when no other view of it is held
        self._by_id.grow(size)
        self.fid = self._by_id.array
        if shift:
            compiled(_shift_up)(self.fid, shift, have)
        return shift

    def reslot(self, slots: np.ndarray, size: int) -> None:
        """A table of ``size`` slots in which the frontier of slot ``i`` so far is in slot
        ``slots[i]``."""
        self._by_id = GrowingTable(size, self.fid.dtype)
        self._by_id.array[slots] = self.fid[:len(slots)]
        self.fid = self._by_id.array

    def add(self, dep_at: np.ndarray, dep_ptr: np.ndarray, is_skel: np.ndarray, at: np.ndarray) -> bool:
        """The next run of nodes (their slots ``at`` and their dependencies' ``dep_at``, all
        reserved); False when a dependency's slot was empty, a node's slot was taken, or two sets
        had the same hash."""
        first = 0
        while True:
            status, self.pool, self.start, self.size, self.waits, self.tables, first = compiled(advance)(
                dep_at, dep_ptr, is_skel, at, self.pool, self.start, self.size, self.counters, self.tables,
                self.waits, self.fid, ENTRY_MAX[self.fid.dtype], first)
            if status != WIDEN:
                return bool(status == OK)
            if self.fid.dtype != np.uint16:
                return False
            self._widen()

    def _widen(self) -> None:
        """The table with 4-byte entries, the frontiers so far kept."""
        if self._by_id is None:
            self.fid = self.fid.astype(np.int32)
            return
        self.fid = np.zeros(0, np.int32)  # the table moves only when no other view of it is held
        self._by_id.widen(np.int32)
        self.fid = self._by_id.array

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """What each skeleton node waits for, as (pointer, list)."""
        return compiled(csr)(self.pool, self.start, self.size, self.waits, int(self.counters[2]))
