"""``chakra graph``: one rank's dependency graph, or a node's neighbourhood, as DOT, SVG or GraphML.

Node kinds are drawn distinctly (shape and colour per node type); data dependencies are solid
edges, control dependencies dashed.  A whole rank is drawn only up to ``max_nodes``; larger ranks
are drawn through a neighbourhood (``around`` a node id, ``depth`` hops both ways).
"""

from __future__ import annotations

import html
import os
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from chakra_core.base._errors import ConfigError

if TYPE_CHECKING:
    from chakra_core.trace._traceset import TraceSet

__all__ = ["draw_graph", "graph_format", "GRAPH_FORMATS"]

GRAPH_FORMATS = ("dot", "svg", "graphml")

#: NodeType value -> (DOT shape, fill colour): metadata a note, memory a cylinder, compute a box
#: (lighter for CPU ops), send/receive a diamond, collective an ellipse
_STYLE = {0: ("plaintext", "#ffffff"), 1: ("note", "#d9d9d9"), 2: ("cylinder", "#a1d99b"), 3: ("cylinder", "#c7e9c0"),
          4: ("box", "#9ecae1"), 5: ("diamond", "#fdd0a2"), 6: ("diamond", "#fdae6b"), 7: ("ellipse", "#f16913")}
_CPU_FILL = "#deebf7"


def _select(g: Any, around_pos: int | None, depth: int) -> np.ndarray:
    """Positions within ``depth`` hops of ``around_pos`` (dependencies and dependents), or all."""
    n = len(g.ids)
    if around_pos is None:
        return np.arange(n, dtype=np.int64)
    cptr, cidx = g.children()
    seen = np.zeros(n, bool)
    seen[around_pos] = True
    frontier = np.array([around_pos], np.int64)
    for _ in range(depth):
        if not len(frontier):
            break
        dptr, deps = g.rows(frontier)
        ups = deps[deps >= 0]
        downs = np.concatenate([cidx[cptr[p]:cptr[p + 1]] for p in frontier.tolist()]) if len(frontier) else ups
        nxt = np.unique(np.concatenate((ups, downs)).astype(np.int64))
        nxt = nxt[~seen[nxt]]
        seen[nxt] = True
        frontier = nxt
    return np.flatnonzero(seen)


def _details(rt: Any, keep: np.ndarray) -> dict[int, dict[str, Any]]:
    """Name, type, duration and communication attributes of the nodes at positions ``keep``."""
    from chakra_core.io._schema import COMM_TYPE_NAMES
    from chakra_core.trace._attrs import NodeAttrs

    wanted = set(keep.tolist())
    out: dict[int, dict[str, Any]] = {}
    pos = 0
    for batch in rt.batches():
        for n in batch:
            if pos in wanted:
                ix = NodeAttrs(n)
                ct = ix.get_int("comm_type", None)
                out[pos] = {"id": n.id, "name": n.name, "type": n.type, "duration_micros": n.duration_micros,
                            "cpu": bool(ix.get_bool("is_cpu_op", False)), "comm_size": ix.get_int("comm_size", None),
                            "comm_type": COMM_TYPE_NAMES.get(ct, "") if ct is not None else "",
                            "pg_name": ix.get_str("pg_name", "") or ""}
            pos += 1
    return out


def _label(d: dict[str, Any]) -> str:
    from chakra_core.io._schema import NodeType

    kind = NodeType(d["type"]).name if 0 <= d["type"] <= 7 else str(d["type"])
    parts = [d["name"][:48] or f"node {d['id']}", f"#{d['id']} {kind}"]
    if d["duration_micros"]:
        parts.append(f"{d['duration_micros']} us")
    if d["comm_type"] or d["comm_size"] is not None:
        parts.append(" ".join(x for x in (d["comm_type"], f"{d['comm_size']} B" if d["comm_size"] is not None else "",
                                          f"pg {d['pg_name']}" if d["pg_name"] else "") if x))
    return "\n".join(parts)


def graph_format(output: str | os.PathLike, depth: int) -> str:
    """The drawing format ``output``'s name asks for (one of :data:`GRAPH_FORMATS`); a
    ConfigError for another name or a negative ``depth``."""
    fmt = Path(output).suffix.lstrip(".").lower()
    if fmt not in GRAPH_FORMATS:
        raise ConfigError(f"graph output {output}: the name must end in .dot, .svg or .graphml")
    if depth < 0:
        raise ConfigError(f"--depth {depth}: must be 0 or more")
    return fmt


def draw_graph(traces: TraceSet, output: str | os.PathLike, *, rank: int = 0, around: int | None = None,
               depth: int = 2, max_nodes: int = 2000) -> dict[str, Any]:
    """Draw rank ``rank``'s graph of ``traces`` (or the ``depth``-hop neighbourhood of node id
    ``around``) to ``output``: ``.dot`` (Graphviz), ``.svg`` (drawn here, layered by dependency
    depth) or ``.graphml``.  Returns ``{"path", "format", "rank", "nodes", "edges", "rank_nodes"}``."""
    from chakra_core.trace._graph import DepGraph

    out = Path(output)
    fmt = graph_format(out, depth)
    if rank not in traces.ranks:
        raise ConfigError(f"no rank {rank} in the trace set (ranks {traces.ranks[0]}..{traces.ranks[-1]})")
    rt = traces[rank]
    ndata = array("q")
    g = DepGraph.build(rt.batches(), visit=lambda n: ndata.append(len(n.data_deps)))
    around_pos = None
    if around is not None:
        hits = np.flatnonzero(g.ids == np.uint64(around))
        if not len(hits):
            raise ConfigError(f"rank {rank} has no node {around}", rt.label)
        around_pos = int(hits[0])
    keep = _select(g, around_pos, depth)
    if len(keep) > max_nodes:
        raise ConfigError(f"{len(keep)} nodes to draw, more than max_nodes={max_nodes}: draw a neighbourhood "
                          "(--around NODE --depth K) or raise --max-nodes", rt.label)
    nodes = _details(rt, keep)
    edges = _edges(g, keep, np.frombuffer(ndata, np.int64) if len(ndata) else np.zeros(0, np.int64))
    from chakra_core.io._etio import atomic_output

    writer = {"dot": _write_dot, "svg": _write_svg, "graphml": _write_graphml}[fmt]
    with atomic_output(out) as tmp:
        tmp.write_text(writer(nodes, edges, around_pos))
    return {"path": str(out), "format": fmt, "rank": rank, "nodes": len(nodes), "edges": len(edges),
            "rank_nodes": len(g.ids)}


def _edges(g: Any, keep: np.ndarray, ndata: np.ndarray) -> list[tuple[int, int, str]]:
    """``(dependency position, node position, "data"|"ctrl")`` between kept nodes."""
    inside = np.zeros(len(g.ids), bool)
    inside[keep] = True
    out = []
    for p in keep.tolist():
        lo, hi = int(g.dep_ptr[p]), int(g.dep_ptr[p + 1])
        for j in range(lo, hi):
            d = int(g.deps[j])
            if d >= 0 and inside[d]:
                out.append((d, p, "data" if j - lo < ndata[p] else "ctrl"))
    return out


def _fill(d: dict[str, Any]) -> str:
    fill = _STYLE.get(d["type"], ("box", "#ffffff"))[1]
    return _CPU_FILL if d["type"] == 4 and d["cpu"] else fill


def _write_dot(nodes: dict[int, dict[str, Any]], edges: list[tuple[int, int, str]], center: int | None) -> str:
    lines = ["digraph chakra {", '  node [style=filled, fontname="Helvetica", fontsize=10];']
    for p, d in nodes.items():
        shape = _STYLE.get(d["type"], ("box", ""))[0]
        label = _label(d).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        extra = ", penwidth=3" if p == center else ""
        lines.append(f'  n{d["id"]} [label="{label}", shape={shape}, fillcolor="{_fill(d)}"{extra}];')
    for a, b, kind in edges:
        style = "" if kind == "data" else " [style=dashed]"
        lines.append(f"  n{nodes[a]['id']} -> n{nodes[b]['id']}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _levels(nodes: dict[int, dict[str, Any]], edges: list[tuple[int, int, str]]) -> dict[int, int]:
    """Longest dependency depth of each drawn node within the drawing (a cycle's rest: level 0)."""
    level = dict.fromkeys(nodes, 0)
    indeg = dict.fromkeys(nodes, 0)
    kids: dict[int, list[int]] = {p: [] for p in nodes}
    for a, b, _k in edges:
        kids[a].append(b)
        indeg[b] += 1
    ready = [p for p, k in indeg.items() if k == 0]
    while ready:
        p = ready.pop()
        for c in kids[p]:
            level[c] = max(level[c], level[p] + 1)
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    return level


def _write_svg(nodes: dict[int, dict[str, Any]], edges: list[tuple[int, int, str]], center: int | None) -> str:
    level = _levels(nodes, edges)
    rows: dict[int, list[int]] = {}
    for p in sorted(nodes):
        rows.setdefault(level[p], []).append(p)
    w, h, gx, gy = 200, 58, 24, 46
    xy = {}
    for lv, ps in rows.items():
        for k, p in enumerate(ps):
            xy[p] = (20 + k * (w + gx), 20 + lv * (h + gy))
    width = 40 + max(len(ps) for ps in rows.values()) * (w + gx) if rows else 100
    height = 40 + (max(rows) + 1) * (h + gy) if rows else 100
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="Helvetica" '
           'font-size="10"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
           'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>']
    for a, b, kind in edges:
        (x1, y1), (x2, y2) = xy[a], xy[b]
        dash = "" if kind == "data" else ' stroke-dasharray="5,3"'
        out.append(f'<line x1="{x1 + w / 2}" y1="{y1 + h}" x2="{x2 + w / 2}" y2="{y2}" stroke="#555"{dash} '
                   'marker-end="url(#arrow)"/>')
    for p, d in nodes.items():
        x, y = xy[p]
        shape = _STYLE.get(d["type"], ("box", ""))[0]
        rx = 28 if shape == "ellipse" else 4 if shape in ("box", "note", "plaintext") else 14
        stroke = 3 if p == center else 1
        out.append(f'<g><rect x="{x}" y="{y}" width="{w}" height="{h}" rx="{rx}" fill="{_fill(d)}" stroke="#333" '
                   f'stroke-width="{stroke}"/>')
        for k, line in enumerate(_label(d).split("\n")):
            out.append(f'<text x="{x + 6}" y="{y + 14 + 12 * k}">{html.escape(line[:36])}</text>')
        out.append(f"<title>{html.escape(_label(d))}</title></g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _write_graphml(nodes: dict[int, dict[str, Any]], edges: list[tuple[int, int, str]], center: int | None) -> str:
    from chakra_core.io._schema import NodeType

    keys = [("name", "string"), ("type", "string"), ("duration_micros", "long"), ("is_cpu_op", "boolean"),
            ("comm_type", "string"), ("comm_size", "long"), ("pg_name", "string")]
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">']
    out += [f'<key id="{k}" for="node" attr.name="{k}" attr.type="{t}"/>' for k, t in keys]
    out.append('<key id="dep" for="edge" attr.name="dep" attr.type="string"/>')
    out.append('<graph id="rank" edgedefault="directed">')
    for d in nodes.values():
        vals = {"name": d["name"], "type": NodeType(d["type"]).name if 0 <= d["type"] <= 7 else str(d["type"]),
                "duration_micros": d["duration_micros"], "is_cpu_op": str(d["cpu"]).lower(),
                "comm_type": d["comm_type"], "comm_size": d["comm_size"], "pg_name": d["pg_name"]}
        data = "".join(f'<data key="{k}">{html.escape(str(v))}</data>' for k, v in vals.items()
                       if v not in (None, ""))
        out.append(f'<node id="n{d["id"]}">{data}</node>')
    for a, b, kind in edges:
        out.append(f'<edge source="n{nodes[a]["id"]}" target="n{nodes[b]["id"]}"><data key="dep">{kind}</data></edge>')
    out.append("</graph></graphml>")
    return "\n".join(out) + "\n"
