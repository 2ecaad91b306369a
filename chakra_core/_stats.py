"""Statistics of a trace set: node counts by type, collectives by kind with bytes, per-rank
totals and the critical-path length by ``duration_micros``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from ._attrs import get_int
from ._graph import RankGraph
from ._schema import COMM_TYPE_NAMES, NodeType
from ._traceset import TraceSet

__all__ = ["compute_stats", "format_stats"]

_COMM = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)


def compute_stats(traces: TraceSet, critical_path: bool = True,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Stream every rank once and return the statistics as JSON-able data.

    ``progress(done, total)`` is called after each rank.

    Keys: ``nodes`` (total), ``ranks`` (count), ``by_type`` {type: count}, ``collectives``
    {kind: {"count", "bytes"}}, ``per_rank`` [{rank, nodes, compute_us, comm_bytes,
    critical_path_us, critical_path_nodes}], ``critical_path_us`` (the longest over ranks).
    """
    by_type: Counter = Counter()
    colls: dict[str, dict[str, int]] = {}
    per_rank = []
    for rt in traces:
        tally = {"compute_us": 0, "comm_bytes": 0}

        def visit(n, tally=tally):
            t = n.type
            by_type[NodeType(t).name if 0 <= t <= 7 else str(t)] += 1
            if t == NodeType.COMP_NODE:
                tally["compute_us"] += n.duration_micros
            elif t in _COMM:
                size = get_int(n, "comm_size", 0) or 0
                tally["comm_bytes"] += size
                if t == NodeType.COMM_COLL_NODE:
                    ct = get_int(n, "comm_type", -1)
                    kind = COMM_TYPE_NAMES.get(ct, f"UNKNOWN_{ct}")
                elif t == NodeType.COMM_SEND_NODE:
                    kind = "SEND"
                else:
                    kind = "RECV"
                c = colls.setdefault(kind, {"count": 0, "bytes": 0})
                c["count"] += 1
                c["bytes"] += size

        g = RankGraph.build(rt.batches(), visit=visit)
        row = {"rank": rt.rank, "nodes": len(g), **tally}
        if critical_path:
            length, path = g.critical_path()
            row["critical_path_us"] = length
            row["critical_path_nodes"] = len(path)
        per_rank.append(row)
        if progress:
            progress(len(per_rank), len(traces))
    out: dict[str, Any] = {
        "nodes": sum(r["nodes"] for r in per_rank),
        "ranks": len(per_rank),
        "by_type": dict(sorted(by_type.items())),
        "collectives": dict(sorted(colls.items())),
        "per_rank": per_rank,
    }
    if critical_path:
        out["critical_path_us"] = max((r["critical_path_us"] for r in per_rank), default=0)
    return out


def format_stats(s: dict[str, Any]) -> str:
    """Human-readable text of :func:`compute_stats`' result."""
    lines = [f"{s['nodes']} nodes in {s['ranks']} rank(s)"]
    if "critical_path_us" in s:
        lines.append(f"critical path (longest rank, by duration_micros): {s['critical_path_us']} us")
    lines.append("nodes by type:")
    lines += [f"  {k:<16} {v:>12}" for k, v in s["by_type"].items()]
    if s["collectives"]:
        lines.append("communication by kind:            count          bytes")
        lines += [f"  {k:<24} {v['count']:>12} {v['bytes']:>14}" for k, v in s["collectives"].items()]
    lines.append("per rank:   rank        nodes   compute_us     comm_bytes  critical_path_us")
    for r in s["per_rank"]:
        lines.append(f"  {r['rank']:>12} {r['nodes']:>12} {r['compute_us']:>12} {r['comm_bytes']:>14}"
                     f"  {r.get('critical_path_us', '-'):>16}")
    return "\n".join(lines)
