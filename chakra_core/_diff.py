"""``chakra diff A B``: the numbers of two runs side by side, with absolute and relative change."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._report import Report, report

__all__ = ["Diff", "diff"]

_TOTALS = ("finish_ns", "compute_ns", "exposed_comm_ns", "exposed_mem_ns", "idle_ns", "comm_ns", "overlap_ns",
           "skew_ns", "cpu_ns", "accelerator_ns")


class Diff:
    """Two reports and their differences (``data``)."""

    def __init__(self, a: Report, b: Report):
        self.a, self.b = a, b
        self.data = _compare(a, b)

    def to_dict(self) -> dict[str, Any]:
        """What ``chakra diff --json`` prints: ``metrics: {NAME: {a, b, delta, ratio}}``,
        ``operators`` (the largest changes), and each side's ``source``."""
        return self.data

    def text(self) -> str:
        """The diff as text."""
        from ._report_text import format_diff

        return format_diff(self.data)

    def dataframe(self) -> Any:
        """The metrics as a pandas DataFrame (index: metric; columns a, b, delta, ratio)."""
        from ._lazyimport import need

        return need("pandas").DataFrame(self.data["metrics"]).T


def _metric(a: float, b: float) -> dict[str, Any]:
    return {"a": a, "b": b, "delta": b - a, "ratio": round(b / a, 6) if a else None}


def _compare(a: Report, b: Report) -> dict[str, Any]:
    da, db = a.data, b.data
    metrics = {k: _metric(da["totals"][k], db["totals"][k]) for k in _TOTALS}
    for k, v in da["critical_path"]["ns_by_category"].items():
        metrics[f"critical_path.{k}"] = _metric(v, db["critical_path"]["ns_by_category"][k])
    for key in ("bytes", "total_ns", "wait_ns"):
        metrics[f"communication.{key}"] = _metric(sum(c[key] for c in da["collectives"]),
                                                  sum(c[key] for c in db["collectives"]))
    metrics["memory.bytes"] = _metric(da["memory"]["bytes"], db["memory"]["bytes"])
    metrics["spans"] = _metric(da["spans"], db["spans"])
    metrics["stragglers"] = _metric(len(da["stragglers"]), len(db["stragglers"]))
    from ._analysis import top_operators

    ops_a = {(o["name"], o["kind"]): o["total_ns"] for o in top_operators(a.spans, 1 << 30)}
    ops_b = {(o["name"], o["kind"]): o["total_ns"] for o in top_operators(b.spans, 1 << 30)}
    ops = []
    for op in sorted(set(ops_a) | set(ops_b)):
        m = _metric(ops_a.get(op, 0), ops_b.get(op, 0))
        ops.append({"name": op[0], "kind": op[1], **m})
    ops.sort(key=lambda o: -abs(o["delta"]))
    return {"time_unit": "ns", "a": {"source": da["source"], "finish_ns": da["finish_ns"]},
            "b": {"source": db["source"], "finish_ns": db["finish_ns"]}, "metrics": metrics, "operators": ops[:50]}


def _side(x: Any, kwargs: Mapping[str, Any]) -> Report:
    """A report of a Report, Spans, a result.json (with its spans) or a trace set."""
    if isinstance(x, Report):
        return x
    if isinstance(x, (str, os.PathLike)) and Path(x).is_file() and str(x).endswith(".json") and _is_result(Path(x)):
        return report(result=x, **{k: v for k, v in kwargs.items() if k in ("top", "threshold")})
    return report(x, **kwargs)


def _is_result(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(4096)
    return b'"summary"' in head or b'"backend"' in head


def diff(a: Any, b: Any, *, backend: str = "simpy", options: Mapping[str, Any] | None = None,
         system: str | None = None, network: str | None = None, memory: str | None = None,
         comm_groups: str | None = None, format: str | None = None,
         input_options: Mapping[str, Any] | None = None, validate: bool = True, host: Any = None) -> Diff:
    """Compare two runs: each of ``a`` and ``b`` is a trace set (simulated with ``backend`` on
    the given system), a ``result.json`` written with its spans, a :class:`Report` or
    :class:`Spans`."""
    kwargs = {"backend": backend, "options": options, "system": system, "network": network, "memory": memory,
              "comm_groups": comm_groups, "format": format, "input_options": input_options,
              "validate": validate, "host": host}
    return Diff(_side(a, kwargs), _side(b, kwargs))
