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

from chakra_core.io._publish import commit_files, publish_files

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


#: the whole numbers a Parquet ``int64`` column holds, and those a ``decimal(38, 0)`` one holds
_INT64 = range(-2**63, 2**63)
_DECIMAL_DIGITS = 38


def _arrow_column(name: str, values: list[Any]) -> tuple[Any, str | None]:
    """The Parquet column of ``values`` and, when its type is not the one the values suggest, a
    note saying which: whole numbers past 64 bits as ``decimal(38, 0)`` (exact), past 38
    digits or mixed with numbers past a float's range as text; other mixed kinds as JSON text."""
    import pyarrow as pa

    cells = [_cell(v) for v in values]
    kinds = {type(v) for v in cells if v is not None}
    if not kinds:
        return pa.array(cells, type=pa.null()), None
    numbers = [v for v in cells if v is not None]
    if kinds == {int} and not all(v in _INT64 for v in numbers):
        if all(abs(v) < 10**_DECIMAL_DIGITS for v in numbers):
            note = f"column {name!r} has whole numbers past 64 bits: written as decimal({_DECIMAL_DIGITS}, 0)"
            return pa.array(cells, type=pa.decimal128(_DECIMAL_DIGITS, 0)), note
        return _text(cells), f"column {name!r} has whole numbers past {_DECIMAL_DIGITS} digits: written as text"
    if kinds == {int, float}:
        try:
            return pa.array([None if v is None else float(v) for v in cells], type=pa.float64()), None
        except OverflowError:
            return _text(cells), f"column {name!r} has whole numbers past a float's range: written as text"
    return (_text(cells), None) if len(kinds) > 1 else (pa.array(cells), None)


def _text(cells: list[Any]) -> Any:
    """A text column: strings as they are, other values as JSON."""
    import pyarrow as pa

    return pa.array([None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in cells],
                    type=pa.string())


def _arrow_table(rows: Sequence[Mapping[str, Any]], cols: Sequence[str]) -> tuple[Any, list[str]]:
    """The Parquet table of ``rows`` and the notes on its columns' types."""
    import pyarrow as pa

    columns, notes = {}, []
    for c in cols:
        columns[c], note = _arrow_column(c, [r.get(c) for r in rows])
        notes += [note] if note else []
    return pa.table(columns), notes


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_tables(directory: Path, rows: Sequence[Mapping[str, Any]],
                 manifest: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Write ``results.csv``, ``results.parquet`` and ``results.json`` (``{"sweep": manifest,
    "columns", "rows", "notes"}``) in ``directory``, published together: each table is made
    before any is put in place, so a failure leaves all three as they were (a run killed during
    the renames is completed by the next one, :func:`chakra_core.io._publish.publish_files`).
    Return their paths and the notes on the Parquet column types."""
    import pyarrow.parquet as pq

    cols = _columns(rows)
    table, notes = _arrow_table(rows, cols)
    body = {"sweep": dict(manifest), "columns": cols,
            "rows": [{c: _json_safe(r.get(c)) for c in cols} for r in rows], "notes": notes}
    with publish_files(directory / "results") as stage:
        (stage / TABLE_FILES[0]).write_text(_csv_text(rows, cols))
        pq.write_table(table, stage / TABLE_FILES[1])
        (stage / TABLE_FILES[2]).write_text(json.dumps(body, indent=1, default=str) + "\n")
        commit_files(stage, TABLE_FILES)
    return [str(directory / name) for name in TABLE_FILES], notes
