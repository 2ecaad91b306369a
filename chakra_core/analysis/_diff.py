"""``chakra diff A B``: the numbers of two runs side by side, with absolute and relative change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chakra_core.analysis._report import Report, read_result
from chakra_core.analysis._report_text import source_notes
from chakra_core.analysis._spans import Spans
from chakra_core.base._errors import TraceFormatError

__all__ = ["Diff", "rows_report"]

_TOTALS = ("finish_ns", "compute_ns", "exposed_comm_ns", "exposed_mem_ns", "idle_ns", "comm_ns", "overlap_ns",
           "skew_ns", "cpu_ns", "accelerator_ns")


class Diff:
    """Two reports and their differences (``data``)."""

    def __init__(self, a: Report, b: Report):
        self.a, self.b = a, b
        self.data = _compare(a, b)

    def to_dict(self) -> dict[str, Any]:
        """What ``chakra diff --json`` prints: ``metrics: {NAME: {a, b, delta, ratio}}``,
        ``operators`` (the largest changes), each side's ``source``, and ``notes``."""
        return self.data

    def text(self) -> str:
        """The diff as text."""
        from chakra_core.analysis._report_text import format_diff

        return format_diff(self.data)

    def dataframe(self) -> Any:
        """The metrics as a pandas DataFrame (index: metric; columns a, b, delta, ratio)."""
        from chakra_core.base._need import need

        return need("pandas").DataFrame(self.data["metrics"]).T


def _metric(a: float, b: float) -> dict[str, Any]:
    return {"a": a, "b": b, "delta": b - a, "ratio": round(b / a, 6) if a else None}


def _compare(a: Report, b: Report) -> dict[str, Any]:
    da, db = a.data, b.data
    metrics = {k: _metric(da["totals"][k], db["totals"][k]) for k in _TOTALS
               if k in da["totals"] and k in db["totals"]}
    cats_a, cats_b = da["critical_path"].get("ns_by_category", {}), db["critical_path"].get("ns_by_category", {})
    for k in cats_a.keys() & cats_b.keys():
        metrics[f"critical_path.{k}"] = _metric(cats_a[k], cats_b[k])
    same_rows = bool(da.get("rows_only")) == bool(db.get("rows_only"))
    for key in ("bytes", "total_ns", "wait_ns") if same_rows else ():
        if all(key in c for c in da["collectives"] + db["collectives"]):
            metrics[f"communication.{key}"] = _metric(sum(c[key] for c in da["collectives"]),
                                                      sum(c[key] for c in db["collectives"]))
    if a.spans is not None and b.spans is not None:
        metrics["memory.bytes"] = _metric(da["memory"]["bytes"], db["memory"]["bytes"])
        metrics["spans"] = _metric(_every_rank(a.spans), _every_rank(b.spans))
    metrics["stragglers"] = _metric(len(da["stragglers"]), len(db["stragglers"]))
    ops = _operators(a, b) if a.spans is not None and b.spans is not None else []
    notes = [f"{side}: no spans in {d['source'].get('result')}: its totals come from the result's rows "
             "(each backend's own definitions)" for side, d in (("A", da), ("B", db)) if d.get("rows_only")]
    if not same_rows:
        notes.append("communication totals not compared: the side with spans counts each member of a collective, "
                     "the side without counts each collective once (the result's rows)")
    notes += [f"{side}: {n}" for side, d in (("A", da), ("B", db)) for n in source_notes(d)]
    return {"time_unit": "ns", "a": {"source": da["source"], "finish_ns": da["finish_ns"]},
            "b": {"source": db["source"], "finish_ns": db["finish_ns"]}, "metrics": metrics, "operators": ops,
            "notes": notes}


def _every_rank(spans: Spans) -> int:
    """The spans counted for every rank they stand for (a symmetric run keeps one rank's spans
    for its class), as the totals beside them count every rank."""
    return int(spans.weights()[spans.rank].sum())


def _operators(a: Report, b: Report) -> list[dict[str, Any]]:
    """Per operator (name, kind): total time over ranks in each, the 50 largest changes first."""
    from chakra_core.analysis._tables import top_operators

    ops_a = {(o["name"], o["kind"]): o["total_ns"] for o in top_operators(a.spans, 1 << 30)}
    ops_b = {(o["name"], o["kind"]): o["total_ns"] for o in top_operators(b.spans, 1 << 30)}
    ops = []
    for op in sorted(set(ops_a) | set(ops_b)):
        m = _metric(ops_a.get(op, 0), ops_b.get(op, 0))
        ops.append({"name": op[0], "kind": op[1], **m})
    ops.sort(key=lambda o: -abs(o["delta"]))
    return ops[:50]


def rows_report(path: Path) -> Report:
    """A report of a result.json written without spans: totals and stragglers from its rows,
    its summary's critical path and collectives (a TraceFormatError naming ``path`` when a row or
    a total is not a number)."""
    from chakra_core.analysis._tables import stragglers

    data = read_result(path)
    summary = data["summary"]
    rows = [r for r in _listed(data.get("ranks", []), "ranks", path) if "finish_ns" in r]
    cp = summary.get("critical_path") if isinstance(summary.get("critical_path"), dict) else {}
    colls = _collective_rows(summary.get("collectives", []), path)
    try:
        keys = {k for r in rows for k in r if k.endswith("_ns")}
        finish = _whole(summary.get("finish_ns", max((_whole(r["finish_ns"]) for r in rows), default=0)))
        totals = {k: sum(_whole(r.get(k, 0)) for r in rows) for k in keys}
        if not isinstance(cp.get("ns_by_category", {}), dict):
            raise ValueError("critical_path.ns_by_category is not an object")
        for value in [*cp.get("ns_by_category", {}).values(),
                      *(c[k] for c in colls for k in ("bytes", "total_ns", "wait_ns") if k in c)]:
            _whole(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise TraceFormatError(f"a time or size of the result is not a whole number >= 0 ({e})", str(path)) from None
    totals["finish_ns"] = finish
    return Report({"source": {"result": str(path), "backend": data.get("backend")}, "finish_ns": finish,
                   "totals": totals, "critical_path": cp, "collectives": colls, "ranks": rows,
                   "stragglers": stragglers(rows) if rows and "compute_ns" in rows[0] else [],
                   "rows_only": True}, None)  # type: ignore[arg-type]


def _listed(value: Any, key: str, path: Path) -> list[dict[str, Any]]:
    """The objects of the list ``value`` (the result's ``key``); a TraceFormatError for a list of
    anything else (its numbers would be left out silently)."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise TraceFormatError(f"'{key}' is not a list of objects", str(path))
    return value


def _collective_rows(value: Any, path: Path) -> list[dict[str, Any]]:
    """A result's ``summary.collectives`` as a list of objects: the simulators' list, or the
    emulator's object of kinds (``{"ALL_REDUCE": {"count", "bytes"}}``), one row a kind."""
    if isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
        return [{"collective": kind, **row} for kind, row in value.items()]
    return _listed(value, "summary.collectives", path)


def _whole(value: Any) -> int:
    """``value`` as an int when it is a whole number >= 0 (bool excluded; a float without a
    fraction is taken), else a ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf") \
            or value != int(value):
        raise ValueError(f"{value!r}")
    return int(value)
