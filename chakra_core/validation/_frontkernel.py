"""The skeleton of a rank in dependency order, as one compiled loop (numba).

The same computation as :class:`._skeleton._Frontiers` in :func:`._skeleton.scan_rank`'s pass:
each node carries a frontier (an interned set of skeleton nodes: the latest ones it waits for),
the union of its dependencies' frontiers folded in their order, each union reduced by the members
that another member waits for directly; a skeleton node passes on itself and waits for its
frontier.  Sets are sorted rows of one growing pool, interned by a 64-bit hash; the frontier
number of each node (4 bytes) is the state that grows with the rank, a run of nodes at a time.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict

__all__ = ["Frontiers", "advance", "csr", "OK", "COLLISION"]

#: statuses: done; two different sets had the same hash (the caller takes the Python path)
OK, COLLISION = 0, 1
_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True, nogil=True)
def _grow(arr, need):  # pragma: no cover - compiled
    """``arr`` with room for ``need`` items (grown by a quarter when short: the frontier number
    of every node is kept, and doubling would cost up to 4 more bytes a node)."""
    if need <= len(arr):
        return arr
    out = np.empty(max(need, len(arr) + len(arr) // 4), arr.dtype)
    out[:len(arr)] = arr
    return out


@njit(cache=True, nogil=True)
def _hash(items, k):  # pragma: no cover - compiled
    """FNV-1a over ``items[:k]``, as a dictionary key."""
    h = _FNV_OFFSET
    for j in range(k):
        h = (h ^ np.uint64(items[j])) * _FNV_PRIME
    return np.int64(h)


@njit(cache=True, nogil=True)
def advance(dep_pos, dep_ptr, is_skel, first, pool, start, size, counters, index, unions, waits,  # noqa: C901
            fid):  # pragma: no cover - compiled
    """Nodes ``first, first+1, ...`` (one per ``is_skel`` row) in an order where every dependency
    comes first: ``dep_pos[dep_ptr[i]:dep_ptr[i+1]]`` are the positions of node ``first+i``'s.
    ``counters`` = (sets, pool items used, skeleton nodes so far); returns ``(status, pool,
    start, size, waits, fid)``, the arrays grown where they were short."""
    n = len(is_skel)
    nsets, used, k_skel = counters[0], counters[1], counters[2]
    more = 0
    for i in range(n):
        more += is_skel[i]
    waits = _grow(waits, k_skel + more)
    fid = _grow(fid, first + n)
    a_buf = np.empty(64, np.int64)
    b_buf = np.empty(64, np.int64)
    for i in range(n):
        f = 0
        for j in range(dep_ptr[i], dep_ptr[i + 1]):
            g = fid[dep_pos[j]]
            if g == f or g == 0:
                continue
            if f == 0:
                f = g
                continue
            key = (min(f, g) << 31) | max(f, g)
            if key in unions:
                f = unions[key]
                continue
            # merge the two sorted sets into a_buf
            sa, na, sb, nb = start[f], size[f], start[g], size[g]
            a_buf = _grow(a_buf, na + nb)
            b_buf = _grow(b_buf, na + nb)
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
                a_buf[m] = v
                m += 1
            # the members that another member waits for directly (implied), marked in b_buf
            for t in range(m):
                b_buf[t] = 0
            for t in range(m):
                w = waits[a_buf[t]]
                if w == 0:
                    continue
                sw, nw = start[w], size[w]
                hit = False
                p = q = 0
                while p < nw and q < m:
                    if pool[sw + p] < a_buf[q]:
                        p += 1
                    elif pool[sw + p] > a_buf[q]:
                        q += 1
                    else:
                        hit = True
                        break
                if not hit:
                    continue
                p = q = 0
                while p < nw and q < m:
                    if pool[sw + p] < a_buf[q]:
                        p += 1
                    elif pool[sw + p] > a_buf[q]:
                        q += 1
                    else:
                        b_buf[q] = 1
                        p += 1
                        q += 1
            r = 0
            for t in range(m):
                if b_buf[t] == 0:
                    a_buf[r] = a_buf[t]
                    r += 1
            h = _hash(a_buf, r)
            got = index[h] if h in index else -1
            if got >= 0:
                if size[got] != r:
                    return COLLISION, pool, start, size, waits, fid
                for t in range(r):
                    if pool[start[got] + t] != a_buf[t]:
                        return COLLISION, pool, start, size, waits, fid
            else:
                start, size = _grow(start, nsets + 1), _grow(size, nsets + 1)
                pool = _grow(pool, used + r)
                pool[used:used + r] = a_buf[:r]
                start[nsets], size[nsets] = used, r
                used += r
                got = index[h] = nsets
                nsets += 1
            unions[key] = got
            f = got
        if is_skel[i]:
            waits[k_skel] = f
            a_buf[0] = k_skel
            h = _hash(a_buf, 1)
            got = index[h] if h in index else -1
            if got >= 0:
                if size[got] != 1 or pool[start[got]] != k_skel:
                    return COLLISION, pool, start, size, waits, fid
            else:
                start, size = _grow(start, nsets + 1), _grow(size, nsets + 1)
                pool = _grow(pool, used + 1)
                pool[used] = k_skel
                start[nsets], size[nsets] = used, 1
                used += 1
                got = index[h] = nsets
                nsets += 1
            fid[first + i] = got
            k_skel += 1
        else:
            fid[first + i] = f
    counters[0], counters[1], counters[2] = nsets, used, k_skel
    return OK, pool, start, size, waits, fid


@njit(cache=True, nogil=True)
def csr(pool, start, size, waits, nskel):  # pragma: no cover - compiled
    """What each of the ``nskel`` skeleton nodes waits for: ``(ptr, preds)``."""
    ptr = np.zeros(nskel + 1, np.int64)
    for k in range(nskel):
        ptr[k + 1] = ptr[k] + size[waits[k]]
    preds = np.empty(ptr[nskel], np.int64)
    for k in range(nskel):
        w = waits[k]
        preds[ptr[k]:ptr[k + 1]] = pool[start[w]:start[w] + size[w]]
    return ptr, preds


class Frontiers:
    """The state of :func:`advance` over the runs of one rank."""

    def __init__(self) -> None:
        self.pool = np.empty(1024, np.int64)
        self.start = np.zeros(1024, np.int64)
        self.size = np.zeros(1024, np.int64)
        self.counters = np.array([1, 0, 0], np.int64)  # set 0 is the empty set
        self.index = Dict.empty(key_type=types.int64, value_type=types.int64)
        self.unions = Dict.empty(key_type=types.int64, value_type=types.int64)
        self.waits = np.zeros(1024, np.int64)
        self.fid = np.zeros(1024, np.int32)
        self.count = 0

    def add(self, dep_pos: np.ndarray, dep_ptr: np.ndarray, is_skel: np.ndarray) -> bool:
        """The next run of nodes (dependency positions over the whole rank); False when two sets
        had the same hash."""
        status, self.pool, self.start, self.size, self.waits, self.fid = advance(
            dep_pos, dep_ptr, is_skel, self.count, self.pool, self.start, self.size, self.counters, self.index,
            self.unions, self.waits, self.fid)
        self.count += len(is_skel)
        return bool(status == OK)

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """What each skeleton node waits for, as (pointer, list)."""
        return csr(self.pool, self.start, self.size, self.waits, int(self.counters[2]))
