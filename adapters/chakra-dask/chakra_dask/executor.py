"""The ``dask`` executor: one Dask task per point, on an existing scheduler or a local cluster.

With ``address`` (``tcp://HOST:8786``) the sweep connects to that scheduler; without, it starts a
``LocalCluster`` of ``workers`` worker processes with ``threads`` threads each and closes it at
the end; a local cluster's scheduler and workers listen on the loopback interface only, unless
``listen_all`` is set.  Dask runs tasks in worker threads, so a point's timeout is raised asynchronously in
its thread (it interrupts Python code).  The workers must see the sweep's directory (a shared
file system on a multi-machine cluster): they write each point's backend outputs and the input
cache there.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from chakra_core import Executor, Option, PluginError

__all__ = ["DaskExecutor"]


class DaskExecutor(Executor):
    """Run sweep points as Dask tasks (never retried)."""

    description = "a Dask cluster: an existing scheduler by address, or a local cluster started for the sweep"
    options = {
        "address": Option("str", None, "scheduler to connect to, tcp://HOST:8786 (default: a local cluster)"),
        "workers": Option("int", None, "worker processes of a local cluster (default: the machine's cores)",
                          minimum=1, maximum=1024),
        "threads": Option("int", 1, "threads per worker process of a local cluster", minimum=1, maximum=1024),
        "listen_all": Option("bool", False, "let a local cluster listen on every network interface "
                             "(default: loopback only; see docs/sweeps.md)"),
    }

    def __init__(self) -> None:
        self._client: Any = None

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any],
            options: Mapping[str, Any]) -> Iterator[tuple[int, Any]]:
        """Submit every task and yield ``(index, value)`` as each finishes."""
        if self._client is not None:
            yield from _run(self._client, fn, tasks)
            return
        with self.session(options):
            assert self._client is not None
            yield from _run(self._client, fn, tasks)

    @contextmanager
    def session(self, options: Mapping[str, Any]) -> Iterator[None]:
        """Connect (or start the local cluster) once for every map of the block."""
        if self._client is not None:
            yield
            return
        from distributed import Client, LocalCluster

        cluster = None
        try:
            if options["address"]:
                client = Client(options["address"], timeout=30)
            else:
                cluster = LocalCluster(n_workers=options["workers"] or os.cpu_count() or 1,
                                       threads_per_worker=options["threads"], processes=True,
                                       host="0.0.0.0" if options.get("listen_all") else "127.0.0.1",
                                       dashboard_address=None, silence_logs=logging.ERROR)
                client = Client(cluster)
        except (OSError, TimeoutError, ValueError) as e:
            if cluster is not None:
                cluster.close()
            raise PluginError(f"executor 'dask': cannot use the cluster ({e}); option 'address': "
                              f"{options['address'] or 'none (a local cluster)'}") from None
        self._client = client
        try:
            yield
        finally:
            self._client = None
            client.close()
            if cluster is not None:
                cluster.close()


def _run(client: Any, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[tuple[int, Any]]:
    """Submit the tasks to ``client`` and yield ``(index, value)`` as each finishes."""
    from distributed import as_completed

    futures = client.map(fn, list(tasks), pure=False, retries=0)
    index = {f.key: i for i, f in enumerate(futures)}
    try:
        for f in as_completed(futures):
            try:
                value = f.result()
            except Exception as e:  # noqa: BLE001 - the worker died, or the task could not run
                value = e
            yield index[f.key], value
    finally:
        client.cancel([f for f in futures if not f.done()])
