"""The ``dask`` executor: one Dask task per point, on an existing scheduler or a local cluster.

With ``address`` (``tcp://HOST:8786``) the sweep connects to that scheduler; without, it starts a
``LocalCluster`` of ``workers`` worker processes with ``threads`` threads each and closes it at
the end; a local cluster's scheduler and workers listen on the loopback interface only, unless
``listen_all`` is set.  Dask runs tasks in worker threads, so a point's timeout is raised asynchronously in
its thread (it interrupts Python code).  The workers must see the sweep's directory (a shared
file system on a multi-machine cluster): they write each point's backend outputs and the input
cache there.

A local cluster's scheduler fails a task whose worker died (``allowed-failures`` 0: by default it
runs it again on up to 3 more workers, which a point that kills its worker kills in turn, and
``retries=0`` does not govern that) and gives a worker no more tasks than it has threads
(``worker-saturation`` 1.0), so that the death fails only the points that worker was running, as
with the ``local`` executor; a scheduler at ``address`` keeps its own settings.  Its logs (a
worker's death, a task's traceback) are silenced below CRITICAL in this process and the
workers': the sweep reports each lost point in one line itself.  Its HTTP server (no dashboard)
listens on a free port, not on 8787, which another cluster may hold.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from chakra_core import Executor, Option, PluginError, signals_held, worker_function

__all__ = ["DaskExecutor"]

#: the scheduler settings of a local cluster: a task whose worker died is failed, not run again
#: on another worker (``retries=0`` does not govern that), and a worker is given no more tasks
#: than it has threads, so that its death fails only the points it was running
LOCAL_SCHEDULER = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}


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
        client, cluster = _connect(options)
        self._client = client
        try:
            yield
        finally:
            self._client = None
            client.close()
            if cluster is not None:
                cluster.close()


def _connect(options: Mapping[str, Any]) -> tuple[Any, Any]:
    """``(client, local cluster or None)``: a client of the scheduler at ``address``, or of a local
    cluster started for ``options`` (SIGTERM and SIGINT held back while it starts)."""
    from distributed import Client

    client = cluster = None
    try:
        if options["address"]:
            client = Client(options["address"], timeout=30)
        else:
            with signals_held():
                cluster = _local_cluster(options)
                client = Client(cluster)
        return client, cluster
    except BaseException as e:
        for part in (client, cluster):
            if part is not None:
                part.close()
        if not isinstance(e, (OSError, TimeoutError, ValueError)):
            raise
        raise PluginError(f"executor 'dask': cannot use the cluster ({e}); option 'address': "
                          f"{options['address'] or 'none (a local cluster)'}") from None


def _local_cluster(options: Mapping[str, Any]) -> Any:
    """A ``LocalCluster`` for ``options`` (module docstring), its scheduler set as ``LOCAL_SCHEDULER``."""
    import dask
    from distributed import LocalCluster

    host = "0.0.0.0" if options.get("listen_all") else "127.0.0.1"
    with dask.config.set(LOCAL_SCHEDULER):
        return LocalCluster(n_workers=options["workers"] or os.cpu_count() or 1,
                            threads_per_worker=options["threads"], processes=True, host=host,
                            dashboard_address=None, silence_logs=logging.CRITICAL,
                            scheduler_kwargs={"dashboard_address": f"{host}:0"})




def _run(client: Any, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[tuple[int, Any]]:
    """Submit the tasks to ``client`` (``fn`` run in workers set up as the ``local`` executor's:
    :func:`chakra_core.worker_function`) and yield ``(index, value)`` as each finishes."""
    from distributed import KilledWorker, as_completed

    futures = client.map(worker_function(fn), list(tasks), pure=False, retries=0)
    index = {f.key: i for i, f in enumerate(futures)}
    try:
        for f in as_completed(futures):
            try:
                value = f.result()
            except KilledWorker as e:
                value = _died(e)
            except Exception as e:  # noqa: BLE001 - the task could not run
                value = e
            yield index[f.key], value
    finally:
        client.cancel([f for f in futures if not f.done()])


def _died(e: Any) -> RuntimeError:
    """The error of a point whose worker died (Dask's ``KilledWorker``, which names the task's key)."""
    tries = e.allowed_failures + 1
    each = f", on each of the {tries} workers that ran it" if tries > 1 else ""
    return RuntimeError(f"the worker process died{each} (Dask worker {e.last_worker.address})")
