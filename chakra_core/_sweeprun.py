"""One point of a sweep, as a worker runs it: the function every executor calls.

:func:`run_point` never raises for a failing point: it returns the point's record with
``status`` ``ok``, ``failed`` (the one-line error) or ``timeout`` (the point ran past its
``timeout_s`` and was interrupted).  The timeout is enforced inside the worker: by ``SIGALRM`` in
a worker's main thread (local process pool, Ray), by an exception raised asynchronously in the
point's thread elsewhere (Dask's worker threads); both interrupt Python code, not a call blocked
inside a C extension.  For that, the ``local`` executor kills a worker still busy well past the
timeout (:mod:`chakra_core._workerpool`).
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import ChakraError

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


class PointTimeout(BaseException):
    """Raised inside a point that ran past its timeout (a BaseException, so that plugin code
    catching Exception does not swallow it)."""


#: seconds between two repeats of the interruption, once the deadline has passed (a delivery can
#: be lost: an exception raised inside a garbage-collector callback is printed and ignored)
_REPEAT_S = 0.05


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`PointTimeout` in this thread once ``seconds`` have passed inside the block,
    again every 50 ms until the block has ended."""
    if not seconds:
        yield
    elif threading.current_thread() is threading.main_thread():
        with _alarm(seconds):
            yield
    else:
        with _async_interrupt(seconds):
            yield


def _until_done(step: Callable[[], None]) -> None:
    """Run ``step`` to its end, retrying when an interruption of the ending block hits it."""
    while True:
        try:
            step()
            return
        except PointTimeout:
            continue


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: Any) -> None:
        raise PointTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, _REPEAT_S)

    def stop() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    try:
        yield
    finally:
        _until_done(stop)


@contextmanager
def _async_interrupt(seconds: float) -> Iterator[None]:
    tid = ctypes.c_ulong(threading.get_ident())
    lock, ended = threading.Lock(), threading.Event()

    def interrupt() -> None:
        wait = seconds
        while not ended.wait(wait):
            with lock:
                if not ended.is_set():
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(tid, ctypes.py_object(PointTimeout))
            wait = _REPEAT_S

    def stop() -> None:
        with lock:
            ended.set()
            ctypes.pythonapi.PyThreadState_SetAsyncExc(tid, None)  # one not raised yet is dropped

    watchdog = threading.Thread(target=interrupt, name="chakra-point-deadline", daemon=True)
    watchdog.start()
    try:
        yield
    finally:
        _until_done(stop)


def output_names(names: Sequence[str]) -> list[str]:
    """Each backend's directory inside a point's directory: its name, ``-2``, ``-3`` for repeats."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for name in names:
        bare = name.rsplit(":", 1)[-1]
        seen[bare] = seen.get(bare, 0) + 1
        out.append(bare if seen[bare] == 1 else f"{bare}-{seen[bare]}")
    return out


def run_point(task: PointTask) -> dict[str, Any]:
    """Run one point; return its record ``{index, key, status, error, seconds, metrics, provenance}``."""
    from ._plugins import get_host
    from ._progress import set_progress_enabled

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
    from ._inputcache import cached_traces, validated
    from ._pipeline import load_pipeline
    from ._sweeptable import metrics, short_provenance

    pipe = load_pipeline(task.document, base_dir=task.base_dir, source=task.source)
    out = Path(task.output)
    point_dir = out / "points" / task.key
    for b, name in zip(pipe.backends, output_names([b.name for b in pipe.backends])):
        b.output = point_dir / name
    traces = cached_traces(pipe, out / "cache", task.input_key)
    with validated(pipe, out / "cache", task.input_key):
        ran = pipe.run(traces)
    found: dict[str, Any] = {}
    prov: dict[str, Any] = {}
    for name, b in zip(output_names([b.name for b in pipe.backends]), ran["backends"]):
        rel = Path(b["result_file"]).relative_to(out).as_posix()
        found.update(metrics(name, b["result"], rel))
        prov = prov or short_provenance(b["result"]["provenance"])
    return found, prov
