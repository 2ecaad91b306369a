"""One point of a sweep, as a worker runs it: the function every executor calls.

:func:`run_point` never raises for a failing point: it returns the point's record with
``status`` ``ok``, ``failed`` (the one-line error) or ``timeout`` (the point ran past its
``timeout_s`` and was interrupted).  The timeout is enforced inside the worker: by ``SIGALRM`` in
a worker's main thread (local process pool, Ray), by an exception raised asynchronously in the
point's thread elsewhere (Dask's worker threads); both interrupt Python code, not a call blocked
inside a C extension.  For that, the ``local`` executor kills a worker still busy well past the
timeout (:mod:`chakra_core.sweeps._workerpool`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chakra_core.base._deadline import PointTimeout, deadline
from chakra_core.base._errors import ChakraError
from chakra_core.sweeps._confine import confine_outputs, output_names, real_directory

__all__ = ["PointTask", "PointTimeout", "run_point", "deadline", "output_names"]


@dataclass(frozen=True)
class PointTask:
    """What a worker needs to run one point (picklable): the resolved pipeline document, the
    pipeline's file and directory, the sweep's output directory, the point's content hash
    ``key``, its input's hash ``input_key`` (None: nothing to cache) and its timeout."""

    index: int
    key: str
    document: dict[str, Any]
    source: str
    base_dir: str
    output: str
    input_key: str | None = None
    timeout_s: float | None = None


def run_point(task: PointTask) -> dict[str, Any]:
    """Run one point; return its record ``{index, key, status, error, seconds, metrics, provenance}``."""
    from chakra_core.base._progress import set_progress_enabled
    from chakra_core.host._plugins import get_host

    set_progress_enabled(False)
    get_host()  # a fresh worker loads its plugins before the point's clock starts
    record: dict[str, Any] = {"index": task.index, "key": task.key, "status": "ok", "error": None,
                              "metrics": {}, "provenance": None}
    t0 = time.perf_counter()
    try:
        with deadline(task.timeout_s):
            record["metrics"], record["provenance"] = _run(task)
    except PointTimeout:
        record["status"], record["error"] = "timeout", f"did not finish within {task.timeout_s:g} s"
    except ChakraError as e:
        record["status"], record["error"] = "failed", str(e)
    except Exception as e:  # noqa: BLE001 - a bug in a plugin fails its point, not the sweep
        record["status"], record["error"] = "failed", f"internal error: {type(e).__name__}: {e}"
    record["seconds"] = round(time.perf_counter() - t0, 3)
    return record


def _run(task: PointTask) -> tuple[dict[str, Any], dict[str, Any]]:
    from chakra_core.pipeline._inputcache import cached_traces, validated
    from chakra_core.pipeline._pipeline import load_pipeline
    from chakra_core.sweeps._table import metrics, short_provenance

    pipe = load_pipeline(task.document, base_dir=task.base_dir, source=task.source)
    out = Path(task.output)
    point_dir = real_directory(out, "points", task.key)
    confine_outputs(pipe.backends, task.document, point_dir)
    for name in output_names([b.name for b in pipe.backends]):
        real_directory(point_dir, name)
    traces = cached_traces(pipe, out / "cache", task.input_key)
    with validated(pipe, out / "cache", task.input_key):
        ran = pipe.run(traces)
    found: dict[str, Any] = {}
    prov: dict[str, Any] = {}
    for name, b in zip(output_names([b.name for b in pipe.backends]), ran["backends"]):
        rel = Path(b["result_file"]).relative_to(out).as_posix()
        found.update(metrics(name, b["result"], rel))
        prov = merged_provenance(prov, short_provenance(b["result"]["provenance"]))
    return found, prov


def merged_provenance(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The provenance of a point run by several backends: every implementation once, in order."""
    if not a:
        return b
    seen = a["implementations"]
    return {**a, "implementations": seen + [i for i in b["implementations"] if i not in seen]}
