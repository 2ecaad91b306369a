"""The self-contained HTML page of a report: interactive Plotly charts (the Plotly.js bundle
inlined, so the page works offline), sortable tables, every number with its unit."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chakra_core.base._human import count, duration, percent, rate, readable, size

if TYPE_CHECKING:
    from chakra_core.analysis._spans import Spans

__all__ = ["write_report_html", "SECTIONS"]

#: the page's sections (element ids), in order
SECTIONS = ("summary", "breakdown", "utilisation", "timeline", "operators", "collectives", "critical-path",
            "stragglers", "what-if")

_STYLE = """body{font-family:sans-serif;margin:2em;max-width:1150px;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;
text-align:right}th{background:#f3f3f3;cursor:pointer;user-select:none}th:hover{background:#e4e4e4}
td.l,th.l{text-align:left}section{margin-bottom:2.5em}.k{font-size:15px}.note{color:#555;font-size:13px}
.chart{width:100%}td.wrap{max-width:520px;overflow-wrap:anywhere;text-align:left}"""

#: sortable tables (click a header) and the page check read by the browser test
_SCRIPT = """var chakraErrors=0;window.addEventListener('error',function(){chakraErrors++;});
function chakraSort(th){var t=th.closest('table'),i=Array.prototype.indexOf.call(th.parentNode.children,th),
rows=Array.prototype.slice.call(t.querySelectorAll('tr')).slice(1),d=th.getAttribute('data-d')==='1'?-1:1;
rows.sort(function(a,b){var x=a.children[i].getAttribute('data-v'),y=b.children[i].getAttribute('data-v'),
nx=parseFloat(x),ny=parseFloat(y);if(!isNaN(nx)&&!isNaN(ny)){return d*(nx-ny);}return d*String(x).localeCompare(y);});
rows.forEach(function(r){t.appendChild(r);});th.setAttribute('data-d',d===1?'1':'0');}
function chakraDraw(){var cs=document.querySelectorAll('div.chart'),ok=0;
cs.forEach(function(c){try{var s=JSON.parse(document.getElementById(c.id+'-spec').textContent);
Plotly.newPlot(c,s.data,s.layout,{responsive:true,displaylogo:false});ok++;}catch(e){chakraErrors++;}});
document.body.setAttribute('data-check','charts '+document.querySelectorAll('.js-plotly-plot').length+'/'+cs.length+
' sections '+document.querySelectorAll('section').length+' errors '+chakraErrors);}
window.addEventListener('load',chakraDraw);"""


def _chart(cid: str, spec: Mapping[str, Any]) -> str:
    # "<" only occurs inside JSON strings, where \u003c reads the same: no "</script" nor "<!--"
    # (which would change how an HTML parser ends the script) can appear in the element
    text = json.dumps(spec, separators=(",", ":"), default=float).replace("<", "\\u003c")
    return f'<div class="chart" id="{cid}"></div><script type="application/json" id="{cid}-spec">{text}</script>'


def _cell(key: str, v: Any) -> tuple[str, str]:
    """(shown text, sort value) of a table cell, by the unit its key names."""
    if v is None:
        return "", ""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if key.endswith("_ns"):
            return duration(v), str(v)
        if key == "bytes":
            return size(v), str(v)
        if key in ("share",):
            return percent(v), str(v)
        if key.endswith("_pct"):
            return f"{v:.1f}%", str(v)
        if key.endswith("GBps"):
            return rate(v), str(v)
        return (count(v) if isinstance(v, int) else f"{v:,.3g}"), str(v)
    if isinstance(v, list):
        v = ", ".join(map(str, v))
    return str(v), str(v)


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str]], limit: int = 50) -> str:
    if not rows:
        return "<p>none</p>"
    head = "".join(f'<th class="{"l" if i == 0 else ""}" onclick="chakraSort(this)" title="sort">'
                   f"{html.escape(label)}</th>" for i, (_k, label) in enumerate(columns))
    body = []
    for r in rows[:limit]:
        cells = []
        for i, (k, _label) in enumerate(columns):
            shown, value = _cell(k, r.get(k))
            cls = "wrap" if isinstance(r.get(k), (str, list)) and len(shown) > 30 else ("l" if i == 0 else "")
            cells.append(f'<td class="{cls}" data-v="{html.escape(value)}">{html.escape(shown)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = f'<p class="note">{len(rows) - limit} more rows in the JSON report</p>' if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def _section(sid: str, title: str, content: str) -> str:
    return f'<section id="{sid}"><h2>{html.escape(title)}</h2>{content}</section>'


def _segments(spans: Spans) -> list[dict[str, Any]]:
    """The critical path's segments (all of them) for the timeline."""
    from chakra_core.analysis._critical import PATH_CATEGORIES, critical_path

    cp = critical_path(spans)
    return [{"rank": int(r), "start_ns": int(a), "end_ns": int(b), "category": PATH_CATEGORIES[c]}
            for r, a, b, c in zip(cp.rank, cp.start_ns, cp.end_ns, cp.category)]


def _ranks_text(ranks: list[int]) -> str:
    if ranks and ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))


def _summary(d: Mapping[str, Any]) -> str:
    t, n = d["totals"], max(len(d["ranks"]), 1)
    fin = d["finish_ns"] or 1
    parts = ", ".join(f"{label} {duration(t[k] / n)} ({percent(t[k] / n / fin)})" for k, label in (
        ("compute_ns", "compute"), ("exposed_comm_ns", "exposed communication"),
        ("exposed_mem_ns", "exposed memory"), ("idle_ns", "idle")))
    from chakra_core.analysis._report_text import source_notes

    src = d.get("source") or {}
    shown = {k: v for k, v in src.items() if k != "notes"} if isinstance(src, Mapping) else {"source": src}
    source = "".join(f"<li>{html.escape(line)}</li>" for line in readable(shown))
    notes = "".join(f'<p class="note">note: {html.escape(n)}</p>' for n in (*d.get("notes", ()), *source_notes(d)))
    return (f'<p class="k">step time <b>{duration(d["finish_ns"])}</b> over {count(d["nranks"])} ranks; per rank '
            f"on average: {parts}.</p><p>{len(d.get('roles', []))} role(s): ranks with the same operations "
            f"(stragglers are judged within a role).</p><ul class=\"note\">{source}</ul>{notes}")


def _timeline(spans: Spans) -> str:
    from chakra_core.analysis._charts import timeline_chart

    fig, shown = timeline_chart(spans, _segments(spans))
    caption = (f"ranks {_ranks_text(shown)} of {spans.nranks} (hover a bar for the operation; drag to zoom, "
               "double-click to reset); black: the critical path. The whole run: "
               "<code>chakra simulate ... --timeline run.pftrace</code> (ui.perfetto.dev)")
    return _chart("chart-timeline", fig) + f'<p class="note">{caption}</p>'


def _body(d: Mapping[str, Any], spans: Spans) -> list[str]:
    from chakra_core.analysis._charts import (
        breakdown_chart,
        classes_chart,
        families_chart,
        path_chart,
        utilisation_chart,
    )

    cp = d["critical_path"]
    roles = {r: role["role"] for role in d.get("roles", []) for r in role["ranks"]}
    role_list = "; ".join(f"role {r['role']}: ranks {_ranks_text(r['ranks'])}" for r in d.get("roles", []))
    return [
        _section("summary", "Summary", _summary(d)),
        _section("breakdown", "Breakdown per rank", _chart("chart-breakdown", breakdown_chart(d["ranks"], roles))
                 + _table(d["ranks"], [("rank", "rank"), ("finish_ns", "finish"), ("compute_ns", "compute"),
                                       ("exposed_comm_ns", "exposed comm"), ("exposed_mem_ns", "exposed mem"),
                                       ("idle_ns", "idle"), ("overlap_ns", "overlap"), ("skew_ns", "skew")], 32)),
        _section("utilisation", "Utilisation over time", _chart("chart-utilisation",
                                                                utilisation_chart(d["utilisation"]["over_time"]))),
        _section("timeline", "Timeline", _timeline(spans)),
        _section("operators", "Operators",
                 _chart("chart-classes", classes_chart(d["operator_classes"]))
                 + _table(d["operator_classes"], [("class", "class"), ("total_ns", "total"), ("share", "share"),
                                                  ("count", "operations"), ("top_families", "mostly")])
                 + (_chart("chart-families", families_chart(d["operator_families"])) if d["operator_families"] else "")
                 + _table(d["operator_families"], [("family", "operator family"), ("kind", "kind"),
                                                   ("class", "class"), ("names", "names"), ("count", "count"),
                                                   ("total_ns", "total"), ("mean_ns", "mean"), ("share", "share")])),
        _section("collectives", "Collectives", _table(d["collectives"], [
            ("collective", "collective"), ("group", "group"), ("group_shape", "members"),
            ("groups_like_it", "groups of this shape"), ("count", "count"), ("bytes", "bytes"),
            ("total_ns", "total"), ("wait_ns", "waiting"), ("algbw_GBps", "bandwidth"), ("algorithm", "algorithm")])),
        _section("critical-path", "Critical path",
                 _chart("chart-path", path_chart(cp))
                 + f"<p>{count(cp['length'])} operations, {count(cp['crossings'])} crossings between ranks</p>"
                 + _table(cp["top"], [("name", "operator"), ("kind", "kind"), ("category", "category"),
                                      ("ns", "time"), ("segments", "segments")])),
        _section("stragglers", "Stragglers",
                 '<p class="note">each rank against the median of the other ranks of its role '
                 f"({html.escape(role_list)})</p>" + _table(d["stragglers"], [
                     ("rank", "rank"), ("role", "role"), ("metric", "metric"), ("value_ns", "value"),
                     ("others_median_ns", "others' median"), ("excess_ns", "excess"), ("excess_pct", "excess")])),
        _section("what-if", "What if", _table(d["what_if"], [
            ("target", "target"), ("factor", "x faster"), ("estimated_finish_ns", "estimated"),
            ("estimated_change_pct", "change"), ("resimulated_finish_ns", "re-simulated")])),
    ]


def write_report_html(data: Mapping[str, Any], spans: Spans, path: Path) -> Path:
    """Write a report's ``data`` (:attr:`Report.data`) and ``spans`` as one HTML file at ``path``
    (atomically); the charts need the ``plotly`` package (the ``report`` extra)."""
    from chakra_core.base._need import need
    from chakra_core.io._etio import atomic_output

    plotly_js = need("plotly.offline").get_plotlyjs()
    page = ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>chakra report</title>'
            f"<style>{_STYLE}</style><script>{plotly_js}</script><script>{_SCRIPT}</script></head>"
            "<body><h1>chakra report</h1>" + "".join(_body(data, spans)) + "</body></html>\n")
    with atomic_output(path) as tmp:  # a path's undecodable bytes (surrogates) shown as \xNN escapes
        tmp.write_text(page, encoding="utf-8", errors="backslashreplace")
    return path
