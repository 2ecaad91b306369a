"""The text summary of a timed run (simulator or emulator Result): breakdown, critical path,
collectives by kind, a few ranks, notes.  Times are printed in us."""

from __future__ import annotations

from typing import Any

from chakra_core.cli._common import shown_ranks

__all__ = ["print_timed_result"]


def _us(ns: float) -> str:
    return f"{ns / 1000:,.1f}"


def _collectives_by_kind(colls: list[dict[str, Any]]) -> list[tuple[str, int, int, int, int]]:
    """(kind, groups, count, bytes, total ns) per collective kind, the most time first."""
    out: dict[str, list[int]] = {}
    for c in colls:
        acc = out.setdefault(str(c.get("collective", "?")), [0, 0, 0, 0])
        acc[0] += 1
        acc[1] += int(c.get("count", 0))
        acc[2] += int(c.get("bytes", 0))
        acc[3] += int(c.get("total_ns", 0))
    rows = [(k, v[0], v[1], v[2], v[3]) for k, v in out.items()]
    return sorted(rows, key=lambda r: -r[4])


def print_timed_result(result: Any, verbose: bool = False) -> None:
    """Print what a simulator or emulator Result says; falls back to its scalar summary values
    when the rows carry no breakdown."""
    from chakra_core.cli._backend import print_result

    ranks, s = result.ranks, result.summary
    if not ranks or "idle_ns" not in ranks[0] or "finish_ns" not in s:
        print_result(result, verbose)
        return
    n = len(ranks)
    fin = s["finish_ns"]
    print(f"finish: {_us(fin)} us over {n} ranks ({result.backend}; times in us)")
    parts = ("compute", "exposed_comm", "exposed_mem", "idle")
    total = sum(r["finish_ns"] for r in ranks) or 1
    print("per rank, mean: " + ", ".join(
        f"{p.replace('_', ' ')} {_us(sum(r[p + '_ns'] for r in ranks) / n)} "
        f"({100 * sum(r[p + '_ns'] for r in ranks) / total:.1f}%)" for p in parts))
    slow = max(ranks, key=lambda r: (r["finish_ns"], -r["rank"]))
    fast = min(ranks, key=lambda r: (r["finish_ns"], r["rank"]))
    print(f"slowest rank {slow['rank']} ({_us(slow['finish_ns'])}), fastest rank {fast['rank']} "
          f"({_us(fast['finish_ns'])})")
    cp = s.get("critical_path") or {}
    if cp.get("ns_by_category"):
        cats = ", ".join(f"{k[:-3].replace('_', ' ')} {_us(v)}" for k, v in cp["ns_by_category"].items() if v)
        print(f"critical path: {cats}; {cp.get('length', 0)} operations, {cp.get('crossings', 0)} rank crossings")
        for t in cp.get("top", [])[:5]:
            print(f"  {t['name'][:50]:<50} {t['kind']:<10} {t['category']:<12} {_us(t['ns']):>12}")
    colls = _collectives_by_kind(s.get("collectives") or [])
    if colls:
        print("collectives by kind:        groups      count          MiB     total_us")
        for kind, groups, count, nbytes, ns in colls:
            print(f"  {kind:<24} {groups:>8} {count:>10} {nbytes / 2**20:>12.2f} {_us(ns):>12}")
    for r in shown_ranks(ranks, 8, verbose):
        print(f"rank {r['rank']}: finished at {_us(r['finish_ns'])}, compute {_us(r['compute_ns'])}, "
              f"exposed communication {_us(r['exposed_comm_ns'])}, idle {_us(r['idle_ns'])}")
    if result.timeline:
        print(f"timeline: {result.timeline}")
    for note in result.notes:
        print(f"note: {note}")
    print("more: chakra report (operators, stragglers, what-if), --json for everything")
