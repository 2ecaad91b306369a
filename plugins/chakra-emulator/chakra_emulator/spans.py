"""The measured spans of a replay as the core's :class:`chakra_core.Spans`, from which the
Result's per-rank rows (:func:`chakra_core.breakdown`), its critical path
(:func:`chakra_core.critical_path`) and its timeline (:func:`chakra_core.write_timeline`) come,
as the simulator's do."""

from __future__ import annotations

from typing import Any

from chakra_core import CommType, SpanBuilder, Spans, breakdown

from .measure import Measured, category
from .plan import COLL, COMP, MEM, RECV, SEND, Plan

__all__ = ["build_spans", "rank_rows"]

_SPAN_KIND = {COLL: "collective", SEND: "send", RECV: "recv", MEM: "memory"}


def _kind(plan: Plan, i: int) -> str:
    k = plan.kind[i]
    if k == COMP:
        return "cpu" if category(plan, i) == "cpu" else "compute"
    return _SPAN_KIND.get(k, "other")


def build_spans(measured: list[Measured], results: list[dict[str, Any]]) -> Spans:
    """One span per executed node of every rank (ns from the run's origin) on the tracks cpu /
    compute / comm / other, with the bytes and group the workers observed, the peer of a message,
    and ``match``: the k-th collective a rank issued on a group is the k-th of every member; the
    k-th message from one rank to another with one tag and size pairs with the k-th receive."""
    b = SpanBuilder(nranks=len(measured))
    matches: dict[tuple[Any, ...], int] = {}
    for m, r in zip(measured, results):
        plan = m.plan
        seq: dict[tuple[Any, ...], int] = {}
        for i in m.order:
            seen = r["observed"].get(i) or {}
            k, spec = plan.kind[i], plan.spec[i] or {}
            key: tuple[Any, ...] | None = None
            nbytes, group, peer, ct = 0, "", -1, -1
            if k == COLL:
                pg = spec.get("pg", "")
                n = seq[("coll", pg)] = seq.get(("coll", pg), -1) + 1
                key = ("coll", pg, n)
                nbytes, group, ct = int(seen.get("bytes", 0)), pg, int(CommType[spec["type"]])
            elif k in (SEND, RECV):
                peer = int(spec["peer"])
                pair = (plan.rank, peer) if k == SEND else (peer, plan.rank)
                wire = ("p2p", *pair, int(spec["tag"]), int(spec["size"]))
                side = wire + (k,)
                n = seq[side] = seq.get(side, -1) + 1
                key = wire + (n,)
                nbytes = int(seen.get("bytes", 0))
            elif k == MEM:
                nbytes = int(spec.get("bytes", 0))
            b.add(plan.rank, category(plan, i), m.start[i], m.end[i] - m.start[i],
                  plan.names[i] or f"node {plan.ids[i]}", _kind(plan, i), node_id=plan.ids[i], bytes=nbytes,
                  group=group, peer=peer, match=matches.setdefault(key, len(matches)) if key else -1,
                  comm_type=ct)
    return b.build()


def rank_rows(spans: Spans, plans: list[Plan]) -> list[dict[str, Any]]:
    """The core's breakdown per rank (ns; compute + exposed comm + exposed memory + idle =
    finish) plus ``nodes``; a rank without nodes finishes at 0."""
    rows = {row["rank"]: row for row in breakdown(spans, [plan.rank for plan in plans])}
    out = []
    for plan in plans:
        row = rows[plan.rank]
        row.pop("simulated_as", None)
        row["nodes"] = len(plan)
        out.append(row)
    return out
