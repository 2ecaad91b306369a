"""Plots of reports and of sweep rows (matplotlib, imported on first use, no display needed)."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot", "figure_png", "breakdown_figure", "utilisation_figure", "operators_figure", "path_figure"]

_COLORS = {"compute": "#4c78a8", "exposed_comm": "#f58518", "exposed_mem": "#54a24b", "skew": "#e45756",
           "idle": "#bab0ac"}


def _pyplot() -> Any:
    from chakra_core.base._need import need

    mpl = need("matplotlib")
    mpl.use("Agg")
    return need("matplotlib.pyplot")


def figure_png(fig: Any) -> bytes:
    """The PNG bytes of a matplotlib figure (which is then closed)."""
    plt = _pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def plot(rows: Sequence[Mapping[str, Any]] | Any, x: str, y: str, *, hue: str | None = None,
         path: str | os.PathLike | None = None, title: str | None = None, logx: bool = False) -> Any:
    """Plot the metric ``y`` against the parameter ``x`` of ``rows`` (dicts or a DataFrame), one
    line per value of a second parameter ``hue``; write it to ``path`` (PNG, SVG or PDF by its
    suffix) when given.  Returns the matplotlib Figure."""
    from chakra_core.base._errors import ConfigError

    plt = _pyplot()
    records = rows.to_dict("records") if hasattr(rows, "to_dict") else [dict(r) for r in rows]
    for key in (x, y) + ((hue,) if hue else ()):
        if records and key not in records[0]:
            raise ConfigError(f"plot: no column {key!r} (columns: {', '.join(records[0])})")
    series: dict[Any, list[tuple[Any, Any]]] = {}
    for r in records:
        series.setdefault(r[hue] if hue else None, []).append((r[x], r[y]))
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for label, points in sorted(series.items(), key=lambda kv: str(kv[0])):
        points.sort(key=lambda p: p[0])
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                label=f"{hue}={label}" if hue else None)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if logx:
        ax.set_xscale("log")
    if hue:
        ax.legend()
    ax.set_title(title or f"{y} against {x}")
    ax.grid(alpha=0.3)
    if path is not None:
        from chakra_core.io._etio import atomic_output

        target = Path(path)
        with atomic_output(target) as tmp:
            fig.savefig(tmp, format=target.suffix.lstrip(".") or "png", dpi=110, bbox_inches="tight")
    return fig


def breakdown_figure(ranks: list[dict[str, Any]]) -> Any:
    """Stacked bars per rank: compute, exposed communication, exposed memory, idle (us)."""
    plt = _pyplot()
    shown = ranks if len(ranks) <= 64 else ranks[:: max(1, len(ranks) // 64)]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    xs = [str(r["rank"]) for r in shown]
    bottom = [0.0] * len(shown)
    for key in ("compute", "exposed_comm", "exposed_mem", "idle"):
        vals = [r[f"{key}_ns"] / 1000 for r in shown]
        ax.bar(xs, vals, bottom=bottom, label=key, color=_COLORS[key])
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xlabel("rank" + ("" if len(shown) == len(ranks) else f" (every {len(ranks) // len(shown)}th)"))
    ax.set_ylabel("time (us)")
    ax.legend(ncol=4, fontsize=8, loc="lower right")
    if len(xs) > 24:
        ax.set_xticks(range(0, len(xs), max(1, len(xs) // 16)))
    return fig


def utilisation_figure(over_time: dict[str, Any]) -> Any:
    """Share of rank time computing and communicating over the run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 2.8))
    width = over_time["bucket_ns"] / 1000
    for key, color in (("compute", _COLORS["compute"]), ("comm", _COLORS["exposed_comm"])):
        vals = over_time[key]
        ax.plot([i * width for i in range(len(vals))], vals, label=key, color=color)
    ax.set_xlabel("time (us)")
    ax.set_ylabel("share of ranks")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    return fig


def operators_figure(ops: list[dict[str, Any]], n: int = 15) -> Any:
    """Horizontal bars: the operators with the most total time (us, over all ranks)."""
    plt = _pyplot()
    shown = list(reversed(ops[:n]))
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(shown) + 1))
    ax.barh([f"{o['name'][:40]} ({o['kind']})" for o in shown], [o["total_ns"] / 1000 for o in shown],
            color=_COLORS["compute"])
    ax.set_xlabel("total time over ranks (us)")
    ax.tick_params(axis="y", labelsize=8)
    return fig


def path_figure(cp: dict[str, Any]) -> Any:
    """The critical path's time per category, one stacked bar."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 1.6))
    left = 0.0
    for key, v in cp["ns_by_category"].items():
        name = key[:-3]
        ax.barh(["critical path"], [v / 1000], left=[left], color=_COLORS[name], label=name)
        left += v / 1000
    ax.set_xlabel("time (us)")
    ax.legend(ncol=5, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.6))
    return fig


_KIND_COLORS = {"compute": "#4c78a8", "cpu": "#72b7b2", "memory": "#54a24b", "collective": "#f58518",
                "send": "#eeca3b", "recv": "#b279a2", "other": "#bab0ac", "phase": "#ff9da6"}


def timeline_figure(spans: Any, path: dict[str, Any] | None = None, max_ranks: int = 16) -> Any:
    """A Gantt chart of the first ``max_ranks`` ranks (one row per rank and track, colored by
    kind), with the critical path's segments drawn as a black line over the rows it runs on."""
    import numpy as np

    from chakra_core.analysis._spans import SPAN_KINDS

    plt = _pyplot()
    ranks = spans.ranks()[:max_ranks]
    rows: dict[tuple[int, int], int] = {}
    for r in ranks:
        for t in sorted(set(spans.track[spans.rank == r].tolist())):
            rows[(r, t)] = len(rows)
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.2))
    sel = np.isin(spans.rank, ranks)
    for k, kind in enumerate(SPAN_KINDS):
        m = sel & (spans.kind == k)
        if not m.any():
            continue
        y = [rows[(r, t)] for r, t in zip(spans.rank[m].tolist(), spans.track[m].tolist())]
        ax.barh(y, spans.dur_ns[m] / 1000, left=spans.start_ns[m] / 1000, height=0.8, color=_KIND_COLORS[kind],
                label=kind)
    if path:
        first_row = {r: min(v for (rr, _t), v in rows.items() if rr == r) for r in ranks}
        for seg in path.get("segments", []):
            if seg["rank"] in first_row:
                top = first_row[seg["rank"]] - 0.45
                ax.plot([seg["start_ns"] / 1000, seg["end_ns"] / 1000], [top, top], color="black", lw=2)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"rank {r} {spans.tracks[t]}" for (r, t) in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (us); black: the critical path")
    ax.legend(ncol=8, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    return fig
