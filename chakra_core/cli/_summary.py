"""The text summary of a timed run (simulator or emulator Result): breakdown, critical path,
collectives by kind, a few ranks, notes; every number with its unit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chakra_core.base._human import count, duration, percent, size
from chakra_core.cli._common import shown_ranks

__all__ = ["print_timed_result"]


def _spread(ranks: list[dict[str, Any]]) -> str:
    """Which rank finishes last and first, or that they all finish together."""
    slow = max(ranks, key=lambda r: (r["finish_ns"], -r["rank"]))
    fast = min(ranks, key=lambda r: (r["finish_ns"], r["rank"]))
    if slow["finish_ns"] == fast["finish_ns"]:
        return f"every rank finishes at {duration(slow['finish_ns'])}"
    return (f"slowest rank {slow['rank']} ({duration(slow['finish_ns'])}), fastest rank {fast['rank']} "
            f"({duration(fast['finish_ns'])})")


def _collectives_by_kind(colls: Any) -> list[tuple[str, int, int, int, int | None]]:
    """(kind, groups, count, bytes, total ns or None when untimed) per collective kind, the most
    time first; ``colls`` is a simulator's list of rows (per kind and group, a group's modelled
    and replayed collectives apart) or an emulator's ``{kind: {count, bytes}}`` (what it
    observed, untimed)."""
    if isinstance(colls, Mapping):
        colls = [{"collective": kind, **row} for kind, row in colls.items() if isinstance(row, Mapping)]
    out: dict[str, list[int]] = {}
    groups: dict[str, set[str]] = {}
    for c in colls:
        kind = str(c.get("collective", "?"))
        groups.setdefault(kind, set()).add(str(c.get("group", "")))
        acc = out.setdefault(kind, [0, 0, 0])
        acc[0] += int(c.get("count", 0))
        acc[1] += int(c.get("bytes", 0))
        acc[2] += int(c.get("total_ns", 0))
    timed = any("total_ns" in c for c in colls)
    rows = [(k, len(groups[k]), v[0], v[1], v[2] if timed else None) for k, v in out.items()]
    return sorted(rows, key=lambda r: -(r[4] or 0))


def print_timed_result(result: Any, verbose: bool = False) -> None:
    """Print what a simulator or emulator Result says; falls back to its scalar summary values
    when the rows carry no breakdown."""
    from chakra_core.cli._backend import print_result

    ranks, s = result.ranks, result.summary
    if not ranks or "idle_ns" not in ranks[0] or "finish_ns" not in s:
        print_result(result, verbose)
        return
    n = len(ranks)
    print(f"finish: {duration(s['finish_ns'])} over {count(n)} ranks ({result.backend})")
    parts = ("compute", "exposed_comm", "exposed_mem", "idle")
    total = sum(r["finish_ns"] for r in ranks) or 1
    print("per rank, mean: " + ", ".join(
        f"{p.replace('_', ' ')} {duration(sum(r[p + '_ns'] for r in ranks) / n)} "
        f"({percent(sum(r[p + '_ns'] for r in ranks) / total)})" for p in parts))
    print(_spread(ranks))
    cp = s.get("critical_path") or {}
    if cp.get("ns_by_category"):
        cats = ", ".join(f"{k[:-3].replace('_', ' ')} {duration(v)}" for k, v in cp["ns_by_category"].items() if v)
        print(f"critical path: {cats}; {count(cp.get('length', 0))} operations, "
              f"{count(cp.get('crossings', 0))} rank crossings")
        for t in cp.get("top", [])[:5]:
            print(f"  {t['name'][:50]:<50} {t['kind']:<10} {t['category']:<12} {duration(t['ns']):>10}")
    colls = _collectives_by_kind(s.get("collectives") or [])
    if colls:
        print(f"collectives by kind:{'':<9} {'groups':>6} {'count':>10} {'bytes':>10} {'total':>10}")
        for kind, groups, calls, nbytes, ns in colls:
            total = "-" if ns is None else duration(ns)
            print(f"  {kind:<26} {groups:>6} {count(calls):>10} {size(nbytes):>10} {total:>10}")
    for r in shown_ranks(ranks, 8, verbose):
        print(f"rank {r['rank']}: finished at {duration(r['finish_ns'])}, compute {duration(r['compute_ns'])}, "
              f"exposed communication {duration(r['exposed_comm_ns'])}, idle {duration(r['idle_ns'])}")
    if result.timeline:
        print(f"timeline: {result.timeline}")
    for note in result.notes:
        print(f"note: {note}")
    print("more: chakra report (operators, stragglers, what-if), --json for everything")
