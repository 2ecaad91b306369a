"""What the workers measured, gathered across ranks: spans from a common origin, the collectives
as the workers observed them, and per-node measured vs recorded durations."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from .plan import COLL, MEM, R_COMM, R_COMP, R_CPU, RECV, SEND, Plan

__all__ = ["Measured", "category", "rank_spans", "collectives_observed", "node_rows"]


@dataclass
class Measured:
    """One rank's measured iteration: per node ``start``/``end`` ns from the run's origin, and
    the positions of the nodes in issue order (``order``)."""

    plan: Plan
    start: list[int]
    end: list[int]
    order: list[int]


def category(plan: Plan, i: int) -> str:
    """The timeline track of node ``i``: ``cpu``, ``compute``, ``comm`` or ``other`` (the
    simulator's accounting: collectives, messages and memory nodes on the comm resource are comm)."""
    k, r = plan.kind[i], plan.res[i]
    if k in (COLL, SEND, RECV) or (k == MEM and r == R_COMM):
        return "comm"
    if r == R_CPU:
        return "cpu"
    if r == R_COMP:
        return "compute"
    return "other"


def rank_spans(plans: list[Plan], results: list[dict[str, Any]], k: int) -> list[Measured]:
    """Measured iteration ``k`` of every rank, in ns from the iteration's start, which every rank
    shares (one clock: ``time.monotonic_ns`` is shared by the processes of a machine)."""
    origin = min(r["iterations"][k]["t0"] for r in results)
    out = []
    for plan, r in zip(plans, results):
        it = r["iterations"][k]
        out.append(Measured(plan, [s - origin for s in it["start"]], [e - origin for e in it["end"]], it["order"]))
    return out


def collectives_observed(plans: list[Plan], results: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, int]]:
    """Per kind over all ranks, as the workers handed them to torch.distributed:
    ``{"ALL_REDUCE": {"count": N, "bytes": B}, ...}`` (sends and receives as SEND / RECV), and
    how many nodes of each kind were composed."""
    kinds: dict[str, dict[str, int]] = {}
    composed: dict[str, int] = {}
    for r in results:
        for seen in r["observed"].values():
            entry = kinds.setdefault(seen["kind"], {"count": 0, "bytes": 0})
            entry["count"] += 1
            entry["bytes"] += seen["bytes"]
            if seen["composed"]:
                composed[seen["kind"]] = composed.get(seen["kind"], 0) + 1
    return dict(sorted(kinds.items())), composed


def node_rows(plans: list[Plan], results: list[dict[str, Any]], repeats: list[list[Measured]],
              limit: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per node (at most ``limit``): rank, id, name, kind, how it ran, recorded and measured
    duration (ns, mean over repeats), start (ns) and place in the rank's issue order (``issued``)
    in the last repeat and, for communication, what the
    worker observed; and a summary: measured/recorded time in total and per kind of run."""
    rows: list[dict[str, Any]] = []
    per_how: dict[str, list[int]] = {}
    for plan, r in zip(plans, results):
        rank = plan.rank
        issued = [0] * len(plan)
        for k, i in enumerate(repeats[-1][rank].order):
            issued[i] = k
        for i in range(len(plan)):
            measured = int(statistics.fmean(rep[rank].end[i] - rep[rank].start[i] for rep in repeats))
            how = r["how"][i]
            acc = per_how.setdefault(how, [0, 0, 0])
            acc[0] += 1
            acc[1] += plan.dur_ns[i]
            acc[2] += measured
            if len(rows) >= limit:
                continue
            row = {"rank": rank, "id": plan.ids[i], "name": plan.names[i], "kind": plan.kind[i], "how": how,
                   "trace_ns": plan.dur_ns[i], "measured_ns": measured, "start_ns": repeats[-1][rank].start[i],
                   "issued": issued[i]}
            seen = r["observed"].get(i)
            if seen is not None:
                row["observed"] = seen
                if plan.kind[i] == COLL:
                    row["composed"] = seen["composed"]
            rows.append(row)
    text = {how: {"nodes": n, "trace_ns": t, "measured_ns": m, "ratio": (m / t) if t else None}
            for how, (n, t, m) in sorted(per_how.items())}
    return rows, text
