"""Built-in sweep executor ``local``: a pool of worker processes on this machine."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .._api import Executor
from .._options import Option
from ..hookspecs import hookimpl

__all__ = ["LocalExecutor"]


class LocalExecutor(Executor):
    """Run points in ``workers`` processes (``forkserver``: each worker starts from a clean
    interpreter, whatever threads the calling process runs); a worker that dies fails the points
    it was running, not the sweep."""

    description = "a process pool on this machine (chakra sweep -j N)"
    options = {
        "workers": Option("int", None, "worker processes (default: the machine's cores)", minimum=1),
    }

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any],
            options: Mapping[str, Any]) -> Iterator[tuple[int, Any]]:
        """Submit every task to the pool and yield ``(index, value)`` as each finishes."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        workers = min(options.get("workers") or os.cpu_count() or 1, max(1, len(tasks)))
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["chakra_core._sweeprun"])
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
        try:
            futures = {pool.submit(fn, t): i for i, t in enumerate(tasks)}
            for f in as_completed(futures):
                try:
                    value = f.result()
                except Exception as e:  # noqa: BLE001 - a worker process died (BrokenProcessPool)
                    value = e
                yield futures[f], value
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


@hookimpl
def chakra_register_executors(register):
    """Register the ``local`` executor."""
    register("local", LocalExecutor, description=LocalExecutor.description)
