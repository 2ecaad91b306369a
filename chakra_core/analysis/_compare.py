"""``chakra compare A B``: how faithfully trace set B reproduces trace set A.

Both sets are read once, rank by rank.  Nodes are compared by *kind*: their node type, the
collective type of a collective and ``cpu`` for CPU operations (names are not compared: a
synthesized or obfuscated set has none of the source's).  The report (JSON-able; see
docs/synth.md for every key):

- ``kinds``: node counts per kind and ``histogram_distance``, the total variation distance
  between the two kind frequency distributions (0: the same mix, 1: disjoint);
- a set with no nodes has no kind mix and no degree sample: ``histogram_distance``, ``max_ks``
  and the degree figures are then None (``n/a`` in the text);
- ``durations`` / ``sizes``: per kind present in both, the two-sample Kolmogorov-Smirnov
  statistic ``ks`` and the Wasserstein-1 distance (us, bytes) of the values, with ``max_ks``,
  the largest ``ks``: None too when no kind is in both sets (no statistic to take the largest
  of; ``histogram_distance`` is then 1), which the text says;
- ``graph``: per set the largest ``depth`` (nodes on the longest path), ``width`` (most nodes on
  one level of the longest-path layering), ``critical_path_us`` (by ``duration_micros``), the
  KS statistic of the in- and out-degree distributions, and ``left_out``: the nodes on or behind
  a dependency cycle, which the figures leave out;
- ``collectives``: count and bytes per collective kind and group size, in each set;
- ``simulated``: the step time (``finish_ns``) of both sets simulated on the same system (or,
  with an emulator backend, measured replays on this machine), ``relative_error``
  (``|B - A| / A``; the text shows the signed ``(B - A) / A`` and which set is faster), the
  ``backend`` and its ``kind``; with several systems, ``sweep`` (one row per system) and
  ``spearman``, the rank correlation of the two step times over the sweep;
- ``privacy``: how far B's node sequences are from A's (:mod:`chakra_core.analysis._privacy`).

Statistics are scipy's (``ks_2samp``, ``wasserstein_distance``, ``spearmanr``), imported when
the report is computed.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chakra_core.analysis._graphview import refuse_duplicate_ids
from chakra_core.analysis._privacy import WINDOW, format_privacy, privacy
from chakra_core.base._need import need
from chakra_core.io._schema import COMM_TYPE_NAMES, NodeType
from chakra_core.trace._attrs import NodeAttrs
from chakra_core.trace._graph import DepGraph, PathOverflow
from chakra_core.trace._stats import path_overflow
from chakra_core.trace._traceset import RankTrace, TraceSet

__all__ = ["SetProfile", "profile_set", "fidelity", "format_report"]

_COMM = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
_MEM = (NodeType.MEM_LOAD_NODE, NodeType.MEM_STORE_NODE)


@dataclass
class SetProfile:
    """What the report needs of one set: values per kind, graph figures, collectives."""

    ranks: int = 0
    nodes: int = 0
    durations: dict[str, list[int]] = field(default_factory=dict)
    sizes: dict[str, list[int]] = field(default_factory=dict)
    depth: int = 0
    width: int = 0
    critical_path_us: int = 0
    in_degree: list[np.ndarray] = field(default_factory=list)
    out_degree: list[np.ndarray] = field(default_factory=list)
    collectives: dict[str, dict[str, int]] = field(default_factory=dict)
    tokens: list[list[tuple[str, int, int]]] = field(default_factory=list)
    #: nodes on or behind a dependency cycle, left out of depth, width and the critical path
    left_out: int = 0


def node_kind(n) -> str:
    """The kind a node is compared by: type, collective type, ``cpu``."""
    t = int(n.type)
    name = NodeType(t).name if 0 <= t <= 7 else str(t)
    if not len(n.attr):
        return name
    ix = NodeAttrs(n)
    if t == NodeType.COMM_COLL_NODE:
        ct = ix.get_int("comm_type", -1)
        name += ":" + COMM_TYPE_NAMES.get(ct, str(ct))
    if ix.get_bool("is_cpu_op", False):
        name += ":cpu"
    return name


class _RankVisitor:
    def __init__(self, prof: SetProfile, traces: TraceSet):
        self.prof = prof
        self.traces = traces
        self.durations = array("Q")
        self.tokens: list[tuple[str, int, int]] = []
        prof.tokens.append(self.tokens)

    def __call__(self, n) -> None:
        kind = node_kind(n)
        p = self.prof
        p.durations.setdefault(kind, []).append(int(n.duration_micros))
        self.durations.append(int(n.duration_micros))
        t = int(n.type)
        size: int | None = -1
        if t in _COMM or t in _MEM:
            ix = NodeAttrs(n)
            size = ix.get_int("comm_size", None) if t in _COMM else None
            size = ix.get_int("tensor_size", 0) if size is None else size
            p.sizes.setdefault(kind, []).append(int(size or 0))
            if t == NodeType.COMM_COLL_NODE:
                members = len(self.traces.group_members(ix.get_str("pg_name", "")))
                c = p.collectives.setdefault(f"{kind.split(':')[1]}@{members}", {"count": 0, "bytes": 0})
                c["count"] += 1
                c["bytes"] += int(size or 0)
        if len(self.tokens) < WINDOW:
            self.tokens.append((kind, int(size if size is not None else 0), int(n.duration_micros)))


def _levels(g: DepGraph, order: np.ndarray) -> np.ndarray:
    """Per position, its level: 0 for a node without dependencies, else 1 + the deepest
    dependency's (``order``: the graph's topological order; nodes left out of it keep 0)."""
    level = np.zeros(len(g), dtype=np.int64)
    ptr, deps = g.dep_ptr.tolist(), g.deps.tolist()
    lv = level.tolist()
    for i in order.tolist():
        best = -1
        for d in deps[ptr[i]:ptr[i + 1]]:
            if d >= 0 and lv[d] > best:
                best = lv[d]
        lv[i] = best + 1
    return np.asarray(lv, dtype=np.int64)


def _rank(prof: SetProfile, rt: RankTrace, traces: TraceSet) -> None:
    visit = _RankVisitor(prof, traces)
    g = DepGraph.build(rt.batches(), visit)
    refuse_duplicate_ids(g, rt)
    prof.nodes += len(g)
    if not len(g):
        return
    order, left = g.topo_order()
    prof.left_out += len(left)
    levels = _levels(g, order)[order]
    if len(levels):
        prof.depth = max(prof.depth, int(levels.max()) + 1)
        prof.width = max(prof.width, int(np.bincount(levels).max()))
    try:
        path = g.longest_path(np.frombuffer(visit.durations, dtype=np.uint64), order)[0]
    except PathOverflow as e:
        raise path_overflow(rt, int(g.ids[e.position])) from None
    prof.critical_path_us = max(prof.critical_path_us, int(path))
    prof.in_degree.append(g.in_degree())
    cptr, _kids = g.children()
    prof.out_degree.append(np.diff(cptr))


def profile_set(traces: TraceSet, progress: Callable[[int, int], None] | None = None) -> SetProfile:
    """Read every rank of ``traces`` once into a :class:`SetProfile`."""
    prof = SetProfile(ranks=len(traces))
    for k, rt in enumerate(traces):
        _rank(prof, rt, traces)
        if progress:
            progress(k + 1, len(traces))
    return prof


def _ks(va: np.ndarray, vb: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov statistic of ``va`` and ``vb`` (its p-value is not used:
    the division by zero scipy's p-value meets on one-value samples is not the user's business)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return round(float(need("scipy.stats").ks_2samp(va, vb, method="asymp").statistic), 6)


def _distances(a: dict[str, list[int]], b: dict[str, list[int]], unit: str) -> dict[str, dict[str, Any]]:
    wasserstein_distance = need("scipy.stats").wasserstein_distance
    out = {}
    for kind in sorted(set(a) & set(b)):
        va, vb = np.asarray(a[kind], dtype=np.float64), np.asarray(b[kind], dtype=np.float64)
        out[kind] = {"ks": _ks(va, vb),
                     f"wasserstein_{unit}": round(float(wasserstein_distance(va, vb)), 3),
                     "count_a": len(va), "count_b": len(vb),
                     f"mean_a_{unit}": round(float(va.mean()), 3), f"mean_b_{unit}": round(float(vb.mean()), 3)}
    return out


def _degree_ks(a: list[np.ndarray], b: list[np.ndarray]) -> dict[str, Any]:
    """KS statistic and means of two degree samples; None for a set with no nodes (no sample)."""
    va = np.concatenate(a) if a else None
    vb = np.concatenate(b) if b else None
    return {"ks": _ks(va, vb) if va is not None and vb is not None else None,
            "mean_a": None if va is None else round(float(va.mean()), 4),
            "mean_b": None if vb is None else round(float(vb.mean()), 4)}


def _histogram(a: SetProfile, b: SetProfile) -> dict[str, Any]:
    """Node counts per kind and their total variation distance (None when a set has no nodes:
    it has no kind mix to compare)."""
    ca = {k: len(v) for k, v in a.durations.items()}
    cb = {k: len(v) for k, v in b.durations.items()}
    if not a.nodes or not b.nodes:
        return {"histogram_distance": None, "a": ca, "b": cb}
    kinds = sorted(set(ca) | set(cb))
    pa = np.array([ca.get(k, 0) for k in kinds], dtype=np.float64)
    pb = np.array([cb.get(k, 0) for k in kinds], dtype=np.float64)
    tvd = 0.5 * float(np.abs(pa / pa.sum() - pb / pb.sum()).sum())
    return {"histogram_distance": round(tvd, 6), "a": ca, "b": cb}


def _max_ks(tables: Sequence[dict[str, dict[str, Any]]]) -> float | None:
    """The largest KS statistic over ``tables``; None when they have none: a set has no nodes, or
    no kind is in both sets (0 would read as "the same distributions")."""
    return max((d["ks"] for t in tables for d in t.values()), default=None)


def _relative(a: float, b: float) -> float | None:
    return round(abs(b - a) / a, 6) if a else None


def fidelity(a: SetProfile, b: SetProfile, step_times: Sequence[tuple[str | None, int, int]],
             backend: str | None = None, kind: str = "simulator") -> dict[str, Any]:
    """The report of B against A (module docstring); ``step_times`` are ``(system, A ns, B ns)``
    from ``backend``, a backend of ``kind`` (``simulator``, or ``emulator``: measured replays)."""
    durations = _distances(a.durations, b.durations, "us")
    sizes = _distances(a.sizes, b.sizes, "bytes")
    report: dict[str, Any] = {
        "a": {"ranks": a.ranks, "nodes": a.nodes}, "b": {"ranks": b.ranks, "nodes": b.nodes},
        "kinds": _histogram(a, b),
        "durations": durations, "sizes": sizes,
        "max_ks": _max_ks((durations, sizes)),
        "graph": {
            "depth": {"a": a.depth, "b": b.depth},
            "width": {"a": a.width, "b": b.width},
            "critical_path_us": {"a": a.critical_path_us, "b": b.critical_path_us,
                                 "relative_error": _relative(a.critical_path_us, b.critical_path_us)},
            "in_degree": _degree_ks(a.in_degree, b.in_degree),
            "out_degree": _degree_ks(a.out_degree, b.out_degree),
            "left_out": {"a": a.left_out, "b": b.left_out},
        },
        "collectives": {"a": dict(sorted(a.collectives.items())), "b": dict(sorted(b.collectives.items()))},
        "privacy": privacy(a.tokens, b.tokens),
    }
    if step_times:
        system, ta, tb = step_times[0]
        report["simulated"] = {"system": system, "a_ns": ta, "b_ns": tb, "relative_error": _relative(ta, tb),
                               "backend": backend, "kind": kind}
        if len(step_times) > 1:
            spearmanr = need("scipy.stats").spearmanr
            report["simulated"]["sweep"] = [{"system": s, "a_ns": x, "b_ns": y, "relative_error": _relative(x, y)}
                                            for s, x, y in step_times]
            rho = spearmanr([x for _, x, _ in step_times], [y for _, _, y in step_times]).statistic
            report["simulated"]["spearman"] = None if np.isnan(rho) else round(float(rho), 6)
    return report


def _step_source(sim: dict[str, Any], row: dict[str, Any]) -> str:
    """Where a row's step times come from: a replay measured on this machine (an emulator, which
    runs on no system description), or a simulation on the row's system."""
    if sim.get("kind") == "emulator":
        return f"step time measured by a replay ({sim.get('backend') or 'emulator'}, on this machine)"
    return f"simulated step time on {row['system'] or 'the default system'}"


def _shown(value: Any, spec: str = "") -> str:
    """``value`` formatted with ``spec``; ``n/a`` for None (a figure of a set with no nodes)."""
    return "n/a" if value is None else format(value, spec)


def _max_ks_shown(r: dict[str, Any]) -> str:
    """``max_ks`` formatted, with the reason when two sets with nodes have none (no kind in both)."""
    both = r["a"]["nodes"] and r["b"]["nodes"]
    return _shown(r["max_ks"], ".4f") + (" (no node kind is in both sets)" if r["max_ks"] is None and both else "")


def _step_change(a_ns: int, b_ns: int) -> str:
    """B's step time against A's, signed (``(B - A) / A``), and which way it goes."""
    if not a_ns:
        return "relative error n/a (A's step time is 0)"
    change = (b_ns - a_ns) / a_ns
    way = "B is faster" if change < 0 else "B is slower" if change > 0 else "the same"
    return f"relative error (B - A) / A {change:+.2%} ({way})"


def format_report(r: dict[str, Any]) -> str:
    """The report as a readable table (durations in us as the column heads say, the step with its unit)."""
    from chakra_core.base._human import duration

    lines = [f"A: {r['a']['ranks']} rank(s), {r['a']['nodes']} nodes    B: {r['b']['ranks']} rank(s), "
             f"{r['b']['nodes']} nodes",
             f"node-kind histogram distance (total variation): {_shown(r['kinds']['histogram_distance'], '.4f')}",
             f"largest KS statistic over kinds: {_max_ks_shown(r)}", ""]
    for title, key, unit in (("durations", "durations", "us"), ("sizes", "sizes", "bytes")):
        if not r[key]:
            continue
        lines.append(f"{title:<30} {'count A':>9} {'count B':>9} {'mean A':>12} {'mean B':>12} {'KS':>7} "
                     f"{'W1 (' + unit + ')':>14}")
        for kind, d in r[key].items():
            lines.append(f"  {kind:<28} {d['count_a']:>9} {d['count_b']:>9} {d['mean_a_' + unit]:>12.1f} "
                         f"{d['mean_b_' + unit]:>12.1f} {d['ks']:>7.4f} {d['wasserstein_' + unit]:>14.2f}")
        lines.append("")
    g = r["graph"]
    lines.append(f"{'graph':<30} {'A':>12} {'B':>12}")
    for key in ("depth", "width", "critical_path_us"):
        lines.append(f"  {key:<28} {g[key]['a']:>12} {g[key]['b']:>12}")
    for key in ("in_degree", "out_degree"):
        d = g[key]
        lines.append(f"  {key + ' mean':<28} {_shown(d['mean_a']):>12} {_shown(d['mean_b']):>12}   "
                     f"KS {_shown(d['ks'], '.4f')}")
    lines += [f"note: {side.upper()}: {n} node(s) on or behind a dependency cycle are left out of depth, width "
              "and critical_path_us (chakra validate names the cycle)"
              for side, n in g.get("left_out", {}).items() if n]
    lines.append("")
    ca, cb = r["collectives"]["a"], r["collectives"]["b"]
    if ca or cb:
        lines.append(f"{'collectives (kind@group size)':<30} {'count A':>9} {'count B':>9} {'bytes A':>14} "
                     f"{'bytes B':>14}")
        for k in sorted(set(ca) | set(cb)):
            x, y = ca.get(k, {"count": 0, "bytes": 0}), cb.get(k, {"count": 0, "bytes": 0})
            lines.append(f"  {k:<28} {x['count']:>9} {y['count']:>9} {x['bytes']:>14} {y['bytes']:>14}")
        lines.append("")
    if r.get("privacy"):
        lines += format_privacy(r["privacy"]) + [""]
    sim = r.get("simulated")
    if sim:
        rows = sim.get("sweep") or [sim]
        for row in rows:
            lines.append(f"{_step_source(sim, row)}: A {duration(row['a_ns'])}, "
                         f"B {duration(row['b_ns'])}, {_step_change(row['a_ns'], row['b_ns'])}")
        if "spearman" in sim:
            lines.append(f"rank correlation of the step times over the sweep (Spearman): {sim['spearman']}")
    return "\n".join(lines).rstrip()


