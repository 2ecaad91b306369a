"""The cross-rank critical path of a set of spans, joined at collectives and send/receive pairs.

The walk starts at the span that ends last and goes back in time.  On a rank, the predecessor
of a point in time is the operation that ended last at or before it (the gap between them is
idle).  At a collective or a receive (spans sharing a ``match``) the walk crosses to the member
that arrived last, because the operation could not complete before it: from there on, the time
of that rank's own work after the second-to-last member arrived is *skew* (the other members
were waiting for this slower peer).  The segments cover ``[0, finish]`` exactly, so the time
per category (compute, exposed communication, exposed memory, skew, idle) sums to the finish.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._spans import COMM_KINDS, COMPUTE_KINDS, SPAN_KINDS, Spans

__all__ = ["CriticalPath", "critical_path", "PATH_CATEGORIES"]

#: what each nanosecond of the critical path is spent on
PATH_CATEGORIES = ("compute", "exposed_comm", "exposed_mem", "skew", "idle")
_CATEGORY_OF_KIND = np.array([0 if k in COMPUTE_KINDS else 1 if k in COMM_KINDS else
                              2 if k == SPAN_KINDS.index("memory") else 4 for k in range(len(SPAN_KINDS))])
_IDLE, _SKEW = 4, 3


@dataclass
class CriticalPath:
    """The segments of the path in time order: ``rank``, ``span`` (-1 for idle time),
    ``start_ns``, ``end_ns`` and ``category`` (an index into :data:`PATH_CATEGORIES`)."""

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
        dur = self.end_ns - self.start_ns
        return {f"{name}_ns": int(dur[self.category == k].sum()) for k, name in enumerate(PATH_CATEGORIES)}

    def ns_by_rank(self) -> dict[int, int]:
        """Time (ns) of the path spent on each rank (idle included)."""
        dur = self.end_ns - self.start_ns
        out: dict[int, int] = {}
        for r, d in zip(self.rank.tolist(), dur.tolist()):
            out[r] = out.get(r, 0) + d
        return dict(sorted(out.items()))

    def top(self, spans: Spans, n: int = 10) -> list[dict[str, Any]]:
        """The ``n`` operations (by name and kind) with the most time on the path."""
        has = self.span >= 0
        if not has.any():
            return []
        idx = self.span[has]
        dur = (self.end_ns - self.start_ns)[has]
        cat = self.category[has]
        keys: dict[tuple[str, str, str], list[int]] = {}
        for i, d, c in zip(idx.tolist(), dur.tolist(), cat.tolist()):
            key = (spans.names[spans.name[i]], SPAN_KINDS[spans.kind[i]], PATH_CATEGORIES[c])
            acc = keys.setdefault(key, [0, 0])
            acc[0] += d
            acc[1] += 1
        rows = sorted(keys.items(), key=lambda kv: -kv[1][0])[:n]
        return [{"name": k[0], "kind": k[1], "category": k[2], "ns": v[0], "segments": v[1]} for k, v in rows]

    def weighted_ns(self, spans: Spans, kinds: tuple[str, ...] = (), names: tuple[str, ...] = ()) -> int:
        """Time (ns) of the path in spans of the given kinds or names (skew time excluded)."""
        has = (self.span >= 0) & (self.category != _SKEW)
        idx = self.span[has]
        sel = np.isin(spans.kind[idx], [SPAN_KINDS.index(k) for k in kinds])
        if names:
            wanted = [i for i, nm in enumerate(spans.names) if nm in set(names)]
            sel |= np.isin(spans.name[idx], wanted)
        return int((self.end_ns - self.start_ns)[has][sel].sum())

    def to_dict(self, spans: Spans, limit: int = 200) -> dict[str, Any]:
        """JSON-able form: totals, time per category and rank, top contributors, and the operations
        on the path (``nodes``: the ``limit`` longest, in path order; ``shown`` of ``length``)."""
        nodes = self.nodes(spans)
        if limit >= 0 and len(nodes) > limit:
            keep = set(sorted(range(len(nodes)), key=lambda k: -nodes[k]["path_ns"])[:limit])
            nodes = [nd for k, nd in enumerate(nodes) if k in keep]
        by_kind: dict[str, int] = {}
        for nd in self.nodes(spans):
            by_kind[nd["kind"]] = by_kind.get(nd["kind"], 0) + nd["path_ns"]
        return {"finish_ns": self.finish_ns, "length": self.operations(), "shown": len(nodes),
                "crossings": self.crossings, "ns_by_category": self.ns_by_category(), "ns_by_kind": by_kind,
                "ns_by_rank": {str(r): v for r, v in self.ns_by_rank().items()},
                "top": self.top(spans), "nodes": nodes, "notes": self.notes}

    def operations(self) -> int:
        """How many operations (spans) the path goes through."""
        return len(set(self.span[self.span >= 0].tolist()))

    def nodes(self, spans: Spans) -> list[dict[str, Any]]:
        """The operations on the path in path order: ``rank``, ``id`` (ET node), ``name``,
        ``kind``, the span's ``start_ns``/``end_ns`` and ``path_ns`` (its time on the path)."""
        out: list[dict[str, Any]] = []
        last = -1
        for k in np.flatnonzero(self.span >= 0).tolist():
            i = int(self.span[k])
            d = int(self.end_ns[k] - self.start_ns[k])
            if i == last:
                out[-1]["path_ns"] += d
                continue
            last = i
            out.append({"rank": int(spans.rank[i]), "id": int(spans.node_id[i]), "name": spans.names[spans.name[i]],
                        "kind": SPAN_KINDS[spans.kind[i]], "start_ns": int(spans.start_ns[i]),
                        "end_ns": int(spans.end_ns[i]), "path_ns": d})
        return out


class _RankIndex:
    """The operations of one rank sorted by end time."""

    def __init__(self, spans: Spans, idx: np.ndarray):
        order = np.lexsort((spans.start_ns[idx], spans.end_ns[idx]))
        self.idx = idx[order]
        self.ends = spans.end_ns[self.idx]


def critical_path(spans: Spans) -> CriticalPath:
    """Walk the cross-rank critical path of ``spans`` (see the module docstring)."""
    ops = spans.ops()
    finish = int(spans.end_ns[ops].max()) if len(ops) else 0
    out = _Walk(spans, ops)
    if len(ops):
        ends = spans.end_ns[ops]
        last = ops[np.lexsort((spans.rank[ops], ends))[-1]]
        out.run(int(spans.rank[last]), finish)
    rev = slice(None, None, -1)
    return CriticalPath(finish, np.array(out.ranks[rev], np.int64), np.array(out.spans[rev], np.int64),
                        np.array(out.starts[rev], np.int64), np.array(out.ends[rev], np.int64),
                        np.array(out.cats[rev], np.int8), out.crossings)


class _Walk:
    def __init__(self, spans: Spans, ops: np.ndarray):
        self.s = spans
        rank = spans.rank[ops]
        order = np.argsort(rank, kind="stable")
        by_rank = ops[order]
        cuts = np.flatnonzero(np.diff(rank[order])) + 1
        self.rank_index = {int(spans.rank[p[0]]): _RankIndex(spans, p) for p in np.split(by_rank, cuts)
                           if len(p)}
        self.pos = np.zeros(len(spans), np.int64)
        for ri in self.rank_index.values():
            self.pos[ri.idx] = np.arange(len(ri.idx))
        matched = ops[(spans.match[ops] >= 0) & np.isin(spans.kind[ops], COMM_KINDS)]
        morder = matched[np.lexsort((spans.start_ns[matched], spans.match[matched]))]
        self.members = morder
        self.keys, self.first = np.unique(spans.match[morder], return_index=True)
        self.ranks: list[int] = []
        self.spans: list[int] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.cats: list[int] = []
        self.skew_floor = -1
        self.crossings = 0

    def add(self, rank: int, span: int, start: int, end: int, cat: int) -> None:
        if end <= start:
            return
        floor = self.skew_floor
        if cat != 1 and end > floor >= 0:
            cut = max(start, floor)
            self._append(rank, span, cut, end, _SKEW)
            end = cut
            if end <= start:
                return
        self._append(rank, span, start, end, cat)

    def _append(self, rank: int, span: int, start: int, end: int, cat: int) -> None:
        self.ranks.append(rank)
        self.spans.append(span)
        self.starts.append(start)
        self.ends.append(end)
        self.cats.append(cat)

    def _group(self, i: int) -> np.ndarray | None:
        m = self.s.match[i]
        if m < 0 or self.s.kind[i] not in COMM_KINDS:
            return None
        k = int(np.searchsorted(self.keys, m))
        lo = self.first[k]
        hi = self.first[k + 1] if k + 1 < len(self.first) else len(self.members)
        return self.members[lo:hi]

    def run(self, rank: int, t: int) -> None:
        s = self.s
        ri = self.rank_index[rank]
        lim = len(ri.idx)
        while True:
            k = min(int(np.searchsorted(ri.ends, t, side="right")), lim) - 1
            if k < 0:
                self.add(rank, -1, 0, t, _IDLE)
                return
            p = int(ri.idx[k])
            start, end = int(s.start_ns[p]), int(s.end_ns[p])
            self.add(rank, -1, end, t, _IDLE)
            members = self._group(p)
            if members is not None and len(members) > 1:
                last = int(members[-1])
                second = int(s.start_ns[members[-2]])
                arrive = int(s.start_ns[last])
                if start < arrive < end and int(s.rank[last]) != rank:
                    self.add(int(s.rank[last]), last, arrive, end, 1)
                    self.skew_floor = second
                    self.crossings += 1
                    rank, t = int(s.rank[last]), arrive
                    ri = self.rank_index[rank]
                    lim = int(self.pos[last])
                    continue
                self.add(rank, p, start, end, 1)
                if arrive == start:
                    self.skew_floor = second
            else:
                self.add(rank, p, start, end, int(_CATEGORY_OF_KIND[s.kind[p]]))
            t, lim = start, k
