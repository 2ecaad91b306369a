"""The text form of a report and of a diff (times printed in us, bytes in MiB)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["format_report", "format_diff", "source_notes", "us"]


def us(ns: float | int | None) -> str:
    """Nanoseconds as microseconds with one decimal."""
    return "-" if ns is None else f"{ns / 1000:,.1f}"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def format_report(d: dict[str, Any], top: int = 10) -> str:
    """Human-readable text of a report's data."""
    fin = d["finish_ns"]
    t = d["totals"]
    n = max(len(d["ranks"]), 1)
    lines = [f"step time {us(fin)} us over {d['nranks']} rank(s), {d['spans']} spans (times in us)"]
    busy = sum(r["finish_ns"] for r in d["ranks"])
    lines.append("time per rank, mean:  " + "  ".join(
        f"{k} {us(t[k + '_ns'] / n)} ({_pct(t[k + '_ns'], busy).strip()})"
        for k in ("compute", "exposed_comm", "exposed_mem", "idle")))
    lines.append(f"overlap of compute and communication {us(t['overlap_ns'] / n)} us per rank; "
                 f"waiting for slower peers {us(t['skew_ns'] / n)} us per rank")
    cp = d["critical_path"]
    cats = cp["ns_by_category"]
    lines.append(f"critical path ({cp['length']} operations, {cp['crossings']} rank crossings): "
                 + ", ".join(f"{k[:-3]} {us(v)} ({_pct(v, fin).strip()})" for k, v in cats.items()))
    for row in cp["top"][:5]:
        lines.append(f"  {row['name'][:48]:<48} {row['kind']:<10} {row['category']:<12} {us(row['ns']):>12}")
    if d["stragglers"]:
        lines.append("stragglers (more than the other ranks' median):")
        for s in d["stragglers"][:top]:
            lines.append(f"  rank {s['rank']:<6} {s['metric']:<11} {us(s['value_ns']):>12} vs "
                         f"{us(s['others_median_ns'])} (+{us(s['excess_ns'])} us, +{s['excess_pct']}%)")
    else:
        lines.append("stragglers: none (no rank's finish or compute exceeds the others' median by 10%)")
    v = d["variance"].get("finish_ns")
    if v:
        lines.append(f"finish over ranks: min {us(v['min'])} max {us(v['max'])} std {us(v['std'])} (cv {v['cv']})")
    lines.append("top operators:                                     kind        count     total_us   share")
    for o in d["top_operators"][:top]:
        lines.append(f"  {o['name'][:48]:<48} {o['kind']:<10} {o['count']:>7} {us(o['total_ns']):>12} "
                     f"{100 * o['share']:6.1f}%")
    if d["collectives"]:
        lines.append("communication by kind and group:          count        MiB     total_us      wait_us   GB/s")
        for c in d["collectives"][:top]:
            bw = "-" if c["algbw_GBps"] is None else f"{c['algbw_GBps']:.2f}"
            lines.append(f"  {c['collective']:<16} {c['group'][:16]:<16} {c['count']:>8} {c['bytes'] / 2**20:>10.2f} "
                         f"{us(c['total_ns']):>12} {us(c['wait_ns']):>12} {bw:>6}")
    m = d["memory"]
    if m["count"]:
        lines.append(f"memory: {m['count']} operations, {m['bytes'] / 2**20:.2f} MiB, {us(m['total_ns'])} us")
    for w in d["what_if"]:
        line = (f"what if {w['target']} x{w['factor']:g} faster: {us(w['estimated_finish_ns'])} us "
                f"({w['estimated_change_pct']:+.1f}%, from the critical path)")
        if w.get("resimulated_finish_ns") is not None:
            line += f"; re-simulated {us(w['resimulated_finish_ns'])} us ({w['resimulated_with']})"
        lines.append(line)
    lines += [f"note: {n}" for n in source_notes(d)]
    return "\n".join(lines)


def source_notes(d: Mapping[str, Any]) -> list[str]:
    """The notes of the run a report's data came from (defaults it fell back on, ...)."""
    source = d.get("source")
    return list(source.get("notes") or []) if isinstance(source, dict) else []


def format_diff(d: dict[str, Any]) -> str:
    """Human-readable text of a diff's data."""
    lines = [f"A: {d['a']['source']}", f"B: {d['b']['source']}",
             f"{'metric':<28} {'A':>14} {'B':>14} {'delta':>14} {'ratio':>8}"]
    for name, m in d["metrics"].items():
        ratio = "-" if m["ratio"] is None else f"{m['ratio']:.3f}"
        lines.append(f"{name:<28} {m['a']:>14} {m['b']:>14} {m['delta']:>+14} {ratio:>8}")
    lines += [f"note: {n}" for n in d.get("notes", [])]
    if d["operators"]:
        lines.append("operators with the largest change (total ns over ranks):")
        for o in d["operators"][:10]:
            ratio = "-" if o["ratio"] is None else f"{o['ratio']:.3f}"
            lines.append(f"  {o['name'][:44]:<44} {o['kind']:<10} {o['a']:>12} {o['b']:>12} {o['delta']:>+12} "
                         f"{ratio:>7}")
    return "\n".join(lines)
