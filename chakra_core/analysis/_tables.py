"""Tables of a span set: top operators, collectives, memory traffic, stragglers, utilisation.

Every table weights a span by the number of ranks it stands for (a symmetric simulation times
one rank of each class of identical ranks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chakra_core.analysis._spans import COMM_KINDS, COMPUTE_KINDS, SPAN_KINDS, Spans
from chakra_core.io._schema import COMM_TYPE_NAMES

__all__ = ["top_operators", "collectives", "memory_traffic", "stragglers", "variance", "utilisation", "weights"]

_PERCENTILES = (50, 90)


def weights(spans: Spans) -> np.ndarray:
    """Per span, how many ranks it stands for."""
    w = np.ones(len(spans), np.int64)
    for rep, members in spans.ranks_of.items():
        w[spans.rank == rep] = len(members)
    return w


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inv = np.unique(keys, return_inverse=True)
    return uniq, inv.reshape(-1)


def top_operators(spans: Spans, n: int = 20) -> list[dict[str, Any]]:
    """The ``n`` operations (by name and kind) with the most total time over all ranks: count,
    total, mean, min, p50, p90, max (ns) and share of all operation time."""
    ops = spans.ops()
    if not len(ops):
        return []
    w = weights(spans)[ops]
    dur = spans.dur_ns[ops]
    uniq, inv = _groups(spans.name[ops].astype(np.int64) * len(SPAN_KINDS) + spans.kind[ops])
    total = np.bincount(inv, weights=dur * w).astype(np.int64)
    count = np.bincount(inv, weights=w).astype(np.int64)
    order = np.lexsort((dur, inv))
    sorted_dur = dur[order]
    starts = np.concatenate(([0], np.cumsum(np.bincount(inv))[:-1]))
    sizes = np.bincount(inv)
    grand = max(int(total.sum()), 1)
    rows = []
    for g in np.argsort(-total, kind="stable")[:n].tolist():
        lo, size = int(starts[g]), int(sizes[g])
        part = sorted_dur[lo:lo + size]
        key = int(uniq[g])
        row = {"name": spans.names[key // len(SPAN_KINDS)], "kind": SPAN_KINDS[key % len(SPAN_KINDS)],
               "count": int(count[g]), "total_ns": int(total[g]), "mean_ns": int(total[g] // max(count[g], 1)),
               "min_ns": int(part[0]), "max_ns": int(part[-1]), "share": round(int(total[g]) / grand, 4)}
        for q in _PERCENTILES:
            row[f"p{q}_ns"] = int(part[min(size - 1, (q * size) // 100)])
        rows.append(row)
    return rows


def _arrival_wait(spans: Spans, sel: np.ndarray) -> np.ndarray:
    from chakra_core.analysis._breakdown import _arrival_wait as wait

    return wait(spans)[sel]


def collectives(spans: Spans) -> list[dict[str, Any]]:
    """Communication by kind and group: count, bytes, time (total, waiting for the last member,
    and moving data), achieved bandwidth ``algbw_GBps`` (bytes per ns of data movement of the
    spans the backend timed; None when it timed none, as when every span ``replayed`` its
    recorded duration), ``replayed`` (how many spans did) and the algorithm."""
    sel = np.flatnonzero(np.isin(spans.kind, COMM_KINDS))
    if not len(sel):
        return []
    w = weights(spans)[sel]
    kind = spans.kind[sel]
    ct = spans.comm_type[sel]
    label = np.where(kind == SPAN_KINDS.index("collective"), ct, -10 - kind.astype(np.int64))
    uniq, inv = _groups(label * (len(spans.strings) + 2) + spans.group[sel] + 1)
    wait = _arrival_wait(spans, sel)
    dur = spans.dur_ns[sel]
    replayed = spans.replayed[sel] != 0
    out: list[dict[str, Any]] = []
    for g, key in enumerate(uniq.tolist()):
        m = inv == g
        code, grp = divmod(key, len(spans.strings) + 2)
        grp -= 1
        if code <= -10:
            name = SPAN_KINDS[-10 - code].upper()
        else:
            name = COMM_TYPE_NAMES.get(code, "COLLECTIVE" if code < 0 else f"UNKNOWN_{code}")
        nbytes = int((spans.bytes[sel][m] * w[m]).sum())
        total = int((dur[m] * w[m]).sum())
        waited = int((wait[m] * w[m]).sum())
        algos = sorted({spans.strings[a] for a in spans.algorithm[sel][m].tolist() if a >= 0})
        out.append({"collective": name, "group": spans.string(grp) or ("p2p" if code <= -10 else "all"),
                    "count": int(w[m].sum()), "bytes": nbytes, "total_ns": total, "wait_ns": waited,
                    "transfer_ns": total - waited,
                    "algbw_GBps": _modelled_bandwidth(spans.bytes[sel], dur - wait, w, m & ~replayed),
                    "replayed": int(w[m & replayed].sum()), "algorithm": "; ".join(algos)})
    out.sort(key=lambda r: -int(r["total_ns"]))
    return out


def _modelled_bandwidth(nbytes: np.ndarray, moving_ns: np.ndarray, w: np.ndarray, m: np.ndarray) -> float | None:
    """Bytes per ns (GB/s) of data movement over the rows ``m`` (weighted by ``w``); None when
    they moved nothing or there are none."""
    moving = int((moving_ns[m] * w[m]).sum())
    return round(int((nbytes[m] * w[m]).sum()) / moving, 3) if moving > 0 else None


def memory_traffic(spans: Spans) -> dict[str, Any]:
    """Memory operations: count, bytes, time (ns) and bandwidth over all ranks."""
    sel = spans.kind == SPAN_KINDS.index("memory")
    w = weights(spans)[sel]
    nbytes = int((spans.bytes[sel] * w).sum())
    total = int((spans.dur_ns[sel] * w).sum())
    return {"count": int(w.sum()), "bytes": nbytes, "total_ns": total,
            "GBps": round(nbytes / total, 3) if total else None}


def stragglers(rows: list[dict[str, Any]], threshold: float = 0.1,
               roles: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """Ranks whose finish or compute time exceeds the median of the other ranks of the same role
    (``roles``: ``{rank: role}``, all one role when None) by more than ``threshold`` (a
    fraction), with by how much (ns and percent) and the role, the largest first.  A rank alone
    in its role is not judged: a structural difference is not slowness."""
    out: list[dict[str, Any]] = []
    by_role: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by_role.setdefault((roles or {}).get(r["rank"], 0), []).append(r)
    for role, members in by_role.items():
        for s in _stragglers_among(members, threshold):
            out.append({**s, "role": role, "role_ranks": len(members)})
    out.sort(key=lambda s: -s["excess_ns"])
    return out


def _stragglers_among(rows: list[dict[str, Any]], threshold: float) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if len(rows) < 2:
        return out
    for metric in ("finish_ns", "compute_ns"):
        values = np.array([r[metric] for r in rows], np.float64)
        order = np.sort(values)
        for r, v in zip(rows, values.tolist()):
            k = int(np.searchsorted(order, v))
            others = np.delete(order, k)
            med = float(np.median(others))
            if v > med * (1 + threshold) and v - med >= 1:
                out.append({"rank": r["rank"], "metric": metric, "value_ns": int(v), "others_median_ns": int(med),
                            "excess_ns": int(v - med), "excess_pct": round(100 * (v - med) / med, 1) if med else None})
    return out


def variance(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Spread over ranks of finish and compute time: min, max, mean, standard deviation (ns) and
    coefficient of variation."""
    out = {}
    for metric in ("finish_ns", "compute_ns", "exposed_comm_ns", "idle_ns"):
        v = np.array([r[metric] for r in rows], np.float64)
        if not len(v):
            continue
        mean = float(v.mean())
        out[metric] = {"min": int(v.min()), "max": int(v.max()), "mean": round(mean, 1),
                       "std": round(float(v.std()), 1), "cv": round(float(v.std()) / mean, 4) if mean else 0.0}
    return out


def _busy_until(start: np.ndarray, end: np.ndarray, w: np.ndarray, t: np.ndarray) -> np.ndarray:
    """At each time of ``t``: the weighted busy time of the intervals up to it,
    sum of w * (min(t, end) - start) over the intervals started before t."""
    so, eo = np.argsort(start), np.argsort(end)
    s, ws = start[so].astype(np.float64), w[so].astype(np.float64)
    e, we = end[eo].astype(np.float64), w[eo].astype(np.float64)
    cs, cws = np.concatenate(([0.0], np.cumsum(s * ws))), np.concatenate(([0.0], np.cumsum(ws)))
    ce, cwe = np.concatenate(([0.0], np.cumsum(e * we))), np.concatenate(([0.0], np.cumsum(we)))
    i, j = np.searchsorted(s, t, side="left"), np.searchsorted(e, t, side="left")
    tf = t.astype(np.float64)
    return (cws[i] * tf - cs[i]) - (cwe[j] * tf - ce[j])


def utilisation(spans: Spans, buckets: int = 100) -> dict[str, Any]:
    """Over ``buckets`` equal slices of the run, the share of rank time spent computing and
    communicating (0..1; concurrent operations of one rank count once at most per kind)."""
    finish = spans.finish_ns()
    if not finish:
        return {"bucket_ns": 0, "compute": [], "comm": []}
    width = max(1, -(-finish // buckets))
    edges = np.arange(buckets + 1, dtype=np.int64) * width
    nranks = max(spans.nranks, 1)
    w = weights(spans)
    out: dict[str, Any] = {"bucket_ns": int(width)}
    activity = spans.activity_kinds()  # a recorded idle gap is not compute
    for label, kinds in (("compute", COMPUTE_KINDS), ("comm", COMM_KINDS)):
        sel = np.isin(activity, kinds)
        busy = np.diff(_busy_until(spans.start_ns[sel], spans.end_ns[sel], w[sel], edges))
        out[label] = np.round(np.minimum(busy / (width * nranks), 1.0), 4).tolist()
    return out
