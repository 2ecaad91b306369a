"""Design-space sweeps: every point of a pipeline's ``sweep:`` run by an executor, one table.

The sweep's directory ``OUT`` holds ``sweep.json`` (what was swept), ``points/KEY/point.json``
(each point's record, written as the point finishes, so that a killed sweep loses only the points
in flight) with the point's backend outputs beside it (``points/KEY/simpy/result.json``),
``cache/`` (inputs converted once for all the points that share them: before the points run, an
input whose format converts its ranks independently is converted in parts on the executor, see
:mod:`chakra_core.pipeline._rankparts`; another is converted by the first point that reads it) and the tables
``results.csv``, ``results.parquet`` and ``results.json`` (:mod:`chakra_core.sweeps._table`).
``KEY`` is the content hash of the point's resolved pipeline (with the contents of its input and
system files): ``resume`` skips a point whose record exists for the same key with status ok.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from chakra_core.base._deadline import PointTimeout, deadline
from chakra_core.base._errors import ChakraError, ConfigError
from chakra_core.base._need import need
from chakra_core.base._paths import expand_paths
from chakra_core.base._progress import Progress, progress
from chakra_core.base._yamlparse import YamlLines
from chakra_core.host._plugins import PluginHost, get_host
from chakra_core.io._etio import atomic_output
from chakra_core.pipeline._document import check_pipeline, read_document
from chakra_core.pipeline._inputcache import digests_of, input_key, runs_conversion
from chakra_core.pipeline._pipeline import Pipeline, load_pipeline
from chakra_core.pipeline._rankparts import can_fan_out, parts_for
from chakra_core.sweeps._confine import confine_outputs, real_directory
from chakra_core.sweeps._convert import convert_inputs
from chakra_core.sweeps._run import PointTask, run_point
from chakra_core.sweeps._schema import full_schema
from chakra_core.sweeps._spec import Point, SweepSpec, check_seconds, expand, parse_sweep
from chakra_core.sweeps._table import table_rows, write_tables

__all__ = ["sweep", "plan_sweep", "SweepPlan"]

#: the most points a sweep may have unless ``max_points`` (``--max-points``) raises it
MAX_POINTS = 10_000
#: seconds that planning (expanding the points, checking each one) may take unless
#: ``plan_timeout_s`` (``--plan-timeout``) changes it
PLAN_TIMEOUT_S = 300.0

_MANIFEST = "sweep.json"
_RECORD = "point.json"


class SweepPlan:
    """A checked sweep: its points (each resolved pipeline validated), their keys and tasks."""

    def __init__(self, source: str, base: Path, spec: SweepSpec, points: list[Point],
                 tasks: dict[int, PointTask], output: Path, inputs: dict[str, Pipeline] | None = None):
        self.source, self.base, self.spec, self.points, self.tasks, self.output = \
            source, base, spec, points, tasks, output
        #: the inputs (by key) that are converted in parts before the points run
        self.inputs = inputs or {}

    @property
    def columns(self) -> list[str]:
        """The swept paths and the derived ones: the parameter columns of the table."""
        return [*self.spec.parameters, *(p for p in self.spec.derive if p not in self.spec.parameters)]

    def manifest(self, executor: str, workers: int) -> dict[str, Any]:
        """What ``sweep.json`` and ``results.json`` record about the sweep (``workers``: points
        run at once)."""
        from chakra_core.base._version import __version__

        return {"pipeline": self.source, "chakra_core": __version__, "parameters": self.spec.parameters,
                "derived": list(self.spec.derive), "points": len(self.points), "executor": executor,
                "workers": workers, "timeout_s": self.spec.timeout_s}


def _read(spec: str | os.PathLike | Mapping[str, Any],
          base_dir: str | os.PathLike | None) -> tuple[dict, str, YamlLines | None, Path]:
    """The pipeline document, checked against the schema with its sweep: section, its name for
    messages, where its values are (None for a mapping), and the directory its relative paths
    start from."""
    data, source, lines = read_document(spec)
    data = check_pipeline(data, source, lines, full_schema())
    if isinstance(spec, Mapping):
        return data, source, lines, Path(base_dir or ".").resolve()
    return data, source, lines, Path(base_dir).resolve() if base_dir else Path(spec).resolve().parent


def _fingerprint(doc: Mapping[str, Any], pipe: Pipeline, digests: dict[str, str]) -> tuple[str, str]:
    """The point's key and its input's key.  The key hashes the resolved pipeline document (less
    the backends' outputs, which a sweep chooses) and the contents of its input and system files,
    not where they are: the same point in a moved copy of a project has the same key."""
    from chakra_core.base._version import __version__
    from chakra_core.system import SYSTEM_OPTIONS

    inputs = digests_of(pipe.input_paths, digests)
    files = list(inputs.values())
    for st in [*pipe.transforms, *pipe.backends]:
        for k in SYSTEM_OPTIONS:
            v = st.options.get(k)
            if isinstance(v, str) and os.path.isfile(v):
                files += digests_of([v], digests).values()
    body = copy.deepcopy(dict(doc))
    for b in body.get("backends") or []:
        if isinstance(b, dict):
            b.pop("output", None)
    what = {"pipeline": body, "files": files, "chakra_core": __version__}
    key = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:20]
    return key, input_key(pipe, inputs)


def plan_sweep(spec: str | os.PathLike | Mapping[str, Any], output: str | os.PathLike | None = None, *,
               timeout_s: float | None = None, host: PluginHost | None = None,
               base_dir: str | os.PathLike | None = None, max_points: int = MAX_POINTS,
               plan_timeout_s: float = PLAN_TIMEOUT_S) -> SweepPlan:
    """Expand a pipeline's sweep and validate every point's resolved pipeline; raises
    ConfigError naming the first bad point and its values, or when the sweep has more than
    ``max_points`` points, or when planning takes more than ``plan_timeout_s`` seconds."""
    host = host or get_host()
    data, source, lines, base = _read(spec, base_dir)
    if "sweep" not in data:
        raise ConfigError("the pipeline has no sweep: section (chakra run runs it once)", source)
    sweep_spec = parse_sweep(data["sweep"], source, lines)
    if timeout_s is not None:
        sweep_spec.timeout_s = check_seconds(timeout_s, "the timeout")
    _check_bounds(sweep_spec, source, max_points, plan_timeout_s)
    out = Path(output) if output is not None else base / "out" / f"{Path(source).stem}-sweep"
    try:
        with deadline(plan_timeout_s):
            return _plan(data, source, base, sweep_spec, out, host)
    except PointTimeout:
        raise ConfigError(f"planning the sweep took more than {plan_timeout_s:g} s (its points and their "
                          "expressions; give more time with --plan-timeout S)", source) from None


def _check_bounds(spec: SweepSpec, source: str, max_points: int, plan_timeout_s: float) -> None:
    """Refuse a sweep of more than ``max_points`` points before any point is made."""
    check_seconds(plan_timeout_s, "the planning time limit")
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 1:
        raise ConfigError(f"the most points a sweep may have must be a whole number >= 1, got {max_points!r}")
    if spec.size > max_points:
        size = str(spec.size) if spec.size < 10**15 else f"about 10**{len(str(spec.size)) - 1}"
        raise ConfigError(f"the sweep has {size} points, more than the limit of {max_points} "
                          f"(raise it with --max-points {spec.size}, or max_points= in Python)", source)


def _plan(data: dict[str, Any], source: str, base: Path, sweep_spec: SweepSpec, out: Path,
          host: PluginHost) -> SweepPlan:
    base_doc = {k: v for k, v in data.items() if k != "sweep"}
    points = expand(base_doc, sweep_spec, source)
    tasks: dict[int, PointTask] = {}
    inputs: dict[str, Pipeline] = {}
    digests: dict[str, str] = {}
    readable: set[tuple[str, ...]] = set()
    for p in points:
        if p.skipped:
            continue
        try:
            pipe = load_pipeline(p.document, host, base, source=source)
            _check_inputs(pipe, readable)
            key, ikey = _fingerprint(p.document, pipe, digests)
            confine_outputs(pipe.backends, p.document, out / "points" / key)
        except ChakraError as e:
            inner = e.message if e.where == source and not e.location else str(e)
            raise ConfigError(f"{p.label}: {inner}", source) from None
        tasks[p.index] = PointTask(p.index, key, p.document, source, str(base), str(out.resolve()), ikey,
                                   sweep_spec.timeout_s)
        if ikey not in inputs and can_fan_out(pipe) and runs_conversion(pipe):
            inputs[ikey] = pipe
    return SweepPlan(source, base, sweep_spec, points, tasks, out, inputs)


def _check_inputs(pipe: Pipeline, readable: set[tuple[str, ...]]) -> None:
    """Raise TraceFormatError naming an input path of ``pipe`` that gives no file, or a file that
    cannot be read (the check ``chakra run`` makes when it opens them); ``readable``: the path
    lists checked already."""
    paths = tuple(pipe.input_paths)
    if pipe.input is not None and pipe.input.kind == "format" and paths not in readable:
        for path in paths:
            expand_paths(path, required="trace files")
        readable.add(paths)


def _check_output(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError("the sweep's output must be a directory", str(out))
    if out.is_dir() and any(out.iterdir()) and not (out / _MANIFEST).is_file():
        raise ConfigError(f"not empty and not a sweep's directory (no {_MANIFEST}); give another -o", str(out))
    for part in ("points", "cache"):
        real_directory(out, part)


def _earlier(plan: SweepPlan) -> dict[int, dict[str, Any]]:
    """Records of an earlier run of the same points (the same keys) that finished ok, with this
    sweep's parameter values."""
    found = {}
    for t in plan.tasks.values():
        try:
            rec = json.loads((plan.output / "points" / t.key / _RECORD).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and rec.get("status") == "ok" and rec.get("key") == t.key:
            found[t.index] = {**rec, "index": t.index, "params": _params(plan, t.index)}
    return found


def _write_record(out: Path, rec: Mapping[str, Any]) -> None:
    path = real_directory(out, "points", rec["key"]) / _RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as tmp:
        tmp.write_text(json.dumps(rec, indent=1, default=str) + "\n")


class _Counts:
    """Points done, running, failed, for the progress bar."""

    def __init__(self, total: int, workers: int):
        self.total, self.workers, self.done, self.failed = total, workers, 0, 0

    def text(self) -> str:
        running = min(self.workers, self.total - self.done)
        return f"running={running} failed={self.failed}"


@contextmanager
def _bar(total: int, workers: int) -> Iterator[tuple[Progress, _Counts]]:
    counts = _Counts(total, workers)
    with progress("sweep", total=total, unit="point") as bar:
        bar.status(counts.text())
        yield bar, counts


def _lost(task: PointTask, error: BaseException) -> dict[str, Any]:
    if isinstance(error, TimeoutError):  # the executor killed the worker past the point's timeout
        status, text = "timeout", f"did not finish within {task.timeout_s:g} s ({error})"
    else:
        status, text = "failed", f"the executor lost the point: {type(error).__name__}: {error}"
    return {"index": task.index, "key": task.key, "status": status, "metrics": {}, "provenance": None,
            "seconds": None, "error": text}


def _run(plan: SweepPlan, impl: Any, options: Mapping[str, Any], pending: list[PointTask],
         records: dict[int, dict[str, Any]]) -> None:
    """Run ``pending`` on the executor, writing each record as its point finishes."""
    with _bar(len(pending), _workers(options, pending)) as (bar, counts):
        results = impl.map(run_point, pending, options)
        try:
            for i, value in results:
                task = pending[i]
                rec = _lost(task, value) if isinstance(value, BaseException) else dict(value)
                rec["params"] = _params(plan, task.index)
                _write_record(plan.output, rec)
                records[task.index] = rec
                counts.done += 1
                counts.failed += rec["status"] != "ok"
                bar.advance()
                bar.status(counts.text())
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()


def _workers(options: Mapping[str, Any], pending: Sequence[PointTask]) -> int:
    """How many points run at once: the executor's ``workers`` (else the cores), at most one
    per point to run."""
    return min(parts_for(options), len(pending))


def _params(plan: SweepPlan, index: int) -> dict[str, Any]:
    from chakra_core.base._docpath import get_path

    point = plan.points[index]
    values = dict(point.params)
    for path in plan.spec.derive:
        values.setdefault(path, get_path(point.document, path))
    return values


def sweep(pipeline: str | os.PathLike | Mapping[str, Any], output: str | os.PathLike | None = None, *,
          executor: str = "local", executor_options: Mapping[str, Any] | None = None, jobs: int | None = None,
          resume: bool = False, timeout_s: float | None = None, check: bool = False,
          host: PluginHost | None = None, base_dir: str | os.PathLike | None = None,
          max_points: int = MAX_POINTS, plan_timeout_s: float = PLAN_TIMEOUT_S) -> dict[str, Any]:
    """Run every point of ``pipeline``'s ``sweep:`` on ``executor`` and write the results table.

    ``output``: the sweep's directory (default ``out/<pipeline stem>-sweep`` beside the
    pipeline); ``jobs``: points at once (the executor's ``workers`` option); ``resume``: skip
    points whose record exists for the same resolved pipeline; ``timeout_s``: per point
    (overrides ``sweep.timeout_s``); ``check``: only validate every point; ``max_points``: the
    most points the sweep may have; ``plan_timeout_s``: seconds planning may take.  Returns
    ``{"output", "points", "ok", "failed", "timeout", "skipped", "reused", "workers", "files",
    "notes", "rows"}`` (``workers``: points run at once; ``notes``: on the Parquet column types).

    The tables are written when the executor has started (or nothing was left to run), also when
    the sweep is interrupted; a point this run did not finish keeps the row of an earlier run's
    ok record with the same key, as ``resume`` would reuse it.  When the executor cannot start
    (a bad address, an interruption before it is up), ``sweep.json`` and the tables of an
    earlier run are left as they were.
    """
    host = host or get_host()
    plan = plan_sweep(pipeline, output, timeout_s=timeout_s, host=host, base_dir=base_dir, max_points=max_points,
                      plan_timeout_s=plan_timeout_s)
    impl = host.registry.get("executor", executor)
    opts = dict(executor_options or {})
    if jobs is not None:
        opts["workers"] = jobs
    options = impl.check_options(opts)
    counts = {"points": len(plan.points), "runnable": len(plan.tasks),
              "skipped": sum(1 for p in plan.points if p.skipped)}
    if check:
        return {"output": str(plan.output), **counts, "files": [], "rows": []}
    need("pyarrow", "tables")
    _check_output(plan.output)
    earlier = _earlier(plan)
    records = dict(earlier) if resume else {}
    reused = len(records)
    pending = [t for i, t in plan.tasks.items() if i not in records]
    manifest = plan.manifest(executor, _workers(options, pending))
    started = False
    try:
        with impl.session(options) if pending else nullcontext():
            started = True
            _start(plan.output, manifest)
            _run_all(plan, impl, options, pending, records)
    finally:
        if started:  # else an earlier run's tables, if any, stay as they were
            rows = table_rows([*{**earlier, **records}.values(), *_skipped(plan)], plan.columns)
            files, notes = write_tables(plan.output, rows, manifest)
    status = [r["status"] for r in rows]
    return {"output": str(plan.output), **counts, "ok": status.count("ok"), "failed": status.count("failed"),
            "timeout": status.count("timeout"), "reused": reused, "workers": manifest["workers"], "files": files,
            "notes": notes, "rows": rows}


def _start(out: Path, manifest: Mapping[str, Any]) -> None:
    """Make the sweep's directory and write its ``sweep.json``: once the executor is up."""
    out.mkdir(parents=True, exist_ok=True)
    with atomic_output(out / _MANIFEST) as tmp:
        tmp.write_text(json.dumps(manifest, indent=1) + "\n")


def _run_all(plan: SweepPlan, impl: Any, options: Mapping[str, Any], pending: list[PointTask],
             records: dict[int, dict[str, Any]]) -> None:
    """Convert the inputs of ``pending`` in parts, then run the points whose input converted."""
    if not pending:
        return
    unconverted = convert_inputs(plan, impl, options, pending)
    for task in pending:
        if task.input_key in unconverted:
            rec = {"index": task.index, "key": task.key, "metrics": {}, "provenance": None,
                   "seconds": None, **unconverted[task.input_key], "params": _params(plan, task.index)}
            _write_record(plan.output, rec)
            records[task.index] = rec
    pending = [t for t in pending if t.input_key not in unconverted]
    if pending:
        _run(plan, impl, options, pending, records)


def _skipped(plan: SweepPlan) -> list[dict[str, Any]]:
    return [{"index": p.index, "key": None, "status": "skipped", "error": p.skipped, "metrics": {},
             "params": _params(plan, p.index), "seconds": None} for p in plan.points if p.skipped]
