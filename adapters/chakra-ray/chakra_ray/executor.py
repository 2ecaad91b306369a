"""The ``ray`` executor: one Ray task per point, on an existing cluster or a local one.

With ``address`` (``auto``, ``HOST:6379`` or ``ray://HOST:10001``) the sweep connects to that
cluster; without, it uses the Ray runtime this process already started (``ray.init()`` in a
notebook or a test) or starts a local cluster of ``workers`` CPUs and shuts it down at the end.
At most ``workers`` points (default: the cluster's CPUs) are in flight at once, so that an
interrupted sweep cancels few.  The workers must see the sweep's directory (a shared file system
on a multi-machine cluster): they write each point's backend outputs and the input cache there.

A local cluster listens on the loopback interface only (Ray's RPC has no authentication: anyone
who reaches a listening port can submit work), unless ``listen_all`` is set.  Ray binds its
servers (GCS, raylet, object manager, every worker) to the node's IP, and ``ray.init`` replaces a
loopback ``_node_ip_address`` by the host's routable IP unless
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` is false, which Ray reads once into the private constant
``ray._private.ray_constants.ENABLE_RAY_CLUSTER``: the executor sets both before it starts the
cluster (the only way to keep a local Linux cluster on loopback in Ray 2.x, checked on 2.60), and
checks the node's IP once it has started.

``ray.init`` replaces this process's SIGTERM handler by one that calls ``sys.exit`` (through
``ray._private.utils.set_sigterm_handler``, checked on 2.60), and its C++ core then installs one
that prints a stack dump.  An ``init`` cut short, by that handler or by an interrupt, leaves
processes behind (Ray's agents wait for a GCS server that is gone, and ignore SIGTERM) or crashes
the interpreter as it exits.  So the executor holds SIGTERM and SIGINT back while ``ray.init``
runs, with Ray's Python handler left out, then puts back the handlers it found (which removes
the C++ one) and sends them what came meanwhile: ``chakra``'s SIGTERM ends the sweep as an
interrupt does, and ``ray.shutdown`` stops every process of the cluster.

An ``address`` of the form ``HOST:PORT`` must take a TCP connection within ``CONNECT_TIMEOUT_S``,
and ``ray.init`` gets one try at the cluster's GCS there (about 40 s; it retries 20 times by
default, 14 minutes at an address that takes connections but does not answer), unless
``RAY_gcs_server_port_wait_time_s`` is set.

Ray prints every error that the cluster reports to the driver (a block per worker death) on
stdout, whatever ``log_to_driver``, which broke ``chakra sweep --json``: the executor stops the
thread that prints them as ``ray.shutdown`` does (``ray._private.worker``, checked on 2.60); the
sweep reports each lost point in one line itself.

The workers word their warnings as the sweep's process does (:func:`chakra_core.worker_function`);
``log_to_driver`` being off, what they print goes to their logs (``worker-*.err`` in the logs
folder of Ray's session), so each task also sends the warnings it gave back with its value, and
the executor gives them again in the sweep's process, each message once per map.
"""

from __future__ import annotations

import logging
import os
import socket
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from chakra_core import Executor, Option, PluginError, signals_held, worker_function

__all__ = ["RayExecutor"]


class RayExecutor(Executor):
    """Run sweep points as Ray tasks (one CPU each, never retried)."""

    description = "a Ray cluster: an existing one by address, or a local one started for the sweep"
    options = {
        "address": Option("str", None, "cluster to connect to: auto, HOST:6379 or ray://HOST:10001 "
                          "(default: the runtime this process started, else a local cluster)"),
        "workers": Option("int", None, "points in flight, and the CPUs of a local cluster "
                          "(default: the cluster's CPUs)", minimum=1, maximum=1024),
        "listen_all": Option("bool", False, "let a local cluster listen on every network interface "
                             "(default: loopback only; Ray's RPC has no authentication, see docs/sweeps.md)"),
    }

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any],
            options: Mapping[str, Any]) -> Iterator[tuple[int, Any]]:
        """Submit the tasks (``workers`` at a time) and yield ``(index, value)`` as each finishes."""
        import ray

        started = _connect(ray, options)
        try:
            limit = options["workers"] or max(1, int(ray.cluster_resources().get("CPU", 1)))
            remote = ray.remote(_call).options(num_cpus=1, max_retries=0, name=fn.__name__)
            submit = partial(remote.remote, worker_function(fn))
            pending: dict[Any, int] = {}
            queue = iter(range(len(tasks)))
            try:
                yield from _drain(ray, submit, tasks, queue, pending, limit)
            finally:
                for ref in pending:
                    ray.cancel(ref, force=True)
        finally:
            if started:
                ray.shutdown()


    @contextmanager
    def session(self, options: Mapping[str, Any]) -> Iterator[None]:
        """Connect (or start the local cluster) once for every map of the block."""
        import ray

        started = _connect(ray, options)
        try:
            yield
        finally:
            if started:
                ray.shutdown()


#: the address a local cluster listens on unless ``listen_all``
LOOPBACK = "127.0.0.1"


#: seconds that the ``HOST:PORT`` of ``address`` has to take a TCP connection
CONNECT_TIMEOUT_S = 10.0


def _connect(ray: Any, options: Mapping[str, Any]) -> bool:
    """Connect to the cluster; True when this call started a local one (to shut down after)."""
    if ray.is_initialized():
        return False
    try:
        started = _init(ray, options)
    except BaseException as e:
        ray.shutdown()  # stops what a failed ray.init had started
        if not isinstance(e, (OSError, RuntimeError, ValueError)):
            raise
        raise PluginError(f"executor 'ray': cannot use the cluster ({e}); option 'address': "
                          f"{options['address'] or 'none (a local cluster)'}") from None
    _stop_error_printer(ray)
    if started and not options.get("listen_all") and (node_ip := ray.util.get_node_ip_address()) != LOOPBACK:
        ray.shutdown()
        raise PluginError(f"executor 'ray': the local cluster did not start on {LOOPBACK} (node IP {node_ip}); "
                          "the executor option listen_all=true runs it on the network")
    return started


def _init(ray: Any, options: Mapping[str, Any]) -> bool:
    """``ray.init`` for ``options`` (SIGTERM and SIGINT held back meanwhile); True when it started a local cluster."""
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR, "include_dashboard": False}
    if options["address"]:
        _check_reachable(options["address"])
        with _signals_held(ray), _one_try():
            ray.init(address=options["address"], **quiet)
        return False
    if not options.get("listen_all"):
        _keep_on_loopback()
        quiet["_node_ip_address"] = LOOPBACK
    with _signals_held(ray):
        ray.init(num_cpus=options["workers"] or os.cpu_count() or 1, **quiet)
    return True


@contextmanager
def _signals_held(ray: Any) -> Iterator[None]:
    """SIGTERM and SIGINT held back until ``ray.init`` has returned (:func:`chakra_core.signals_held`),
    with Ray's SIGTERM handler not installed meanwhile (module docstring)."""
    utils: Any = getattr(getattr(ray, "_private", None), "utils", None)
    install = getattr(utils, "set_sigterm_handler", None)  # another Ray: its handler is replaced after
    if install is not None:
        utils.set_sigterm_handler = lambda _handler: None
    try:
        with signals_held():
            yield
    finally:
        if install is not None:
            utils.set_sigterm_handler = install


@contextmanager
def _one_try() -> Iterator[None]:
    """Give ``ray.init`` one try at the cluster's GCS (module docstring) unless the user set the count."""
    name = "RAY_gcs_server_port_wait_time_s"
    if name in os.environ:
        yield
        return
    os.environ[name] = "1"
    try:
        yield
    finally:
        os.environ.pop(name, None)


def _check_reachable(address: str) -> None:
    """Raise ``OSError`` when an address of the form ``HOST:PORT`` takes no TCP connection."""
    host, _, port = address.rpartition(":")
    if "://" in address or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise OSError(f"cannot reach {address}: {e.strerror or e}") from None


def _stop_error_printer(ray: Any) -> None:
    """Stop the thread that prints on stdout the errors that the cluster reports to the driver,
    as ``ray.shutdown`` stops it (module docstring)."""
    worker = ray._private.worker.global_worker
    listener = getattr(worker, "listener_thread", None)
    if listener is None or not listener.is_alive() or not hasattr(worker, "gcs_error_subscriber"):
        return  # none running, or a Ray whose listener is not this one
    worker.threads_stopped.set()
    worker.gcs_error_subscriber.close()
    listener.join()
    worker.threads_stopped.clear()


def _keep_on_loopback() -> None:
    """Make ``ray.init`` keep a loopback node IP (module docstring)."""
    import importlib

    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    constants: Any = importlib.import_module("ray._private.ray_constants")
    constants.ENABLE_RAY_CLUSTER = False


def _call(fn: Callable[[Any], Any], task: Any) -> tuple[Any, list[tuple[Any, ...]]]:
    """``fn(task)`` and the warnings it gave ``(message, category, file, line)``: the function of
    the Ray tasks, ``fn`` being what :func:`chakra_core.worker_function` returned (``ray.remote``
    takes functions, not other callables).  The warnings go back with the value, since what a
    worker prints goes to its log (``log_to_driver`` is off)."""
    with warnings.catch_warnings(record=True) as caught:
        value = fn(task)
    return value, [(w.message, w.category, w.filename, w.lineno) for w in caught]


def _warn_again(said: list[tuple[Any, ...]], seen: set[tuple[type, str]]) -> None:
    """Give the warnings of a task again in this process (its filters and wording apply), each
    message once per map (``seen``), as a worker process gives a warning once."""
    for message, category, filename, lineno in said:
        key = (category, str(message))
        if key not in seen:
            seen.add(key)
            warnings.warn_explicit(message, category, filename, lineno)


def _drain(ray: Any, submit: Callable[[Any], Any], tasks: Sequence[Any], queue: Iterator[int], pending: dict[Any, int],
           limit: int) -> Iterator[tuple[int, Any]]:
    for i in queue:
        pending[submit(tasks[i])] = i
        if len(pending) >= limit:
            break
    seen: set[tuple[type, str]] = set()
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            i = pending.pop(ref)
            try:
                value, said = ray.get(ref)
                _warn_again(said, seen)
            except ray.exceptions.RayError as e:  # the worker died, or the task could not run
                value = e
            yield i, value
            nxt = next(queue, None)
            if nxt is not None:
                pending[submit(tasks[nxt])] = nxt
