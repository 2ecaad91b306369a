"""The sweep's results table: one row per point, written as CSV, Parquet (pyarrow) and JSON.

Columns, in order: ``point`` (its number), ``key`` (the content hash of its resolved pipeline),
``status`` (``ok``, ``failed``, ``timeout``, ``skipped``), ``error`` (the error, the timeout or
the reason a constraint skipped it), the swept and derived values (one column per path, e.g.
``system.network[0].bandwidth``), then per backend ``NAME.KEY`` for each number or string of its
summary (``simpy.finish_ns``; one level of mappings flattened, ``simpy.symmetry.classes``),
``NAME.breakdown.*`` (the time split of the rank that finishes last), ``NAME.collectives.*``
(count, bytes and time summed over all collectives and per collective kind) and
``NAME.result_file`` (its ``result.json``, relative to the sweep's directory); last
``provenance`` (chakra-core's version and each implementation with its version) and the timing
columns ``seconds`` (the point's wall-clock time) and the backends' own ``wall_s.*`` and
``events_per_s``.  Only timing columns differ between two runs of the same sweep.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chakra_core.io._etio import atomic_output

__all__ = ["metrics", "short_provenance", "table_rows", "write_tables", "is_timing_column", "TABLE_FILES"]

#: the files a sweep writes in its directory
TABLE_FILES = ("results.csv", "results.parquet", "results.json")
_BREAKDOWN = ("compute_ns", "accelerator_ns", "cpu_ns", "comm_ns", "exposed_comm_ns", "mem_ns", "exposed_mem_ns",
              "overlap_ns", "skew_ns", "idle_ns")
_COLLECTIVE_SUMS = ("count", "bytes", "total_ns", "sync_wait_ns")
_SCALAR = (int, float, str, bool)


def is_timing_column(name: str) -> bool:
    """Whether column ``name`` measures wall-clock time (the only ones that differ between two
    runs of one sweep, whatever the executor)."""
    return name == "seconds" or ".wall_s." in name or name.endswith((".wall_s", ".events_per_s"))


def _scalars(prefix: str, summary: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in summary.items():
        if v is None or isinstance(v, _SCALAR):
            out[f"{prefix}.{k}"] = v
        elif isinstance(v, Mapping):
            out.update({f"{prefix}.{k}.{kk}": vv for kk, vv in v.items() if vv is None or isinstance(vv, _SCALAR)})
    return out


def _breakdown(prefix: str, ranks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    rows = [r for r in ranks if isinstance(r.get("finish_ns"), (int, float))]
    if not rows:
        return {}
    last = max(rows, key=lambda r: (r["finish_ns"], -r.get("rank", 0)))
    out = {f"{prefix}.breakdown.rank": last.get("rank")}
    out.update({f"{prefix}.breakdown.{k}": last[k] for k in _BREAKDOWN if k in last})
    return out


def _collectives(prefix: str, collectives: Any) -> dict[str, Any]:
    if not isinstance(collectives, list) or not all(isinstance(c, Mapping) for c in collectives):
        return {}
    out: dict[str, Any] = {}
    for c in collectives:
        for where in ("total", str(c.get("collective", "unknown"))):
            for k in _COLLECTIVE_SUMS:
                if isinstance(c.get(k), (int, float)):
                    col = f"{prefix}.collectives.{where}.{k}"
                    out[col] = out.get(col, 0) + c[k]
    return out


def metrics(name: str, result: Mapping[str, Any], result_file: str | None) -> dict[str, Any]:
    """The columns of one backend's result (``Result.to_dict()``), prefixed with ``name``."""
    summary = result.get("summary") or {}
    out = _scalars(name, summary)
    out.update(_breakdown(name, result.get("ranks") or []))
    out.update(_collectives(name, summary.get("collectives")))
    out[f"{name}.result_file"] = result_file
    return out


def short_provenance(prov: Mapping[str, Any]) -> dict[str, Any]:
    """chakra-core's version and each implementation that took part (``stage``, qualified name,
    version) from a result's full provenance."""
    impls = [{"stage": i.get("stage"), "name": i.get("qualified_name"), "version": i.get("version")}
             for i in prov.get("implementations", [])]
    return {"chakra_core": prov.get("chakra_core"), "implementations": impls}


def table_rows(records: Sequence[Mapping[str, Any]], params: Sequence[str]) -> list[dict[str, Any]]:
    """One row per point record (sorted by point), in the column order of the module docstring."""
    rows = []
    for rec in sorted(records, key=lambda r: r["index"]):
        row: dict[str, Any] = {"point": rec["index"], "key": rec.get("key"), "status": rec["status"],
                               "error": rec.get("error")}
        row.update({p: rec.get("params", {}).get(p) for p in params})
        timing = {k: v for k, v in (rec.get("metrics") or {}).items() if is_timing_column(k)}
        row.update({k: v for k, v in (rec.get("metrics") or {}).items() if not is_timing_column(k)})
        row["provenance"] = rec.get("provenance")
        row.update(timing)
        row["seconds"] = rec.get("seconds")
        rows.append(row)
    return rows


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    cols: dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    timing = [c for c in cols if is_timing_column(c)]
    return [c for c in cols if not is_timing_column(c)] + timing


def _cell(value: Any) -> Any:
    """A value as one flat cell: lists and mappings as compact JSON text."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return value


def _csv_text(rows: Sequence[Mapping[str, Any]], cols: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if r.get(c) is None else _cell(r.get(c)) for c in cols])
    return buf.getvalue()


def _arrow_column(values: list[Any]) -> Any:
    import pyarrow as pa

    cells = [_cell(v) for v in values]
    kinds = {type(v) for v in cells if v is not None}
    if kinds <= {int, float} and float in kinds:
        cells = [None if v is None else float(v) for v in cells]
    elif len(kinds) > 1:
        cells = [None if v is None else (json.dumps(v) if not isinstance(v, str) else v) for v in cells]
    if not kinds:
        return pa.array(cells, type=pa.null())
    return pa.array(cells)


def _write_parquet(path: Path, rows: Sequence[Mapping[str, Any]], cols: Sequence[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({c: _arrow_column([r.get(c) for r in rows]) for c in cols})
    with atomic_output(path) as tmp:
        pq.write_table(table, tmp)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_tables(directory: Path, rows: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any]) -> list[str]:
    """Write ``results.csv``, ``results.parquet`` and ``results.json`` (``{"sweep": manifest,
    "columns", "rows"}``) in ``directory``, each atomically; return their paths."""
    cols = _columns(rows)
    paths = [directory / name for name in TABLE_FILES]
    with atomic_output(paths[0]) as tmp:
        tmp.write_text(_csv_text(rows, cols))
    _write_parquet(paths[1], rows, cols)
    body = {"sweep": dict(manifest), "columns": cols,
            "rows": [{c: _json_safe(r.get(c)) for c in cols} for r in rows]}
    with atomic_output(paths[2]) as tmp:
        tmp.write_text(json.dumps(body, indent=1, default=str) + "\n")
    return [str(p) for p in paths]
