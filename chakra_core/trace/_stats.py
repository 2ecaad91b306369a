"""Statistics of a trace set: node counts by type, collectives by kind with bytes, per-rank
totals and each rank's longest dependency path by recorded ``duration_micros``.

That path is within one rank and takes a collective's recorded duration as it is (waits for
peers included, no network model): the cross-rank critical path of a timed run is
:func:`chakra_core.critical_path`, shown by ``chakra report``."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from chakra_core.base._errors import TraceFormatError
from chakra_core.base._jitchoice import compiled_worthwhile
from chakra_core.io._schema import COMM_TYPE_NAMES, Node, NodeType
from chakra_core.trace._attrs import get_int
from chakra_core.trace._colstats import RankTally, tally_columns
from chakra_core.trace._graph import DepGraph, PathOverflow, PathStream
from chakra_core.trace._pathkernel import PathRuns
from chakra_core.trace._pathsorted import SortedPath
from chakra_core.trace._traceset import FileRank, RankTrace, TraceSet

__all__ = ["compute_stats", "format_stats"]

#: a set of ``.et`` files from this size on is read as columns (compiled loops, numba): below it
#: the node-by-node read costs less than loading numba
COLUMNS_FROM = 8 << 20
_COMM = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)


def compute_stats(traces: TraceSet, longest_path: bool = True,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Stream every rank once and return the statistics as JSON-able data.

    ``progress(done, total)`` is called after each rank.

    Keys: ``nodes`` (total), ``ranks`` (count), ``by_type`` {type: count}, ``unknown_types``
    {type number: count} (node types this schema does not know, a newer one's), ``collectives``
    {kind: {"count", "bytes"}}, ``per_rank`` [{rank, nodes, compute_us, comm_bytes,
    longest_path_us, longest_path_nodes}] (the rank's longest dependency path by recorded
    durations and its node count; ``longest_path_left_out``: the nodes on or behind a dependency
    cycle, left out of it, when there are any), ``longest_path_us`` (the longest over ranks; both
    absent unless ``longest_path``).
    """
    by_type: Counter = Counter()
    unknown: Counter = Counter()
    colls: dict[str, dict[str, int]] = {}
    per_rank = []
    columns = compiled_worthwhile((rt.file for rt in traces if isinstance(rt, FileRank)), COLUMNS_FROM)
    for rt in traces:
        tally = _columnar(rt, longest_path) if columns else None
        if tally is None:
            tally = _objects(rt, longest_path)
        by_type.update(tally.by_type)
        unknown.update(tally.unknown)
        for kind, c in tally.colls.items():
            into = colls.setdefault(kind, {"count": 0, "bytes": 0})
            into["count"] += c["count"]
            into["bytes"] += c["bytes"]
        row: dict[str, Any] = {"rank": rt.rank, "nodes": tally.nodes, "compute_us": tally.compute_us,
                               "comm_bytes": tally.comm_bytes}
        if tally.path is not None:
            row["longest_path_us"], row["longest_path_nodes"], left_out = _path(rt, tally)
            if left_out:
                row["longest_path_left_out"] = left_out
        per_rank.append(row)
        if progress:
            progress(len(per_rank), len(traces))
    out: dict[str, Any] = {
        "nodes": sum(r["nodes"] for r in per_rank),
        "ranks": len(per_rank),
        "by_type": dict(sorted(by_type.items())),
        "unknown_types": dict(sorted(unknown.items())),
        "collectives": dict(sorted(colls.items())),
        "per_rank": per_rank,
    }
    if longest_path:
        out["longest_path_us"] = max((r["longest_path_us"] for r in per_rank), default=0)
    return out


def _columnar(rt: RankTrace, longest_path: bool) -> RankTally | None:
    """The rank's tally from its columns (:mod:`._colstats`); None for a rank held otherwise
    than in an ``.et`` file, or whose file does not read cleanly that way (the node-by-node read
    then gives the error)."""
    try:
        return tally_columns(rt, longest_path)
    except TraceFormatError:
        return None


def _objects(rt: RankTrace, longest_path: bool) -> RankTally:
    """The rank's tally from its Node objects, streamed once."""
    tally = RankTally()
    stream = PathStream() if longest_path else None
    for batch in rt.batches():
        ids, durs, deps, ptr = array("Q"), array("Q"), array("Q"), array("q", [0])
        for n in batch:
            _visit(tally, n)
            if stream is not None and stream.ok:
                ids.append(n.id)
                durs.append(n.duration_micros)
                deps.extend(n.data_deps)
                deps.extend(n.ctrl_deps)
                ptr.append(len(deps))
        if stream is not None:
            try:
                stream.add(ids, ptr, deps, durs)
            except PathOverflow as e:
                raise path_overflow(rt, int(stream.ids[e.position])) from None
    tally.path = stream
    return tally


def _visit(tally: RankTally, n: Node) -> None:
    """Count node ``n``."""
    tally.nodes += 1
    t = n.type
    if 0 <= t <= 7:
        tally.by_type[NodeType(t).name] += 1
    else:
        tally.by_type[str(t)] += 1
        tally.unknown[str(t)] += 1
    if t == NodeType.COMP_NODE:
        tally.compute_us += n.duration_micros
    elif t in _COMM:
        size = get_int(n, "comm_size", 0) or 0
        tally.comm_bytes += size
        if t == NodeType.COMM_COLL_NODE:
            ct = get_int(n, "comm_type", -1)
            kind = COMM_TYPE_NAMES.get(ct, f"UNKNOWN_{ct}")
        elif t == NodeType.COMM_SEND_NODE:
            kind = "SEND"
        else:
            kind = "RECV"
        tally.add_comm(kind, 1, size)


def _path(rt: RankTrace, tally: RankTally) -> tuple[int, int, int]:
    """The rank's longest path ``(us, nodes, nodes left out)``: streamed when the file is in a
    topological order with increasing ids, in a second pass over its columns when it is in such
    an order with ids out of order (:class:`SortedPath`), else from the rank's :class:`DepGraph`
    (a second read), which leaves out the nodes on or behind a dependency cycle."""
    stream = tally.path
    if isinstance(stream, PathRuns) and tally.overflow >= 0:
        raise path_overflow(rt, stream.id_at(tally.overflow))
    if isinstance(stream, SortedPath):
        _second_pass(rt, stream)
    tally.path = None  # its memory freed before the next rank is read, or the graph built
    if stream is not None and stream.ok:
        length, nodes = stream.result()[:2]
        return length, nodes, 0
    del stream
    durations = array("Q")
    g = DepGraph.build(rt.batches(), visit=lambda n: durations.append(n.duration_micros))
    order, left_out = g.topo_order()
    try:
        length, nodes, _ = g.longest_path(np.frombuffer(durations, dtype=np.uint64) if durations
                                           else np.zeros(0, np.uint64), order)
    except PathOverflow as e:
        raise path_overflow(rt, int(g.ids[e.position])) from None
    return length, nodes, len(left_out)


def _second_pass(rt: RankTrace, path: SortedPath) -> None:
    """Relax the rank's runs of columns into ``path`` (its ids collected), until it is not ok."""
    from chakra_core.trace._columns import column_runs  # needs numba

    path.seal()
    for cols in column_runs(rt):
        path.relax(cols.ids, cols.dep_ptr, cols.dep_ids, cols.duration_micros)
        if not path.ok:
            return


def path_overflow(rt: RankTrace, node_id: int) -> TraceFormatError:
    """The error of a path through ``rt`` whose durations sum past 2^63-1 us at node ``node_id``."""
    return TraceFormatError("the durations on a path to this node sum past 2^63-1 us "
                            "(duration_micros out of range?)", rt.label, f"node {node_id}")


def format_stats(s: dict[str, Any]) -> str:
    """Human-readable text of :func:`compute_stats`' result."""
    lines = [f"{s['nodes']} nodes in {s['ranks']} rank(s)"]
    if "longest_path_us" in s:
        lines.append(f"longest path by recorded durations: {s['longest_path_us']} us (one rank, recorded "
                     "duration_micros; the cross-rank critical path of a simulated run: chakra report)")
    lines.append("nodes by type:")
    lines += [f"  {k:<16} {v:>12}" for k, v in s["by_type"].items()]
    if s.get("unknown_types"):
        kinds = ", ".join(f"{k} ({v})" for k, v in s["unknown_types"].items())
        lines.append(f"node types this schema does not know (kept; simulators skip them): {kinds}")
    if s["collectives"]:
        lines.append("communication by kind:            count          bytes")
        lines += [f"  {k:<24} {v['count']:>12} {v['bytes']:>14}" for k, v in s["collectives"].items()]
    lines.append("per rank:   rank        nodes   compute_us     comm_bytes   longest_path_us")
    for r in s["per_rank"]:
        lines.append(f"  {r['rank']:>12} {r['nodes']:>12} {r['compute_us']:>12} {r['comm_bytes']:>14}"
                     f"  {r.get('longest_path_us', '-'):>16}")
    lines += [f"note: rank {r['rank']}: {r['longest_path_left_out']} node(s) on or behind a dependency cycle are "
              "left out of its longest path (chakra validate names the cycle)"
              for r in s["per_rank"] if r.get("longest_path_left_out")]
    return "\n".join(lines)
