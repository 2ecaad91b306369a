"""The report's interactive charts as Plotly figure specifications (plain data: ``data`` traces
and a ``layout``), drawn in the page by the Plotly.js bundle that the ``plotly`` package ships.

Times are plotted in us, or ms for runs longer than 10 ms; hover labels say every value with its
unit (:mod:`chakra_core.base._human`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chakra_core.analysis._spans import SPAN_KINDS, Spans
from chakra_core.base._human import duration, percent, size

__all__ = ["breakdown_chart", "utilisation_chart", "classes_chart", "families_chart", "path_chart",
           "timeline_chart", "time_unit", "COLORS"]

COLORS = {"compute": "#4c78a8", "exposed_comm": "#f58518", "exposed_mem": "#54a24b", "idle": "#bab0ac",
          "skew": "#e45756", "cpu": "#72b7b2", "memory": "#54a24b", "collective": "#f58518", "send": "#eeca3b",
          "recv": "#b279a2", "other": "#9d755d", "phase": "#ff9da6"}
_LABELS = {"compute": "compute", "exposed_comm": "exposed communication", "exposed_mem": "exposed memory",
           "idle": "idle"}
_LEGEND = {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "traceorder": "normal"}


def time_unit(finish_ns: float) -> tuple[float, str]:
    """The divisor and name of the axis unit for a run of ``finish_ns``: us, or ms above 10 ms."""
    return (1e6, "ms") if finish_ns > 1e7 else (1e3, "us")


def _layout(title: str, height: int, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title, "x": 0, "font": {"size": 14}}, "height": height,
            "margin": {"l": 60, "r": 20, "t": 60, "b": 50}, "legend": _LEGEND, "hovermode": "closest",
            "font": {"family": "sans-serif", "size": 12}, **extra}


def breakdown_chart(ranks: list[dict[str, Any]], roles: dict[int, int]) -> dict[str, Any]:
    """Stacked bars per rank: compute, exposed communication, exposed memory, idle."""
    scale, unit = time_unit(max((r["finish_ns"] for r in ranks), default=0))
    xs = [str(r["rank"]) for r in ranks]
    data = []
    for key in ("compute", "exposed_comm", "exposed_mem", "idle"):
        values = [r[f"{key}_ns"] for r in ranks]
        data.append({"type": "bar", "name": _LABELS[key], "x": xs, "y": [v / scale for v in values],
                     "marker": {"color": COLORS[key]},
                     "customdata": [[duration(v), percent(v / r["finish_ns"] if r["finish_ns"] else 0),
                                     roles.get(r["rank"], 0)] for v, r in zip(values, ranks)],
                     "hovertemplate": f"rank %{{x}} (role %{{customdata[2]}})<br>{_LABELS[key]}: "
                                      "%{customdata[0]} (%{customdata[1]} of its step)<extra></extra>"})
    return {"data": data, "layout": _layout("Where each rank's step goes", 380, barmode="stack",
                                            xaxis={"title": {"text": "rank"}, "type": "category"},
                                            yaxis={"title": {"text": f"time ({unit})"}})}


def utilisation_chart(over_time: dict[str, Any]) -> dict[str, Any]:
    """Share of ranks computing and communicating over the run."""
    width = over_time["bucket_ns"]
    scale, unit = time_unit(width * len(over_time["compute"]))
    data = []
    for key, label, color in (("compute", "computing", COLORS["compute"]),
                              ("comm", "communicating", COLORS["exposed_comm"])):
        vals = over_time[key]
        data.append({"type": "scatter", "mode": "lines", "name": label, "line": {"color": color},
                     "x": [i * width / scale for i in range(len(vals))], "y": vals,
                     "customdata": [duration(i * width) for i in range(len(vals))],
                     "hovertemplate": f"at %{{customdata}}: %{{y:.0%}} of ranks {label}<extra></extra>"})
    return {"data": data, "layout": _layout("Utilisation over the step", 300,
                                            xaxis={"title": {"text": f"time ({unit})"}},
                                            yaxis={"title": {"text": "share of ranks"}, "range": [0, 1.05],
                                                   "tickformat": ".0%"})}


def classes_chart(classes: list[dict[str, Any]]) -> dict[str, Any]:
    """Horizontal bars: share of all rank time per operator class."""
    shown = [c for c in classes if c["total_ns"] > 0]
    return {"data": [{"type": "bar", "orientation": "h", "y": [c["class"] for c in shown],
                      "x": [c["share"] for c in shown], "marker": {"color": COLORS["compute"]},
                      "customdata": [[duration(c["total_ns"]), percent(c["share"]), ", ".join(c["top_families"])]
                                     for c in shown],
                      "hovertemplate": "%{y}: %{customdata[0]} over all ranks (%{customdata[1]})"
                                       "<br>mostly: %{customdata[2]}<extra></extra>"}],
            "layout": _layout("Time by operator class (all ranks)", 60 + 26 * max(len(shown), 3), showlegend=False,
                              xaxis={"tickformat": ".0%", "title": {"text": "share of all rank time"}},
                              yaxis={"autorange": "reversed", "automargin": True})}


def families_chart(families: list[dict[str, Any]], n: int = 15) -> dict[str, Any]:
    """Horizontal bars: the operator families (names equal up to numbers) with the most time."""
    shown = families[:n]
    labels = [f"{f['family'][:60]}{'...' if len(f['family']) > 60 else ''} ({f['kind']})" for f in shown]
    return {"data": [{"type": "bar", "orientation": "h", "y": labels, "x": [f["share"] for f in shown],
                      "marker": {"color": [COLORS.get(f["kind"], COLORS["other"]) for f in shown]},
                      "customdata": [[f["family"], f["class"], f["names"], f"{f['count']:,}", duration(f["total_ns"]),
                                      duration(f["mean_ns"]), percent(f["share"])] for f in shown],
                      "hovertemplate": "%{customdata[0]}<br>class %{customdata[1]}; %{customdata[2]} names, "
                                       "%{customdata[3]} runs<br>total %{customdata[4]} (%{customdata[6]}), "
                                       "mean %{customdata[5]}<extra></extra>"}],
            "layout": _layout("Top operator families (numbers in names folded: one bar per layer type)",
                              60 + 24 * max(len(shown), 3), showlegend=False,
                              xaxis={"tickformat": ".1%", "title": {"text": "share of operation time"}},
                              yaxis={"autorange": "reversed", "automargin": True, "tickfont": {"size": 11}})}


def path_chart(cp: dict[str, Any]) -> dict[str, Any]:
    """The critical path's time per category, one stacked bar."""
    scale, unit = time_unit(cp.get("finish_ns", 0))
    data = []
    for key, v in cp["ns_by_category"].items():
        name = key[:-3]
        data.append({"type": "bar", "orientation": "h", "name": _LABELS.get(name, name.replace("_", " ")),
                     "y": ["critical path"], "x": [v / scale], "marker": {"color": COLORS.get(name, COLORS["other"])},
                     "customdata": [[duration(v), percent(v / cp["finish_ns"] if cp.get("finish_ns") else 0)]],
                     "hovertemplate": "%{fullData.name}: %{customdata[0]} (%{customdata[1]} of the step)"
                                      "<extra></extra>"})
    return {"data": data, "layout": _layout("The critical path by category", 200, barmode="stack",
                                            xaxis={"title": {"text": f"time ({unit})"}},
                                            yaxis={"showticklabels": False})}


def _timeline_ranks(spans: Spans, max_ranks: int, max_spans: int) -> list[int]:
    """The ranks drawn: the first ones, as many as fit ``max_ranks`` and ``max_spans``."""
    counts = np.bincount(spans.rank[spans.kind != SPAN_KINDS.index("phase")].astype(np.int64))
    shown: list[int] = []
    total = 0
    for r in spans.ranks()[:max_ranks]:
        n = int(counts[r]) if r < len(counts) else 0
        if shown and total + n > max_spans:
            break
        shown.append(r)
        total += n
    return shown


def timeline_chart(spans: Spans, segments: list[dict[str, Any]], max_ranks: int = 16,
                   max_spans: int = 20_000) -> tuple[dict[str, Any], list[int]]:
    """A Gantt chart of the first ranks (one row per rank and track, coloured by kind) with the
    critical path's segments as black lines; returns the figure and the ranks drawn."""
    ranks = _timeline_ranks(spans, max_ranks, max_spans)
    scale, unit = time_unit(spans.finish_ns())
    sel = np.isin(spans.rank, ranks) & (spans.kind != SPAN_KINDS.index("phase"))
    rows = {(r, t): f"rank {r} {spans.tracks[t]}" for r, t in
            sorted(set(zip(spans.rank[sel].tolist(), spans.track[sel].tolist())))}
    data = []
    for k, kind in enumerate(SPAN_KINDS):
        idx = np.flatnonzero(sel & (spans.kind == k))
        if not len(idx):
            continue
        data.append({"type": "bar", "orientation": "h", "name": kind, "marker": {"color": COLORS[kind]},
                     "y": [rows[(r, t)] for r, t in zip(spans.rank[idx].tolist(), spans.track[idx].tolist())],
                     "base": (spans.start_ns[idx] / scale).tolist(), "x": (spans.dur_ns[idx] / scale).tolist(),
                     "customdata": [[spans.names[n], duration(d), duration(s), size(b) if b > 0 else ""]
                                    for n, d, s, b in zip(spans.name[idx].tolist(), spans.dur_ns[idx].tolist(),
                                                          spans.start_ns[idx].tolist(), spans.bytes[idx].tolist())],
                     "hovertemplate": "%{customdata[0]}<br>%{fullData.name}, %{customdata[1]} from %{customdata[2]}"
                                      " %{customdata[3]}<br>%{y}<extra></extra>"})
    first: dict[int, str] = {}
    for (r, _t), label in rows.items():
        first.setdefault(r, label)
    xs: list[float | None] = []
    ys: list[str | None] = []
    for seg in segments:
        if seg["rank"] in first:
            xs += [seg["start_ns"] / scale, seg["end_ns"] / scale, None]
            ys += [first[seg["rank"]]] * 2 + [None]
    if xs:
        data.append({"type": "scatter", "mode": "lines", "name": "critical path", "x": xs, "y": ys,
                     "line": {"color": "black", "width": 3}, "hoverinfo": "skip"})
    layout = _layout("Timeline", 120 + 22 * len(rows), barmode="overlay",
                     xaxis={"title": {"text": f"time ({unit})"}},
                     yaxis={"autorange": "reversed", "automargin": True, "type": "category"})
    return {"data": data, "layout": layout}, ranks
