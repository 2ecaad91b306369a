"""Built-in sweep executor ``local``: a pool of worker processes on this machine; and
:func:`worker_function`, which sets up the workers of the executors whose engines start their own
processes (Ray, Dask) as the ``local`` executor sets up its own."""

from __future__ import annotations

import os
import pickle
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from chakra_core.base._options import Option
from chakra_core.hookspecs import hookimpl
from chakra_core.host._api import Executor

__all__ = ["LocalExecutor", "worker_function"]


class LocalExecutor(Executor):
    """Run tasks in ``workers`` processes (``forkserver``: each worker starts from a clean
    interpreter, whatever threads the calling process runs).  A worker that dies fails the task
    it was running, not the sweep; one still running a task ``kill_after_s`` past the task's
    timeout (stuck in native code) is killed and replaced (:mod:`chakra_core.sweeps._workerpool`)."""

    description = "a process pool on this machine (chakra sweep -j N)"
    options = {
        "workers": Option("int", None, "worker processes (default: the machine's cores)", minimum=1,
                          maximum=1024),
        "kill_after_s": Option("float", 10.0, "seconds past a point's timeout after which a worker still "
                               "running it is killed", minimum=0),
    }

    def __init__(self) -> None:
        self._pool: Any = None

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any],
            options: Mapping[str, Any]) -> Iterator[tuple[int, Any]]:
        """Run the tasks on the session's pool (or a pool of this call) and yield
        ``(index, value)`` as each finishes."""
        if self._pool is not None:
            yield from self._pool.map(fn, tasks)
            return
        pool = _pool(options, len(tasks))
        try:
            yield from pool.map(fn, tasks)
        finally:
            pool.close()

    @contextmanager
    def session(self, options: Mapping[str, Any]) -> Iterator[None]:
        """Keep one pool (its workers started once, with their plugins loaded) for every map."""
        if self._pool is not None:
            yield
            return
        self._pool = _pool(options, None)
        try:
            yield
        finally:
            self._pool.close()
            self._pool = None


def _pool(options: Mapping[str, Any], tasks: int | None) -> Any:
    import multiprocessing

    from chakra_core.sweeps._workerpool import WorkerPool

    workers = options.get("workers") or os.cpu_count() or 1
    if tasks is not None:
        workers = min(workers, max(1, tasks))
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["chakra_core.sweeps._run"])
    start = partial(_start_worker, _sendable(warnings.formatwarning))
    return WorkerPool(workers, context, start, options.get("kill_after_s", 10.0))


def _sendable(fn: Callable[..., str]) -> Callable[..., str] | None:
    """``fn`` when it can be sent to a worker (pickled: a module-level function), else None."""
    try:
        pickle.dumps(fn)
    except Exception:  # noqa: BLE001 - a closure or lambda of the caller's: the worker keeps its own
        return None
    return fn


def worker_function(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` for an executor whose engine starts its own worker processes (a Ray or Dask cluster):
    a picklable callable that sets its worker up as the ``local`` executor's workers are (warnings
    worded as in the calling process: one ``chakra: warning:`` line under a ``chakra`` command, the
    caller's ``warnings.formatwarning`` under the Python API when it can be pickled; the plugins
    loaded), then returns ``fn(task)``.  Call it in :meth:`Executor.map`, in the calling process,
    and submit what it returns in place of ``fn``."""
    return partial(_in_worker, _sendable(warnings.formatwarning), fn)


def _in_worker(formatwarning: Callable[..., str] | None, fn: Callable[[Any], Any], task: Any) -> Any:
    """``fn(task)`` in a worker set up by :func:`_start_worker` (the plugins are loaded by the first task only)."""
    _start_worker(formatwarning)
    return fn(task)


def _start_worker(formatwarning: Callable[..., str] | None) -> None:
    """A worker's start: its warnings worded as its parent's (a ``chakra`` command's one line;
    Python's own when the parent's wording cannot be sent), the plugins loaded."""
    from chakra_core.host._plugins import get_host

    if formatwarning is not None:
        warnings.formatwarning = formatwarning
    get_host()


@hookimpl
def chakra_register_executors(register):
    """Register the ``local`` executor."""
    register("local", LocalExecutor, description=LocalExecutor.description)
