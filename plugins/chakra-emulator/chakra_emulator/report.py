"""Turn measured spans into the Result's numbers, a critical path and a Chrome trace.

Spans are ns from the run's origin (the earliest rank's iteration start).  The per-rank
breakdown uses the simulator's categories: a CPU op counts as ``cpu``, an accelerator compute
op as ``compute``, a collective, message or accelerator memory node as ``comm``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chakra_core import SpanBuilder, atomic_output, breakdown

from .plan import COLL, COMP, MEM, R_COMM, R_COMP, R_CPU, RECV, SEND, Plan

__all__ = ["Spans", "rank_row", "critical_path", "write_timeline", "category"]

#: the timeline's threads, as the simulator's
_TID = {"cpu": 0, "compute": 1, "comm": 2, "other": 3}


class Spans:
    """One rank's measured iteration: ``start``/``end`` ns from the run's origin, issue order,
    and per node the node issued before it on the same resource (``previous``, -1 for none)."""

    def __init__(self, plan: Plan, start: list[int], end: list[int], order: list[int]):
        self.plan = plan
        self.start = start
        self.end = end
        self.order = order
        self.previous = [-1] * len(plan)
        last = [-1, -1, -1, -1]
        for i in order:
            r = plan.res[i]
            self.previous[i] = last[r]
            last[r] = i


def category(plan: Plan, i: int) -> str:
    """``cpu``, ``compute``, ``comm`` or ``other`` (the simulator's accounting)."""
    k, r = plan.kind[i], plan.res[i]
    if k in (COLL, SEND, RECV) or (k == MEM and r == R_COMM):
        return "comm"
    if r == R_CPU:
        return "cpu"
    if r == R_COMP:
        return "compute"
    return "other"


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _length(intervals: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in intervals)


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def rank_row(sp: Spans) -> dict[str, Any]:
    """The simulator's per-rank numbers (ns) from measured spans: the core's
    :func:`chakra_core.breakdown` (finish = compute + exposed comm + exposed memory + idle, and
    comm, cpu, accelerator, overlap, skew), plus ``nodes``."""
    plan = sp.plan
    b = SpanBuilder()
    for i in range(len(plan)):
        c = category(plan, i)
        k = plan.kind[i]
        kind = "memory" if k == MEM else "cpu" if c == "cpu" else c if c != "comm" else \
            ("send" if k == SEND else "recv" if k == RECV else "collective")
        b.add(plan.rank, c, sp.start[i], sp.end[i] - sp.start[i], "", kind)
    (row,) = [r for r in breakdown(b.build()) if r["rank"] == plan.rank] or [
        {"rank": plan.rank, "finish_ns": 0, "compute_ns": 0, "exposed_comm_ns": 0, "exposed_mem_ns": 0,
         "idle_ns": 0}]
    row.pop("simulated_as", None)
    row["nodes"] = len(plan)
    return row


def _matches(spans: list[Spans]) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Each collective (rank, position) -> every member's (rank, position) of the same call: the
    k-th collective a rank issued on a group is the k-th of every other member."""
    calls: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for sp in spans:
        seen: dict[str, int] = {}
        for i in sp.order:
            if sp.plan.kind[i] == COLL:
                pg = (sp.plan.spec[i] or {}).get("pg", "")
                k = seen.get(pg, 0)
                seen[pg] = k + 1
                calls.setdefault((pg, k), []).append((sp.plan.rank, i))
    return {m: members for members in calls.values() for m in members}


def critical_path(spans: list[Spans], limit: int = 200) -> dict[str, Any]:
    """Walk back from the last node to finish: to the dependency that ended last, or to the node
    that freed the resource when that ended later; from a collective to what held back the member
    that started it last, when that member started later.  Nodes (rank, id, name, kind, start/end ns), at most
    ``limit`` of them (the longest, in path order), and time per kind."""
    by_rank = {sp.plan.rank: sp for sp in spans}
    last = max(spans, key=lambda sp: (max(sp.end, default=0), sp.plan.rank))
    if not len(last.plan):
        return {"length": 0, "shown": 0, "ns_by_kind": {}, "nodes": []}
    matches = _matches(spans)
    cur: tuple[int, int] | None = (last.plan.rank, max(range(len(last.plan)), key=lambda k: (last.end[k], k)))
    path: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    while cur is not None and cur not in seen:
        seen.add(cur)
        path.append(cur)
        cur = _why(by_rank, matches, cur)
    path.reverse()
    by_kind: dict[str, int] = {}
    for r, i in path:
        sp = by_rank[r]
        k = sp.plan.kind[i]
        by_kind[k] = by_kind.get(k, 0) + sp.end[i] - sp.start[i]
    keep = path
    if len(path) > limit:
        top = set(sorted(path, key=lambda p: by_rank[p[0]].start[p[1]] - by_rank[p[0]].end[p[1]])[:limit])
        keep = [p for p in path if p in top]
    nodes = [{"rank": r, "id": by_rank[r].plan.ids[i], "name": by_rank[r].plan.names[i],
              "kind": by_rank[r].plan.kind[i], "start_ns": by_rank[r].start[i], "end_ns": by_rank[r].end[i]}
             for r, i in keep]
    return {"length": len(path), "shown": len(nodes), "ns_by_kind": by_kind, "nodes": nodes}


def _why(by_rank: dict[int, Spans], matches: dict[tuple[int, int], list[tuple[int, int]]],
         cur: tuple[int, int], cross: bool = True) -> tuple[int, int] | None:
    r, i = cur
    sp = by_rank[r]
    plan = sp.plan
    if cross and plan.kind[i] == COLL:
        members = matches.get(cur, [])
        latest = max(members, key=lambda m: by_rank[m[0]].start[m[1]], default=cur)
        if latest != cur and by_rank[latest[0]].start[latest[1]] > sp.start[i]:
            return _why(by_rank, matches, latest, cross=False)
    deps = [d for d in plan.deps[plan.dep_ptr[i]:plan.dep_ptr[i + 1]] if d >= 0]
    best = max(deps, key=lambda d: sp.end[d], default=None)
    prev = sp.previous[i] if plan.kind[i] in (COMP, MEM, COLL, SEND) else -1
    if prev >= 0 and sp.end[prev] <= sp.start[i] and (best is None or sp.end[prev] > sp.end[best]):
        return (r, prev)
    return (r, best) if best is not None else None


def write_timeline(spans: list[Spans], path: str | Path, max_spans: int) -> int:
    """Write the spans as Chrome trace JSON (Perfetto), in the simulator's layout: one process
    per rank, threads cpu / compute / comm / other, ``ts``/``dur`` in us.  Returns how many
    spans were written (at most ``max_spans``)."""
    events: list[dict[str, Any]] = []
    for sp in spans:
        r = sp.plan.rank
        events.append({"ph": "M", "name": "process_name", "pid": r, "args": {"name": f"rank {r}"}})
        for tname, tid in _TID.items():
            events.append({"ph": "M", "name": "thread_name", "pid": r, "tid": tid, "args": {"name": tname}})
    written = 0
    for sp in spans:
        plan = sp.plan
        for i in sp.order:
            if written >= max_spans:
                break
            events.append({"ph": "X", "pid": plan.rank, "tid": _TID[category(plan, i)], "ts": sp.start[i] / 1000,
                           "dur": (sp.end[i] - sp.start[i]) / 1000, "name": plan.names[i] or f"node {plan.ids[i]}",
                           "args": {"id": plan.ids[i], "kind": plan.kind[i]}})
            written += 1
    path = Path(path)
    with atomic_output(path) as tmp:
        tmp.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns",
                                   "otherData": {"time_unit": "us (ts, dur)", "source": "chakra emulator"}}))
    return written
