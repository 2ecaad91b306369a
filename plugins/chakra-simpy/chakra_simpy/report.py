"""Turn a finished simulation into the Result's numbers, a critical path and a Chrome trace."""

from __future__ import annotations

import json
from pathlib import Path

from chakra_core import TraceSet, atomic_output

from .actor import Actor
from .engine import Sim
from .program import K_COLL, K_COMP, K_MEM, K_NOP, K_RECV, K_SEND

__all__ = ["rank_rows", "critical_path", "write_timeline"]

_KIND = {K_COMP: "compute", K_MEM: "memory", K_COLL: "collective", K_SEND: "send", K_RECV: "recv",
         K_NOP: "other"}
_TID = {0: "cpu", 1: "compute", 2: "comm", 3: "other"}


def rank_rows(actors: list[Actor]) -> list[dict]:
    """One dict per rank (ns): finish, compute, cpu, comm, exposed comm, overlap, idle."""
    rows = []
    for a in actors:
        base = {
            "finish_ns": a.finish,
            "compute_ns": a.compute_ns,
            "cpu_ns": a.cpu_ns,
            "comm_ns": a.comm_ns,
            "exposed_comm_ns": a.finish - a.compute_ns,
            "overlap_ns": a.overlap_ns,
            "idle_ns": a.finish - a.busy_ns,
            "nodes": len(a.prog),
            "simulated_as": a.rank,
        }
        for r in a.ranks:
            rows.append({"rank": r, **base})
    rows.sort(key=lambda row: row["rank"])
    return rows


def critical_path(sim: Sim, traces: TraceSet, limit: int = 200) -> dict:
    """Walk back from the last node to finish: through the dependency or the resource that
    made each node start, and across ranks through the member that started a collective last
    or the send that completed a receive.  Returns nodes (rank, id, name, kind, start/end ns),
    at most ``limit`` of them (the longest), and time per kind."""
    actors = sim.actors
    a = max(actors, key=lambda x: (x.finish, x.rank))
    if not len(a.prog):
        return {"nodes": [], "length": 0}
    i = max(range(len(a.prog)), key=lambda k: (a.end[k], k))
    path = []
    seen = set()
    cur: tuple[int, int] | None = (a.index, i)
    while cur is not None and cur not in seen:
        seen.add(cur)
        path.append(cur)
        x = sim.cross.get(cur)
        if x is not None:
            cur = x
            continue
        act = actors[cur[0]]
        w = act.why[cur[1]]
        cur = (cur[0], w) if w >= 0 else None
    path.reverse()
    by_kind: dict[str, int] = {}
    for ai, ni in path:
        act = actors[ai]
        k = _KIND[act.prog.kind[ni]]
        by_kind[k] = by_kind.get(k, 0) + act.end[ni] - act.start[ni]
    keep = path
    if len(path) > limit:
        top = sorted(path, key=lambda p: actors[p[0]].start[p[1]] - actors[p[0]].end[p[1]])[:limit]
        top_set = set(top)
        keep = [p for p in path if p in top_set]
    names = _names(traces, [(actors[ai].rank, actors[ai].prog.ids[ni]) for ai, ni in keep])
    nodes = []
    for ai, ni in keep:
        act = actors[ai]
        nid = act.prog.ids[ni]
        nodes.append({"rank": act.rank, "id": nid, "name": names.get((act.rank, nid), ""),
                      "kind": _KIND[act.prog.kind[ni]], "start_ns": act.start[ni], "end_ns": act.end[ni]})
    return {"length": len(path), "shown": len(nodes), "ns_by_kind": by_kind, "nodes": nodes}


def _names(traces: TraceSet, wanted: list[tuple[int, int]]) -> dict[tuple[int, int], str]:
    per_rank: dict[int, set[int]] = {}
    for r, nid in wanted:
        per_rank.setdefault(r, set()).add(nid)
    out = {}
    for r, ids in per_rank.items():
        left = set(ids)
        for batch in traces[r].batches():
            for n in batch:
                if n.id in left:
                    out[(r, n.id)] = n.name
                    left.discard(n.id)
            if not left:
                break
    return out


def write_timeline(sim: Sim, path: str | Path, traces: TraceSet) -> int:
    """Write the recorded spans as Chrome trace JSON (opens in Perfetto); times in us.

    One process per simulated rank (named with the ranks it stands for), threads cpu /
    compute / comm and one per dimension queue for collective chunk phases.  Returns the
    number of spans written.
    """
    spans = sim.timeline or []
    events = []
    actors = sim.actors
    for a in actors:
        label = f"rank {a.rank}" if len(a.ranks) == 1 else f"ranks {_span(a.ranks)} (simulated as {a.rank})"
        events.append({"ph": "M", "name": "process_name", "pid": a.rank, "args": {"name": label}})
        for tid, tname in _TID.items():
            events.append({"ph": "M", "name": "thread_name", "pid": a.rank, "tid": tid, "args": {"name": tname}})
    wanted = [(actors[ai].rank, actors[ai].prog.ids[ni]) for ai, tid, ni, _s, _d in spans
              if tid < 10]
    names = _names(traces, wanted) if len(wanted) <= 200_000 else {}
    queues = set()
    for ai, tid, what, start, dur in spans:
        a = actors[ai]
        if tid >= 10:
            label, chunk, key = what
            queues.add((a.rank, tid))
            events.append({"ph": "X", "pid": a.rank, "tid": tid, "ts": start / 1000, "dur": dur / 1000,
                           "name": f"{label} chunk {chunk}",
                           "args": {"group": key[0] or "all", "seq": key[1], "chunk": chunk}})
        else:
            nid = a.prog.ids[what]
            events.append({"ph": "X", "pid": a.rank, "tid": tid, "ts": start / 1000, "dur": dur / 1000,
                           "name": names.get((a.rank, nid)) or f"node {nid}",
                           "args": {"id": nid, "kind": _KIND[a.prog.kind[what]]}})
    for rank, tid in sorted(queues):
        events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid,
                       "args": {"name": f"dim {tid - 10} queue"}})
    path = Path(path)
    with atomic_output(path) as tmp:
        tmp.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns",
                                   "otherData": {"time_unit": "us (ts, dur)", "source": "chakra simpy"}}))
    return len(spans)


def _span(ranks: list[int]) -> str:
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks[:6])) + (" ..." if len(ranks) > 6 else "")
