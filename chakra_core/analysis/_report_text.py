"""The text form of a report and of a diff: every number with its unit (the formatting layer
:mod:`chakra_core.base._human`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chakra_core.base._human import count, duration, percent, rate, readable, size

__all__ = ["format_report", "format_diff", "source_notes", "us"]


def us(ns: float | int | None) -> str:
    """Nanoseconds as microseconds with one decimal (the column format of fixed-width tables)."""
    return "-" if ns is None else f"{ns / 1000:,.1f}"


def _share(part: float, whole: float) -> str:
    return percent(part / whole) if whole else "-"


def _summary_lines(d: dict[str, Any]) -> list[str]:
    fin, t, n = d["finish_ns"], d["totals"], max(len(d["ranks"]), 1)
    busy = sum(r["finish_ns"] for r in d["ranks"])
    cp = d["critical_path"]
    lines = [f"step time {duration(fin)} over {count(d['nranks'])} rank(s), {count(d['spans'])} spans",
             "time per rank, mean: " + ", ".join(
                 f"{k.replace('_', ' ')} {duration(t[k + '_ns'] / n)} ({_share(t[k + '_ns'], busy)})"
                 for k in ("compute", "exposed_comm", "exposed_mem", "idle")),
             f"overlap of compute and communication {duration(t['overlap_ns'] / n)} per rank; "
             f"waiting for slower peers {duration(t['skew_ns'] / n)} per rank",
             f"critical path ({count(cp['length'])} operations, {count(cp['crossings'])} rank crossings): "
             + ", ".join(f"{k[:-3].replace('_', ' ')} {duration(v)} ({_share(v, fin)})"
                         for k, v in cp["ns_by_category"].items())]
    lines += [f"  {row['name'][:48]:<48} {row['kind']:<10} {row['category']:<12} {duration(row['ns']):>10}"
              for row in cp["top"][:5]]
    return lines


def _more(rows: list[Any], top: int) -> list[str]:
    """The line that says how many rows of a table cut to ``top`` are not shown (none when all are)."""
    return [f"  ... {count(len(rows) - top)} more (with --json)"] if len(rows) > top else []


def _pct(excess_pct: float | None) -> str:
    """``, +12.5%`` (nothing when the others' median is 0: no share of it)."""
    return "" if excess_pct is None else f", +{excess_pct}%"


def _straggler_lines(d: dict[str, Any], top: int) -> list[str]:
    if not d["stragglers"]:
        return ["stragglers: none (no rank's finish or compute exceeds the median of its role's other ranks by 10%)"]
    lines = ["stragglers (against the median of the other ranks of the same role):"]
    for s in d["stragglers"][:top]:
        lines.append(f"  rank {s['rank']:<6} role {s.get('role', 0):<3} {s['metric'].removesuffix('_ns'):<8} "
                     f"{duration(s['value_ns']):>10} vs {duration(s['others_median_ns'])} "
                     f"(+{duration(s['excess_ns'])}{_pct(s['excess_pct'])})")
    return lines + _more(d["stragglers"], top)


def _operator_lines(d: dict[str, Any], top: int) -> list[str]:
    lines = ["time by operator class (all ranks): " + ", ".join(
        f"{c['class']} {percent(c['share'])}" for c in d.get("operator_classes", []) if c["total_ns"])]
    lines.append(f"top operators (families: numbers folded):{'':<9} {'kind':<10} {'count':>9} {'total':>10} "
                 f"{'share':>7}")
    for o in d.get("operator_families", [])[:top]:
        lines.append(f"  {o['family'][:48]:<48} {o['kind']:<10} {count(o['count']):>9} {duration(o['total_ns']):>10} "
                     f"{percent(o['share']):>7}")
    return lines + _more(d.get("operator_families", []), top)


def _comm_lines(d: dict[str, Any], top: int) -> list[str]:
    if not d["collectives"]:
        return []
    lines = [f"communication by kind and group:{'':<10} {'count':>8} {'bytes':>10} {'total':>10} {'waiting':>10} "
             f"{'bandwidth':>11}  members"]
    for c in d["collectives"][:top]:
        lines.append(f"  {c['collective']:<16} {c['group'][:22]:<22} {count(c['count']):>8} {size(c['bytes']):>10} "
                     f"{duration(c['total_ns']):>10} {duration(c['wait_ns']):>10} {rate(c['algbw_GBps']):>11}  "
                     f"{c.get('group_shape', '')}")
    return lines + _more(d["collectives"], top)


def format_report(d: dict[str, Any], top: int = 10) -> str:
    """Human-readable text of a report's data (durations, sizes and shares with their units)."""
    lines = _summary_lines(d) + _straggler_lines(d, top)
    v = d["variance"].get("finish_ns")
    if v:
        lines.append(f"finish over ranks: min {duration(v['min'])}, max {duration(v['max'])}, "
                     f"std {duration(v['std'])} (cv {v['cv']})")
    lines += _operator_lines(d, top) + _comm_lines(d, top)
    m = d["memory"]
    if m["count"]:
        lines.append(f"memory: {count(m['count'])} operations, {size(m['bytes'])}, {duration(m['total_ns'])}")
    for w in d["what_if"]:
        line = (f"what if {w['target']} x{w['factor']:g} faster: {duration(w['estimated_finish_ns'])} "
                f"({w['estimated_change_pct']:+.1f}%, from the critical path)")
        if w.get("resimulated_finish_ns") is not None:
            line += f"; re-simulated {duration(w['resimulated_finish_ns'])} ({w['resimulated_with']})"
        if w.get("note"):
            line += f" ({w['note']})"
        lines.append(line)
    lines += [f"note: {n}" for n in (*d.get("notes", ()), *source_notes(d))]
    return "\n".join(lines)


def _metric(name: str, v: Any) -> str:
    if v is None:
        return "-"
    if name.endswith("_ns"):
        return duration(v)
    if name.endswith("bytes"):
        return size(v)
    return count(v) if isinstance(v, int) else f"{v:,.4g}"


def source_notes(d: Mapping[str, Any]) -> list[str]:
    """The notes of the run a report's data came from (defaults it fell back on, ...)."""
    source = d.get("source")
    return list(source.get("notes") or []) if isinstance(source, dict) else []


def format_diff(d: dict[str, Any]) -> str:
    """Human-readable text of a diff's data."""
    lines = ["A:"] + readable(d["a"]["source"] if isinstance(d["a"]["source"], dict) else {"source": d["a"]["source"]},
                              "  ")
    lines += ["B:"] + readable(d["b"]["source"] if isinstance(d["b"]["source"], dict) else {"source": d["b"]["source"]},
                               "  ")
    lines.append(f"{'metric':<28} {'A':>12} {'B':>12} {'B - A':>12} {'B / A':>8}")
    for name, m in d["metrics"].items():
        ratio = "-" if m["ratio"] is None else f"{m['ratio']:.3f}"
        delta = _metric(name, m["delta"])
        lines.append(f"{name.removesuffix('_ns'):<28} {_metric(name, m['a']):>12} {_metric(name, m['b']):>12} "
                     f"{('+' if m['delta'] and m['delta'] > 0 else '') + delta:>12} {ratio:>8}")
    lines += [f"note: {n}" for n in d.get("notes", [])]
    if d["operators"]:
        lines.append("operators with the largest change (total time over ranks):")
        for o in d["operators"][:10]:
            ratio = "-" if o["ratio"] is None else f"{o['ratio']:.3f}"
            lines.append(f"  {o['name'][:44]:<44} {o['kind']:<10} {duration(o['a']):>10} {duration(o['b']):>10} "
                         f"{('+' if o['delta'] > 0 else '') + duration(o['delta']):>11} {ratio:>7}")
    return "\n".join(lines)
