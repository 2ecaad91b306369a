"""Plots of sweep rows (matplotlib, imported on first use, no display needed); the report's
charts are interactive (:mod:`chakra_core.analysis._charts`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot"]


def _pyplot() -> Any:
    from chakra_core.base._need import need

    mpl = need("matplotlib")
    mpl.use("Agg")
    return need("matplotlib.pyplot")


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
    _ticks_at_values(ax, sorted({r[x] for r in records}))
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


def _ticks_at_values(ax: Any, values: list[Any]) -> None:
    """Ticks at the swept values themselves (at most 12, evenly picked), labelled plainly."""
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return
    step = max(1, -(-len(values) // 12))
    shown = values[::step]
    ax.set_xticks(shown)
    ax.set_xticklabels([f"{v:g}" for v in shown])
    ax.minorticks_off()
