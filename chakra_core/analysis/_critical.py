"""The cross-rank critical path of a set of spans, joined at collectives and send/receive pairs.

The walk starts at the span that ends last and goes back in time.  On a rank, the predecessor
of a point in time is the operation that ended last at or before it (the gap between them has no
operation of the path).  At a collective or a receive (spans sharing a ``match``) the walk
crosses to the member that arrived last, because the operation could not complete before it.
Each nanosecond of the path is then put in the category of what its rank does at that moment,
as :func:`~chakra_core.analysis._breakdown.breakdown` counts it: *compute* while any compute
runs (communication or memory the path goes through included: it is overlapped), *exposed
communication* while communication runs and no compute, *exposed memory* while only memory
operations run, *idle* while nothing does; except that, from a crossing on, the time of that
rank's work (all but exposed communication) after the second-to-last member arrived is *skew*
(the other members were waiting for this slower peer).  So a path that stays on one rank has
that rank's breakdown, with the work others waited for moved to skew.  The segments cover
``[0, finish]`` exactly, so the time per category sums to the finish.  The members a symmetric
run's rank stands for arrive when it does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chakra_core.analysis._rankroles import EVERY_RANK
from chakra_core.analysis._spans import COMM_KINDS, COMPUTE_KINDS, IS_COMM, SPAN_KINDS, Spans

__all__ = ["CriticalPath", "critical_path", "PATH_CATEGORIES"]

#: what each nanosecond of the critical path is spent on
PATH_CATEGORIES = ("compute", "exposed_comm", "exposed_mem", "skew", "idle")
_COMM, _SKEW, _IDLE = 1, 3, 4
#: per kind code (uint8, :meth:`Spans.activity_kinds`): the category of the time its operations
#: run in, before the breakdown's order (compute over communication over memory) decides; 3: none
#: (``other``, a recorded idle gap)
_ACTIVITY_OF_KIND = np.array([0 if k in COMPUTE_KINDS else 1 if k in COMM_KINDS else
                              2 if k == SPAN_KINDS.index("memory") else 3 for k in range(256)])


@dataclass
class CriticalPath:
    """The segments of the path in time order: ``rank``, ``span`` (-1 between two operations of
    the path), ``start_ns``, ``end_ns`` and ``category`` (an index into :data:`PATH_CATEGORIES`:
    what the rank does then, one category a segment)."""

    finish_ns: int
    rank: np.ndarray
    span: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    category: np.ndarray
    crossings: int = 0
    notes: list[str] = field(default_factory=list)

    def ns_by_category(self) -> dict[str, int]:
        """Time (ns) per category; the values sum to ``finish_ns``."""
        ns = _sums(self.category, self.end_ns - self.start_ns, len(PATH_CATEGORIES)).tolist()
        return {f"{name}_ns": v for name, v in zip(PATH_CATEGORIES, ns)}

    def ns_by_rank(self) -> dict[int, int]:
        """Time (ns) of the path spent on each rank (idle included), by ascending rank."""
        ranks, at = np.unique(self.rank, return_inverse=True)  # any rank numbers, a loaded result's too
        return dict(zip(ranks.tolist(), _sums(at, self.end_ns - self.start_ns, len(ranks)).tolist()))

    def top(self, spans: Spans, n: int = 10) -> list[dict[str, Any]]:
        """The ``n`` operations (by name and kind) with the most time on the path."""
        has = self.span >= 0
        if not has.any():
            return []
        idx = self.span[has]
        dur = (self.end_ns - self.start_ns)[has]
        cat = self.category[has]
        name = _same_names(spans, spans.name[idx])
        key = (name * len(SPAN_KINDS) + spans.kind[idx]) * len(PATH_CATEGORIES) + cat
        order = key.argsort(kind="stable")  # each key's segments in path order
        sorted_key = key[order]
        heads = np.concatenate(([True], sorted_key[1:] != sorted_key[:-1])).nonzero()[0]
        first = order[heads]  # each key's first segment
        ns = np.add.reduceat(dur[order], heads)
        count = np.concatenate((heads[1:], [len(key)])) - heads
        seen = first.argsort(kind="stable")
        rows = seen[(-ns[seen]).argsort(kind="stable")][:n]
        at = first[rows]
        span = idx[at]
        cols = zip(spans.name[span].tolist(), spans.kind[span].tolist(), cat[at].tolist(),
                   ns[rows].tolist(), count[rows].tolist())
        return [{"name": spans.names[nm], "kind": SPAN_KINDS[k], "category": PATH_CATEGORIES[c], "ns": v,
                 "segments": m} for nm, k, c, v, m in cols]

    def weighted_ns(self, spans: Spans, kinds: tuple[str, ...] = (), names: tuple[str, ...] = (),
                    but: tuple[str, ...] = ()) -> int:
        """Time (ns) of the path in spans of the given kinds or names, less those named in ``but``
        (skew time excluded)."""
        has = (self.span >= 0) & (self.category != _SKEW)
        idx = self.span[has]
        sel = np.isin(spans.kind[idx], [SPAN_KINDS.index(k) for k in kinds])
        if names:
            sel |= np.isin(spans.name[idx], spans.name_indices(names))
        if but:
            sel &= ~np.isin(spans.name[idx], spans.name_indices(but))
        return int((self.end_ns - self.start_ns)[has][sel].sum())

    def to_dict(self, spans: Spans, limit: int = 200) -> dict[str, Any]:
        """JSON-able form: totals, time per category and rank, top contributors, and the operations
        on the path (``nodes``: the ``limit`` longest, in path order; ``shown`` of ``length``)."""
        span, path_ns = self._operations()
        keep = np.arange(len(span))
        if 0 <= limit < len(span):
            keep = np.sort(np.argsort(-path_ns, kind="stable")[:limit])
        kinds = spans.kind[span]
        by_kind = {SPAN_KINDS[k]: int(path_ns[kinds == k].sum()) for k in dict.fromkeys(kinds.tolist())}
        return {"finish_ns": self.finish_ns, "length": self.operations(), "shown": len(keep),
                "crossings": self.crossings, "ns_by_category": self.ns_by_category(), "ns_by_kind": by_kind,
                "ns_by_rank": {str(r): v for r, v in self.ns_by_rank().items()},
                "top": self.top(spans), "nodes": _node_dicts(spans, span[keep], path_ns[keep]),
                "notes": self.notes}

    def operations(self) -> int:
        """How many operations (spans) the path goes through."""
        return len(set(self.span[self.span >= 0].tolist()))

    def nodes(self, spans: Spans) -> list[dict[str, Any]]:
        """The operations on the path in path order: ``rank``, ``id`` (ET node), ``name``,
        ``kind``, the span's ``start_ns``/``end_ns`` and ``path_ns`` (its time on the path)."""
        return _node_dicts(spans, *self._operations())

    def _operations(self) -> tuple[np.ndarray, np.ndarray]:
        """The spans on the path in path order, consecutive segments of one span joined, and the
        time (ns) of each on the path."""
        has = (self.span >= 0).nonzero()[0]
        span = self.span[has]
        if not len(span):
            return span, np.zeros(0, np.int64)
        heads = np.concatenate(([True], span[1:] != span[:-1])).nonzero()[0]
        return span[heads], np.add.reduceat((self.end_ns - self.start_ns)[has], heads)


def _sums(at: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per group ``0..n-1``, the sum (int64, exact) of ``values`` where ``at`` is the group."""
    out = np.zeros(n, np.int64)
    np.add.at(out, at, values)
    return out


def _same_names(spans: Spans, name: np.ndarray) -> np.ndarray:
    """Name indices with equal names made equal (the first index of each string)."""
    used = np.unique(name).tolist()
    first: dict[str, int] = {}
    canon = [first.setdefault(spans.names[i], i) for i in used]
    if len(first) == len(used):  # no two of them name the same string
        return name.astype(np.int64)
    return np.asarray(canon, np.int64)[np.searchsorted(used, name)]


def _node_dicts(spans: Spans, span: np.ndarray, path_ns: np.ndarray) -> list[dict[str, Any]]:
    """The dicts of :meth:`CriticalPath.nodes` for ``span`` with their times on the path."""
    names, kinds = spans.names, SPAN_KINDS
    cols = zip(spans.rank[span].tolist(), spans.node_id[span].tolist(), spans.name[span].tolist(),
               spans.kind[span].tolist(), spans.start_ns[span].tolist(), spans.end_ns[span].tolist(),
               path_ns.tolist())
    return [{"rank": r, "id": i, "name": names[nm], "kind": kinds[k], "start_ns": a, "end_ns": e, "path_ns": d}
            for r, i, nm, k, a, e, d in cols]


def critical_path(spans: Spans) -> CriticalPath:
    """Walk the cross-rank critical path of ``spans`` (see the module docstring)."""
    out = _Walk(spans, spans.ops())
    if out.finish is not None:
        out.run()
    rank, span, start, end, floor = np.array(out.segments[::-1], np.int64).reshape(-1, 5).T
    rank, span, start, end, cat = _categorised(out, rank, span, start, end, floor)
    return CriticalPath(out.finish or 0, rank, span, start, end, cat.astype(np.int8), out.crossings)


def _categorised(walk: _Walk, rank: np.ndarray, span: np.ndarray, start: np.ndarray, end: np.ndarray,
                 floor: np.ndarray) -> tuple[np.ndarray, ...]:
    """The walk's segments (``floor``: the skew floor when each was added, -1 none) cut at the
    floor and where their rank's activity changes: rank, span, start, end and category of each
    piece (the rank's activity then; skew for the work after the floor)."""
    late = (end > floor) & (floor >= 0)
    cut = np.where(late, np.maximum(start, floor), end)
    a, b = np.stack((start, cut), 1).ravel(), np.stack((cut, end), 1).ravel()
    keep = b > a
    rank, span, a, b = np.repeat(rank, 2)[keep], np.repeat(span, 2)[keep], a[keep], b[keep]
    late = np.tile([False, True], len(start))[keep]
    times, levels, first, lo, hi = _activities(walk, rank, a, b)
    count = hi - lo + 1
    part = np.repeat(np.arange(len(a)), count)
    j = np.arange(len(part)) - np.repeat(np.cumsum(count) - count, count)
    k = lo[part] + j - 1  # the change of activity each piece starts at (j > 0)
    piece_start = np.where(j == 0, a[part], times[k])
    piece_end = np.where(j == count[part] - 1, b[part], times[k + 1])
    level = np.where(k >= first[part], levels[k], _IDLE)
    cat = np.where(late[part] & (level != _COMM), _SKEW, level)
    return rank[part], span[part], piece_start, piece_end, cat


def _activities(walk: _Walk, rank: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """The activity changes of the ranks of the intervals ``[a, b)`` (``times``, ``levels``: per
    rank one after the other, with one more entry that no rank owns) and, per interval, where its
    rank's changes begin (``first``) and the range of those strictly inside it (``lo``, ``hi``)."""
    times, levels = [], []
    first, lo, hi = (np.empty(len(a), np.int64) for _ in range(3))
    ranks, at = np.unique(rank, return_inverse=True)
    by = np.argsort(at, kind="stable")
    bounds = np.searchsorted(at[by], np.arange(len(ranks) + 1))
    offset = 0
    for r, (i, e) in zip(ranks.tolist(), zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        t, level = _activity(walk.s, walk.order[slice(*walk.blocks[r])], walk.kinds)
        sel = by[i:e]
        first[sel] = offset
        lo[sel] = offset + np.searchsorted(t, a[sel], side="right")
        hi[sel] = offset + np.searchsorted(t, b[sel], side="left")
        times.append(t)
        levels.append(level)
        offset += len(t)
    return (np.concatenate(times + [np.zeros(1, np.int64)]), np.concatenate(levels + [np.full(1, _IDLE)]),
            first, lo, hi)


def _activity(spans: Spans, idx: np.ndarray, kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """When what the rank of the operations ``idx`` does changes (ascending times) and the
    category from each on: compute while any compute runs, else exposed communication while
    communication does, else exposed memory while memory does, else idle (the breakdown's rule;
    ``kinds``: every span's :meth:`Spans.activity_kinds`)."""
    act = _ACTIVITY_OF_KIND[kinds[idx]]
    idx, act = idx[act < 3], act[act < 3]
    n = len(idx)
    t = np.concatenate((spans.start_ns[idx], spans.end_ns[idx]))
    delta = np.zeros((2 * n, 3), np.int64)
    delta[np.arange(n), act] = 1
    delta[np.arange(n, 2 * n), act] = -1
    order = np.argsort(t, kind="stable")
    t, running = t[order], np.cumsum(delta[order], axis=0) > 0
    at_end = np.append(t[1:] != t[:-1], True) if n else np.zeros(0, bool)  # the last change at each time
    t, running = t[at_end], running[at_end]
    level = np.array([0, 1, 2, _IDLE])[np.argmax(np.column_stack((running, np.ones(len(t), bool))), axis=1)]
    changes = np.append(True, level[1:] != level[:-1]) if len(t) else np.zeros(0, bool)
    return t[changes], level[changes]


class _Walk:
    """The operations in one order (``order``: by rank, then end, then start, ties in file
    order) with, for each, the position of the operation the walk steps back to from its start
    (``back``; -1: none on its rank); ``blocks[rank]`` is the rank's slice of the order,
    ``sorted_ends`` the end times in that order and ``finish`` the end of the last operation
    (None without any); ``kinds`` is every span's :meth:`Spans.activity_kinds`.  ``segments``
    collects the path's segments (rank, span, start, end, category) from the finish back."""

    def __init__(self, spans: Spans, ops: np.ndarray):
        self.s = spans
        self.kinds = spans.activity_kinds()
        self._groups(ops)
        rank = spans.rank[ops] if len(ops) < len(spans) else spans.rank
        if (rank[1:] < rank[:-1]).any():
            by_rank = np.argsort(rank, kind="stable")
            ops, rank = ops[by_rank], rank[by_rank]
        cuts = np.concatenate(([0], (rank[1:] != rank[:-1]).nonzero()[0] + 1, [len(ops)])).tolist()
        self.order = ops.copy()
        self.back = np.empty(len(ops), np.int64)
        self.sorted_ends = np.empty(len(ops), np.int64)
        self.blocks: dict[int, tuple[int, int]] = {}
        self.finish: int | None = None
        self.last = 0
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            if hi > lo:
                self._block(int(rank[lo]), lo, hi)
        self.segments: list[tuple[int, int, int, int, int]] = []  # rank, span, start, end, skew floor
        self.skew_floor = -1
        self.crossings = 0

    def _block(self, rank: int, lo: int, hi: int) -> None:
        """Order the operations of ``rank`` (``order[lo:hi]``) by end, then start, and find
        where the walk steps back to from each."""
        s = self.s
        idx = self.order[lo:hi]
        e, st = s.end_ns[idx], s.start_ns[idx]
        de = e[1:] - e[:-1]
        if not ((de > 0) | ((de == 0) & (st[1:] >= st[:-1]))).all():
            by_end = np.lexsort((st, e))
            idx[:] = idx[by_end]
            e, st = e[by_end], st[by_end]
        back = np.arange(lo - 1, hi - 1)  # the one before, where it ends by the start
        far = (e[:-1] > st[1:]).nonzero()[0] + 1
        back[far] = np.minimum(np.searchsorted(e, st[far], side="right"), far) - 1 + lo
        back[back < lo] = -1
        self.back[lo:hi] = back
        self.sorted_ends[lo:hi] = e
        self.blocks[rank] = (lo, hi)
        if self.finish is None or e[-1] >= self.finish:
            self.finish, self.last = int(e[-1]), hi - 1

    def _position(self, i: int, rank: int) -> int:
        """Where operation ``i`` of ``rank`` is in the order."""
        lo, hi = self.blocks[rank]
        end = self.s.end_ns[i]
        a = lo + int(np.searchsorted(self.sorted_ends[lo:hi], end, side="left"))
        b = lo + int(np.searchsorted(self.sorted_ends[lo:hi], end, side="right"))
        return a + int(np.flatnonzero(self.order[a:b] == i)[0])

    def _groups(self, ops: np.ndarray) -> None:
        """Per collective or send/receive pair (spans sharing a ``match``) with other members: its
        last member to start and the start of the one before (``groups[match]``, a dict: the
        walk looks one up per step).  A collective's members that a span's rank stands for (a
        symmetric run) start with it: those of a collective only that rank has a span of, or of
        the group of every rank."""
        s = self.s
        matched = ops[(s.match[ops] >= 0) & IS_COMM[s.kind[ops]]]
        self.groups: dict[int, tuple[int, int]] = {}
        if not len(matched):
            return
        morder = matched[np.lexsort((s.start_ns[matched], s.match[matched]))]
        keys, first = np.unique(s.match[morder], return_index=True)
        stop = np.append(first[1:], len(morder)).astype(np.int64)
        last, alone = morder[stop - 1], stop - first == 1
        every = np.isin(s.group[last], [-1] + [i for i, g in enumerate(s.strings) if g in EVERY_RANK])
        along = ((s.weights()[s.rank[last]] > 1) & (s.kind[last] == SPAN_KINDS.index("collective"))
                 & (alone | every))
        second = np.where(along, s.start_ns[last], s.start_ns[morder[np.maximum(stop - 2, 0)]])
        keep = along | ~alone
        self.groups = dict(zip(keys[keep].tolist(), zip(last[keep].tolist(), second[keep].tolist())))

    def add(self, rank: int, span: int, start: int, end: int) -> None:
        """Add the segment ``[start, end)`` of ``rank`` (in ``span``, -1 none) with the skew floor now."""
        if end > start:
            self.segments.append((rank, span, start, end, self.skew_floor))

    def run(self) -> None:
        """Walk back from the finish on the rank of the operation that ends last (of those
        ending together, on the last rank)."""
        s = self.s
        t = self.finish or 0
        g = self.last
        rank = int(s.rank[self.order[g]])
        srank, sstart, send, smatch, skind = (a.data for a in (s.rank, s.start_ns, s.end_ns, s.match, s.kind))
        order, back = self.order.data, self.back.data
        while True:
            if g < 0:
                self.add(rank, -1, 0, t)
                return
            p = order[g]
            start, end = sstart[p], send[p]
            self.add(rank, -1, end, t)
            group = self.groups.get(smatch[p]) if skind[p] in COMM_KINDS else None
            if group is not None and start < sstart[group[0]] < end and srank[group[0]] != rank:
                last, arrive = group[0], sstart[group[0]]
                self.add(srank[last], last, arrive, end)
                self.skew_floor = group[1]
                self.crossings += 1
                rank, t = srank[last], arrive
                g = back[self._position(last, rank)]
                continue
            self.add(rank, p, start, end)
            if group is not None and sstart[group[0]] == start:
                self.skew_floor = group[1]
            t, g = start, back[g]
