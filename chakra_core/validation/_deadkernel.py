"""The abstract execution of :mod:`._deadlock` as one compiled loop (numba).

Every rank's skeleton is concatenated (node ``base[r] + i`` is node ``i`` of rank number ``r``);
the steps, their order and the data structures are :class:`._deadlock._Run`'s: a stack of
finished nodes, a queue of ranks to issue, a binary heap of ready nodes per rank (smallest id
first), a first-in first-out queue of waiting receives and a count of unmatched sends per
channel (source, destination, tag, size), the arrivals of each collective per group and sequence.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict

__all__ = ["run_compiled"]

_COLL, _SEND, _RECV = 0, 1, 2


@njit(cache=True, nogil=True, inline="always")
def _less(ids, x, y):  # pragma: no cover - compiled
    """Whether node ``x`` comes before node ``y`` in a heap (smaller id, then number)."""
    return ids[x] < ids[y] or (ids[x] == ids[y] and x < y)


@njit(cache=True, nogil=True)
def _push(heap, size, r, lo, x, ids):  # pragma: no cover - compiled
    """Push node ``x`` on the heap of rank ``r`` (``heap[lo:lo+size[r]]``)."""
    k = size[r]
    size[r] += 1
    while k > 0:
        parent = (k - 1) >> 1
        if not _less(ids, x, heap[lo + parent]):
            break
        heap[lo + k] = heap[lo + parent]
        k = parent
    heap[lo + k] = x


@njit(cache=True, nogil=True)
def _pop(heap, size, r, lo, ids):  # pragma: no cover - compiled
    """Pop the first node of the heap of rank ``r``."""
    top = heap[lo]
    size[r] -= 1
    n = size[r]
    x = heap[lo + n]
    k = 0
    while True:
        c = 2 * k + 1
        if c >= n:
            break
        if c + 1 < n and _less(ids, heap[lo + c + 1], heap[lo + c]):
            c += 1
        if not _less(ids, heap[lo + c], x):
            break
        heap[lo + k] = heap[lo + c]
        k = c
    if n > 0:
        heap[lo + k] = x
    return top


@njit(cache=True, nogil=True)
def run_compiled(base, ids, kinds, group, channel, nchannels, pred_ptr, preds, member_count,  # noqa: C901
                 streams):  # pragma: no cover - compiled
    """Run the set: ``(done per rank, per node its state: 1 finished, 2 arrived at an unfinished
    collective, 3 a receive waiting, and its collective's sequence number)``.

    ``preds`` are global node numbers; ``group``: a collective's group number; ``channel``: a
    send's or receive's channel number; ``member_count[g]``: the members of group ``g``."""
    nranks = len(base) - 1
    n = base[nranks]
    rank_of = np.empty(n, np.int32)
    for r in range(nranks):
        rank_of[base[r]:base[r + 1]] = r
    indeg = np.empty(n, np.int32)
    count = np.zeros(n + 1, np.int64)
    for x in range(n):
        indeg[x] = pred_ptr[x + 1] - pred_ptr[x]
        for j in range(pred_ptr[x], pred_ptr[x + 1]):
            count[preds[j] + 1] += 1
    for x in range(n):
        count[x + 1] += count[x]
    fill = count[:-1].astype(np.int32)
    kids = np.empty(len(preds), np.int32)
    for x in range(n):
        for j in range(pred_ptr[x], pred_ptr[x + 1]):
            p = preds[j]
            kids[fill[p]] = x
            fill[p] += 1
    state = np.zeros(n, np.int8)
    seq_of = np.zeros(n, np.int32)
    done = np.zeros(nranks, np.int64)
    heap = np.empty(n, np.int32)
    hsize = np.zeros(nranks, np.int64)
    free = np.full(nranks, streams, np.int64)
    finished = np.empty(n + 1, np.int32)
    nfin = 0
    pump = np.empty(nranks + 1, np.int64)
    p_head = p_tail = 0
    queued = np.zeros(nranks, np.bool_)
    sends = np.zeros(nchannels, np.int64)
    r_head = np.full(nchannels, -1, np.int64)
    r_tail = np.full(nchannels, -1, np.int64)
    r_next = np.full(n, -1, np.int32)
    seq = Dict.empty(key_type=types.int64, value_type=types.int64)
    slot = Dict.empty(key_type=types.int64, value_type=types.int64)
    slot_count = np.zeros(n + 1, np.int32)
    slot_head = np.full(n + 1, -1, np.int32)
    a_next = np.full(n, -1, np.int32)
    nslots = 0
    ngroups = len(member_count)
    for r in range(nranks):
        for x in range(base[r], base[r + 1]):
            if indeg[x] == 0:
                # ready(x)
                if kinds[x] != _RECV:
                    _push(heap, hsize, r, base[r], x, ids)
                    if not queued[r]:
                        queued[r] = True
                        pump[p_tail] = r
                        p_tail = (p_tail + 1) % (nranks + 1)
                else:
                    ch = channel[x]
                    if sends[ch] > 0:
                        sends[ch] -= 1
                        finished[nfin] = x
                        nfin += 1
                    else:
                        state[x] = 3
                        if r_tail[ch] < 0:
                            r_head[ch] = x
                        else:
                            r_next[r_tail[ch]] = x
                        r_tail[ch] = x
        if not queued[r]:
            queued[r] = True
            pump[p_tail] = r
            p_tail = (p_tail + 1) % (nranks + 1)
    while nfin > 0 or p_head != p_tail:
        while nfin > 0:
            nfin -= 1
            x = finished[nfin]
            r = rank_of[x]
            state[x] = 1
            done[r] += 1
            for j in range(count[x], count[x + 1]):
                c = kids[j]
                indeg[c] -= 1
                if indeg[c] != 0:
                    continue
                rc = rank_of[c]
                if kinds[c] != _RECV:
                    _push(heap, hsize, rc, base[rc], c, ids)
                    if not queued[rc]:
                        queued[rc] = True
                        pump[p_tail] = rc
                        p_tail = (p_tail + 1) % (nranks + 1)
                else:
                    ch = channel[c]
                    if sends[ch] > 0:
                        sends[ch] -= 1
                        finished[nfin] = c
                        nfin += 1
                    else:
                        state[c] = 3
                        if r_tail[ch] < 0:
                            r_head[ch] = c
                        else:
                            r_next[r_tail[ch]] = c
                        r_tail[ch] = c
        if p_head != p_tail:
            r = pump[p_head]
            p_head = (p_head + 1) % (nranks + 1)
            queued[r] = False
            while free[r] > 0 and hsize[r] > 0:
                x = _pop(heap, hsize, r, base[r], ids)
                k = kinds[x]
                if k == _COLL:
                    g = group[x]
                    key = r * ngroups + g
                    s = seq[key] if key in seq else 0
                    seq[key] = s + 1
                    free[r] -= 1
                    skey = g * (n + 1) + s
                    if skey in slot:
                        z = slot[skey]
                    else:
                        z = slot[skey] = nslots
                        nslots += 1
                    a_next[x] = slot_head[z]
                    slot_head[z] = x
                    slot_count[z] += 1
                    state[x] = 2
                    seq_of[x] = s
                    if slot_count[z] == member_count[g]:
                        del slot[skey]
                        y = slot_head[z]
                        arrivals = np.empty(slot_count[z], np.int64)
                        m = slot_count[z]
                        while y >= 0:  # the arrivals in arrival order (the list was built newest first)
                            m -= 1
                            arrivals[m] = y
                            y = a_next[y]
                        for y in arrivals:
                            ry = rank_of[y]
                            free[ry] += 1
                            finished[nfin] = y
                            nfin += 1
                            if not queued[ry]:
                                queued[ry] = True
                                pump[p_tail] = ry
                                p_tail = (p_tail + 1) % (nranks + 1)
                elif k == _SEND:
                    ch = channel[x]
                    if r_head[ch] >= 0:
                        y = r_head[ch]
                        r_head[ch] = r_next[y]
                        if r_head[ch] < 0:
                            r_tail[ch] = -1
                        finished[nfin] = y
                        nfin += 1
                    else:
                        sends[ch] += 1
                    finished[nfin] = x
                    nfin += 1
                else:
                    finished[nfin] = x
                    nfin += 1
                if nfin > 0:
                    if not queued[r]:
                        queued[r] = True
                        pump[p_tail] = r
                        p_tail = (p_tail + 1) % (nranks + 1)
                    break
    return done, state, seq_of
