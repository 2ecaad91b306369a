"""``chakra graph``: one rank's dependency graph, or a node's neighbourhood, as DOT, SVG or GraphML.

Node kinds are drawn distinctly (shape and colour per node type); data dependencies are solid
edges, control dependencies dashed.  A whole rank of more than ``SUMMARY_ABOVE`` nodes is drawn as
a summary (:mod:`._graphsummary`: repeated layers folded with their counts, runs collapsed, at
most ``max_boxes`` boxes); ``summary=False`` draws every node, up to ``max_nodes``; a node's
neighbourhood (``around`` a node id, ``depth`` hops both ways) is always drawn node by node.
SVG boxes are as wide as their labels; an SVG drawing more than ``TALL_LEVELS`` levels deep is
laid out left to right, in bands of ``BAND_COLUMNS`` columns (Graphviz lays out DOT itself).
"""

from __future__ import annotations

import html
import os
import re
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from chakra_core.analysis._graphsummary import FOLD, RUN, summarise
from chakra_core.base._errors import ConfigError, TraceFormatError

if TYPE_CHECKING:
    from chakra_core.trace._traceset import TraceSet

__all__ = ["draw_graph", "graph_format", "refuse_ignored", "refuse_duplicate_ids", "GRAPH_FORMATS", "SUMMARY_ABOVE",
           "DEPTH", "MAX_BOXES", "TALL_LEVELS", "BAND_COLUMNS"]

GRAPH_FORMATS = ("dot", "svg", "graphml")
#: a whole rank with more nodes than this is drawn as a summary unless told otherwise
SUMMARY_ABOVE = 100
#: hops drawn both ways around a node, and most boxes of a summary, when not given
DEPTH, MAX_BOXES = 2, 30
#: a drawing deeper than this many levels is laid out left to right
TALL_LEVELS = 12
#: levels side by side in one band of a drawing laid out left to right
BAND_COLUMNS = 6

#: NodeType value -> (DOT shape, fill colour): metadata a note, memory a cylinder, compute a box
#: (lighter for CPU ops), send/receive a diamond, collective an ellipse
#: (a summary's folded repeats a 3-D box, its runs of nodes a folder)
_STYLE = {0: ("plaintext", "#ffffff"), 1: ("note", "#d9d9d9"), 2: ("cylinder", "#a1d99b"), 3: ("cylinder", "#c7e9c0"),
          4: ("box", "#9ecae1"), 5: ("diamond", "#fdd0a2"), 6: ("diamond", "#fdae6b"), 7: ("ellipse", "#f16913"),
          FOLD: ("box3d", "#fee391"), RUN: ("folder", "#f0f0f0")}
_CPU_FILL = "#deebf7"
#: the GraphML ``type`` of a summary's boxes
_SUMMARY_TYPES = {FOLD: "FOLDED_REPEATS", RUN: "RUN_OF_NODES"}


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


#: characters XML 1.0 does not allow in a document (control characters, U+FFFE, U+FFFF, lone surrogates)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """``text`` escaped for XML, each character XML does not allow shown as U+FFFD."""
    return html.escape(_NOT_XML.sub("\ufffd", text))


def _label(d: dict[str, Any]) -> str:
    from chakra_core.io._schema import NodeType

    if "label" in d:
        return d["label"]
    kind = NodeType(d["type"]).name if 0 <= d["type"] <= 7 else str(d["type"])
    parts = [d["name"][:48] or f"node {d['id']}", f"#{d['id']} {kind}"]
    if d["duration_micros"]:
        parts.append(f"{d['duration_micros']} us")
    if d["comm_type"] or d["comm_size"] is not None:
        parts.append(" ".join(x for x in (d["comm_type"], f"{d['comm_size']} B" if d["comm_size"] is not None else "",
                                          f"pg {d['pg_name']}" if d["pg_name"] else "") if x))
    return "\n".join(parts)


def graph_format(output: str | os.PathLike, depth: int, max_boxes: int = 1) -> str:
    """The drawing format ``output``'s name asks for (one of :data:`GRAPH_FORMATS`); a
    ConfigError for another name, a negative ``depth`` or ``max_boxes`` under 1."""
    fmt = Path(output).suffix.lstrip(".").lower()
    if fmt not in GRAPH_FORMATS:
        raise ConfigError(f"graph output {output}: the name must end in .dot, .svg or .graphml")
    if depth < 0:
        raise ConfigError(f"--depth {depth}: must be 0 or more")
    if max_boxes < 1:
        raise ConfigError(f"--max-boxes {max_boxes}: must be 1 or more")
    return fmt


def refuse_ignored(around: int | None, summary: bool | None, depth: int | None, max_boxes: int | None) -> None:
    """A ConfigError naming the drawing options the drawing asked for would ignore (``depth``,
    ``max_boxes``: None when not given): ``--summary``, ``--full`` or ``--max-boxes`` with
    ``--around`` (a neighbourhood is drawn node by node), ``--depth`` without ``--around``, and
    ``--max-boxes`` with ``--full``."""
    if around is not None:
        given = [flag for flag, on in (("--summary", summary is True), ("--full", summary is False),
                                       ("--max-boxes", max_boxes is not None)) if on]
        if given:
            one = len(given) == 1
            raise ConfigError(f"{', '.join(given)}: a neighbourhood (--around) is always drawn node by node, so "
                              f"{'this' if one else 'these'} would be ignored; leave {'it' if one else 'them'} out")
    elif depth is not None:
        raise ConfigError("--depth: it sets the hops drawn around --around NODE, and without --around the whole "
                          "rank is drawn, so it would be ignored; give --around NODE or leave --depth out")
    if summary is False and max_boxes is not None:
        raise ConfigError("--max-boxes: --full draws every node, so it would be ignored; leave it out")


def draw_graph(traces: TraceSet, output: str | os.PathLike, *, rank: int = 0, around: int | None = None,
               depth: int | None = None, max_nodes: int = 2000, summary: bool | None = None,
               max_boxes: int | None = None) -> dict[str, Any]:
    """Draw rank ``rank``'s graph of ``traces`` (or the ``depth``-hop neighbourhood of node id
    ``around``; :data:`DEPTH` when None) to ``output``: ``.dot`` (Graphviz), ``.svg`` (drawn
    here, layered by dependency depth) or ``.graphml``.  A whole rank is summarised (at most
    ``max_boxes`` boxes, :data:`MAX_BOXES` when None) when ``summary`` is true, or None and the
    rank has more than :data:`SUMMARY_ABOVE` nodes.  Options the drawing would ignore, and a
    rank with two nodes of one id, are refused.  Returns ``{"path", "format", "rank", "nodes",
    "edges", "rank_nodes", "summary", "missing_deps"}`` (``nodes``: boxes drawn;
    ``missing_deps``: dependencies of drawn nodes on ids not in the rank, not drawn) with
    ``depth`` for a neighbourhood, ``max_boxes`` and ``folded`` (the boxes of repeats with their
    counts) for a summary."""
    refuse_ignored(around, summary, depth, max_boxes)
    hops, boxes = DEPTH if depth is None else depth, MAX_BOXES if max_boxes is None else max_boxes
    out = Path(output)
    fmt = graph_format(out, hops, boxes)
    rt, g, ndata = _rank_graph(traces, rank)
    around_pos = _around(g, around, rank, rt.label)
    summary = _is_summary(summary, around_pos, len(g.ids), rank, max_boxes)
    if summary:
        keep = np.arange(len(g.ids), dtype=np.int64)
        nodes, edges = _summary(g, rt, ndata, boxes)
    else:
        keep = _select(g, around_pos, hops)
        if len(keep) > max_nodes:
            raise ConfigError(f"{len(keep)} nodes to draw, more than max_nodes={max_nodes}: draw a neighbourhood "
                              "(--around NODE --depth K), a summary (--summary) or raise --max-nodes", rt.label)
        nodes, edges = _details(rt, keep), _edges(g, keep, ndata)
    _write(out, fmt, nodes, edges, around_pos)
    done = {"path": str(out), "format": fmt, "rank": rank, "nodes": len(nodes), "edges": len(edges),
            "rank_nodes": len(g.ids), "summary": summary, "missing_deps": int((g.rows(keep)[1] < 0).sum())}
    if around_pos is not None:
        done["depth"] = hops
    if summary:
        done.update(max_boxes=boxes, folded=[{"repeats": d["repeats"], "nodes": d["nodes"], "first": d["name"]}
                                             for d in nodes.values() if d["type"] == FOLD])
    return done


def _rank_graph(traces: TraceSet, rank: int) -> tuple[Any, Any, np.ndarray]:
    """Rank ``rank`` of ``traces``, its dependency graph and each node's number of data
    dependencies; a ConfigError for a rank not in the set, a TraceFormatError for a repeated id."""
    from chakra_core.trace._graph import DepGraph

    if rank not in traces.ranks:
        raise ConfigError(f"no rank {rank} in the trace set (ranks {traces.ranks[0]}..{traces.ranks[-1]})")
    rt = traces[rank]
    ndata = array("q")
    g = DepGraph.build(rt.batches(), visit=lambda n: ndata.append(len(n.data_deps)))
    refuse_duplicate_ids(g, rt)
    return rt, g, np.frombuffer(ndata, np.int64) if len(ndata) else np.zeros(0, np.int64)


def refuse_duplicate_ids(g: Any, rt: Any) -> None:
    """A TraceFormatError naming ``rt``'s file and the first id that two nodes of its graph
    ``g`` share (a drawing or a figure would take one of them for the other)."""
    if g.duplicates:
        node = g.duplicates[0]
        raise TraceFormatError(f"id {node} is used by more than one node (chakra validate lists every duplicate)",
                               rt.label, f"node {node}")


def _is_summary(summary: bool | None, around_pos: int | None, nodes: int, rank: int, max_boxes: int | None) -> bool:
    """Whether the whole rank is drawn as a summary: as ``summary`` says, or, when None, for a
    rank of more than :data:`SUMMARY_ABOVE` nodes; a given ``max_boxes`` for a rank drawn node by
    node is a ConfigError (it would be ignored)."""
    if around_pos is not None:
        return False
    chosen = nodes > SUMMARY_ABOVE if summary is None else summary
    if not chosen and max_boxes is not None:
        raise ConfigError(f"--max-boxes: rank {rank} has {nodes} nodes and is drawn node by node (a summary is "
                          f"drawn past {SUMMARY_ABOVE} nodes), so it would be ignored; add --summary or leave "
                          "--max-boxes out")
    return chosen


def _write(out: Path, fmt: str, nodes: dict[int, dict[str, Any]], edges: list[tuple[int, int, str]],
           center: int | None) -> None:
    """Write the drawing to ``out`` in format ``fmt``, whole or not at all."""
    from chakra_core.io._etio import atomic_output

    writer = {"dot": _write_dot, "svg": _write_svg, "graphml": _write_graphml}[fmt]
    with atomic_output(out) as tmp:
        tmp.write_text(writer(nodes, edges, center))


def _around(g: Any, around: int | None, rank: int, label: str) -> int | None:
    """The position of node id ``around`` (None for None); a ConfigError when there is none."""
    if around is None:
        return None
    hits = np.flatnonzero(g.ids == np.uint64(around))
    if not len(hits):
        raise ConfigError(f"rank {rank} has no node {around}", label)
    return int(hits[0])


def _summary(g: Any, rt: Any, ndata: np.ndarray,
             max_boxes: int) -> tuple[dict[int, dict[str, Any]], list[tuple[int, int, str]]]:
    """The boxes and edges of the whole rank's summary (nodes on or behind a cycle come last)."""
    order, left = g.topo_order()
    order = np.concatenate((np.asarray(order, np.int64), np.asarray(left, np.int64)))
    details = _details(rt, order)
    return summarise(order, details, g.dep_ptr, g.deps, ndata, max_boxes)


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


def _box_size(label: str) -> tuple[int, int]:
    """Width and height (px) of a box holding ``label`` in 10 px Helvetica."""
    lines = label.split("\n")
    return max(200, 12 + 6 * max(len(line) for line in lines)), 10 + 12 * len(lines)


def _positions(nodes: dict[int, dict[str, Any]], edges: list[tuple[int, int, str]],
               sizes: dict[int, tuple[int, int]]) -> tuple[dict[int, tuple[int, int]], bool]:
    """Top-left corner of each box, and whether levels run left to right: one row per level, or
    for a drawing deeper than :data:`TALL_LEVELS` one column per level in bands of
    :data:`BAND_COLUMNS`."""
    level = _levels(nodes, edges)
    rows: dict[int, list[int]] = {}
    for p in sorted(nodes):
        rows.setdefault(level[p], []).append(p)
    gx, gy = 24, 46
    xy = {}
    if len(rows) <= TALL_LEVELS:
        y = 20
        for lv in sorted(rows):
            x = 20
            for p in rows[lv]:
                xy[p] = (x, y)
                x += sizes[p][0] + gx
            y += max(sizes[p][1] for p in rows[lv]) + gy
        return xy, False
    colw = max(w for w, _ in sizes.values()) + 2 * gx
    y0 = 20
    for band in range(0, len(rows), BAND_COLUMNS):
        height = 0
        for lv in range(band, min(band + BAND_COLUMNS, len(rows))):
            y = y0
            for p in rows.get(lv, []):
                xy[p] = (20 + (lv - band) * colw, y)
                y += sizes[p][1] + gx
            height = max(height, y - y0)
        y0 += height + gy
    return xy, True


def _write_svg(nodes: dict[int, dict[str, Any]], edges: list[tuple[int, int, str]], center: int | None) -> str:
    sizes = {p: _box_size(_label(d)) for p, d in nodes.items()}
    xy, across = _positions(nodes, edges, sizes)
    width = 20 + max((x + sizes[p][0] for p, (x, _) in xy.items()), default=80)
    height = 20 + max((y + sizes[p][1] for p, (_, y) in xy.items()), default=80)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="Helvetica" '
           'font-size="10"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
           'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>']
    for a, b, kind in edges:
        (x1, y1), (x2, y2) = xy[a], xy[b]
        (w1, h1), (w2, h2) = sizes[a], sizes[b]
        ends = (x1 + w1, y1 + h1 / 2, x2, y2 + h2 / 2) if across else (x1 + w1 / 2, y1 + h1, x2 + w2 / 2, y2)
        dash = "" if kind == "data" else ' stroke-dasharray="5,3"'
        out.append(f'<line x1="{ends[0]}" y1="{ends[1]}" x2="{ends[2]}" y2="{ends[3]}" stroke="#555"{dash} '
                   'marker-end="url(#arrow)"/>')
    for p, d in nodes.items():
        (x, y), (w, h) = xy[p], sizes[p]
        shape = _STYLE.get(d["type"], ("box", ""))[0]
        rx = 28 if shape == "ellipse" else 4 if shape in ("box", "note", "plaintext", "box3d", "folder") else 14
        stroke = 3 if p == center else 1
        out.append(f'<g><rect x="{x}" y="{y}" width="{w}" height="{h}" rx="{rx}" fill="{_fill(d)}" stroke="#333" '
                   f'stroke-width="{stroke}"/>')
        for k, line in enumerate(_label(d).split("\n")):
            out.append(f'<text x="{x + 6}" y="{y + 14 + 12 * k}">{_xml(line)}</text>')
        out.append(f"<title>{_xml(_label(d))}</title></g>")
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
        vals = {"name": d.get("label", d["name"]),
                "type": NodeType(d["type"]).name if 0 <= d["type"] <= 7
                else _SUMMARY_TYPES.get(d["type"], str(d["type"])),
                "duration_micros": d["duration_micros"], "is_cpu_op": str(d["cpu"]).lower(),
                "comm_type": d["comm_type"], "comm_size": d["comm_size"], "pg_name": d["pg_name"]}
        data = "".join(f'<data key="{k}">{_xml(str(v))}</data>' for k, v in vals.items()
                       if v not in (None, ""))
        out.append(f'<node id="n{d["id"]}">{data}</node>')
    for a, b, kind in edges:
        out.append(f'<edge source="n{nodes[a]["id"]}" target="n{nodes[b]["id"]}"><data key="dep">{kind}</data></edge>')
    out.append("</graph></graphml>")
    return "\n".join(out) + "\n"
