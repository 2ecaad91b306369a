"""The self-contained HTML page of a report: plots embedded as PNG data, tables, no network."""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chakra_core.analysis._spans import Spans

__all__ = ["write_report_html", "SECTIONS"]

#: the page's sections (element ids), in order
SECTIONS = ("summary", "breakdown", "utilisation", "timeline", "operators", "collectives", "critical-path",
            "stragglers", "what-if")

_STYLE = """body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;
text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}section{margin-bottom:2em}
img{max-width:100%}.k{font-size:15px}"""

#: marks the page as checked once every image has loaded (read by the browser test)
_SCRIPT = """var chakraErrors=0;window.addEventListener('error',function(){chakraErrors++;});
window.addEventListener('load',function(){var imgs=document.images,ok=0;
for(var i=0;i<imgs.length;i++){if(imgs[i].complete&&imgs[i].naturalWidth>0){ok++;}}
var secs=document.querySelectorAll('section').length;
document.body.setAttribute('data-check','images '+ok+'/'+imgs.length+' sections '+secs+' errors '+chakraErrors);});"""


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str]], limit: int = 50) -> str:
    if not rows:
        return "<p>none</p>"
    head = "".join(f'<th class="{"l" if i == 0 else ""}">{html.escape(label)}</th>'
                   for i, (_k, label) in enumerate(columns))
    body = []
    for r in rows[:limit]:
        cells = []
        for i, (k, _label) in enumerate(columns):
            v = r.get(k)
            if isinstance(v, float):
                v = f"{v:,.3f}"
            elif isinstance(v, int) and k.endswith("_ns"):
                v = f"{v / 1000:,.1f}"
            cells.append(f'<td class="{"l" if i == 0 else ""}">{html.escape("" if v is None else str(v))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = f"<p>{len(rows) - limit} more rows in the JSON report</p>" if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def _section(sid: str, title: str, content: str) -> str:
    return f'<section id="{sid}"><h2>{html.escape(title)}</h2>{content}</section>'


def _segments(spans: Spans) -> dict[str, Any]:
    """The critical path's segments (all of them) for the timeline plot."""
    from chakra_core.analysis._critical import PATH_CATEGORIES, critical_path

    cp = critical_path(spans)
    return {"segments": [{"rank": int(r), "start_ns": int(a), "end_ns": int(b), "category": PATH_CATEGORIES[c]}
                         for r, a, b, c in zip(cp.rank, cp.start_ns, cp.end_ns, cp.category)]}


def write_report_html(data: Mapping[str, Any], spans: Spans, path: Path) -> Path:
    """Write a report's ``data`` (:attr:`Report.data`) and ``spans`` as one HTML file at ``path``
    (atomically)."""
    from chakra_core.analysis._plots import (
        breakdown_figure,
        figure_png,
        operators_figure,
        path_figure,
        timeline_figure,
        utilisation_figure,
    )
    from chakra_core.analysis._report_text import source_notes
    from chakra_core.io._etio import atomic_output

    d = data
    t, cp = d["totals"], d["critical_path"]
    n = max(len(d["ranks"]), 1)
    summary = (f'<p class="k">step time <b>{d["finish_ns"] / 1000:,.1f} us</b> over {d["nranks"]} ranks; '
               f'per rank on average: compute {t["compute_ns"] / n / 1000:,.1f} us, exposed communication '
               f'{t["exposed_comm_ns"] / n / 1000:,.1f} us, exposed memory {t["exposed_mem_ns"] / n / 1000:,.1f} us, '
               f'idle {t["idle_ns"] / n / 1000:,.1f} us. Times in tables are in us.</p>'
               f'<p>source: {html.escape(str(d["source"]))}</p>'
               + "".join(f'<p class="note">note: {html.escape(n)}</p>' for n in source_notes(d)))
    parts = [
        _section("summary", "Summary", summary),
        _section("breakdown", "Breakdown per rank", _img(figure_png(breakdown_figure(d["ranks"])), "breakdown")
                 + _table(d["ranks"], [("rank", "rank"), ("finish_ns", "finish"), ("compute_ns", "compute"),
                                       ("exposed_comm_ns", "exposed comm"), ("exposed_mem_ns", "exposed mem"),
                                       ("idle_ns", "idle"), ("overlap_ns", "overlap"), ("skew_ns", "skew")], 32)),
        _section("utilisation", "Utilisation over time",
                 _img(figure_png(utilisation_figure(d["utilisation"]["over_time"])), "utilisation")),
        _section("timeline", "Timeline", _img(figure_png(timeline_figure(spans, _segments(spans))), "timeline")
                 + "<p>the first 16 ranks; the full timeline: <code>chakra simulate ... --timeline run.pftrace</code>"
                 " (ui.perfetto.dev)</p>"),
        _section("operators", "Top operators",
                 (_img(figure_png(operators_figure(d["top_operators"])), "top operators") if d["top_operators"]
                  else "") + _table(d["top_operators"], [("name", "operator"), ("kind", "kind"), ("count", "count"),
                                                         ("total_ns", "total"), ("mean_ns", "mean"), ("p50_ns", "p50"),
                                                         ("p90_ns", "p90"), ("max_ns", "max"), ("share", "share")])),
        _section("collectives", "Collectives", _table(d["collectives"], [
            ("collective", "collective"), ("group", "group"), ("count", "count"), ("bytes", "bytes"),
            ("total_ns", "total"), ("wait_ns", "waiting"), ("algbw_GBps", "GB/s"), ("algorithm", "algorithm")])),
        _section("critical-path", "Critical path",
                 _img(figure_png(path_figure(cp)), "critical path")
                 + f"<p>{cp['length']} operations, {cp['crossings']} crossings between ranks</p>"
                 + _table(cp["top"], [("name", "operator"), ("kind", "kind"), ("category", "category"),
                                      ("ns", "time (ns)"), ("segments", "segments")])),
        _section("stragglers", "Stragglers", _table(d["stragglers"], [
            ("rank", "rank"), ("metric", "metric"), ("value_ns", "value"), ("others_median_ns", "others' median"),
            ("excess_ns", "excess"), ("excess_pct", "excess %")])),
        _section("what-if", "What if", _table(d["what_if"], [
            ("target", "target"), ("factor", "x faster"), ("estimated_finish_ns", "estimated"),
            ("estimated_change_pct", "change %"), ("resimulated_finish_ns", "re-simulated")])),
    ]
    page = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>chakra report</title>'
            f"<style>{_STYLE}</style><script>{_SCRIPT}</script></head><body><h1>chakra report</h1>"
            + "".join(parts) + "</body></html>\n")
    with atomic_output(path) as tmp:
        tmp.write_text(page)
    return path
