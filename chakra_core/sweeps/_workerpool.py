"""A pool of worker processes that can kill one worker: the local executor's engine.

Each worker runs one task at a time, sent over its own pipe.  A task with a ``timeout_s``
attribute is interrupted by the task function itself when it runs past it (a Python-level
interruption, see :func:`chakra_core.sweeps._run.deadline`); when the worker is still busy
``kill_after_s`` seconds after that (stuck in native code, or with the interruption blocked), it
is killed, the task's value is a :class:`TimeoutError`, and a fresh worker takes its place.  A
worker that dies fails only the task it ran.  Workers are started when there is work for them
and say when they are ready, so a task's clock never counts a worker's start-up.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from chakra_core.base._errors import PluginError

__all__ = ["WorkerPool"]

_READY, _VALUE = "ready", "value"
#: workers in a row that may die before they are ready before the pool gives up
_START_FAILURES = 3
#: what to do when a worker dies as it starts because it ran the caller's script again
_GUARD = ("a script that starts worker processes (a sweep, convert with jobs or an executor) must guard its "
          "top level with 'if __name__ == \"__main__\":'")


def _serve(conn: Connection, initializer: Callable[[], Any] | None) -> None:
    """A worker's loop: run each ``(fn, task)`` received and send back its value (or the error).
    The worker stays in the caller's process group, so that a signal to the group (a killed
    ``chakra sweep``) reaches it too; on Ctrl-C (SIGINT to the group) it ends quietly, leaving
    the caller, interrupted too, to say so once."""
    try:
        _loop(conn, initializer)
    except KeyboardInterrupt:
        return


def _loop(conn: Connection, initializer: Callable[[], Any] | None) -> None:
    """The body of :func:`_serve`."""
    if initializer is not None:
        initializer()
    conn.send((_READY, None))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        fn, task = message
        try:
            value = fn(task)
        except Exception as e:  # noqa: BLE001 - the pool reports it as the task's value
            value = e
        try:
            conn.send((_VALUE, value))
        except Exception as e:  # noqa: BLE001 - a value that does not pickle
            conn.send((_VALUE, RuntimeError(f"the task's value could not be sent back: {type(e).__name__}: {e}")))


class _Worker:
    def __init__(self, context: Any, initializer: Callable[[], Any] | None):
        self.conn, child = context.Pipe()
        # not daemonic: a task may start processes of its own (the emulator's ranks)
        self.process = context.Process(target=_serve, args=(child, initializer))
        try:
            self.process.start()
        except RuntimeError as e:  # a worker that re-ran an unguarded script starts workers itself
            if "bootstrapping phase" not in str(e):
                raise
            raise SystemExit(f"chakra: a worker process ran its parent's script again: {_GUARD}") from None
        child.close()
        self.ready = False
        self.task: int | None = None
        self.deadline: float | None = None

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(2)
        self.kill()


class WorkerPool:
    """``workers`` processes of the multiprocessing ``context``; ``initializer`` runs once in
    each before its first task; ``kill_after_s``: seconds past a task's ``timeout_s`` after
    which its worker is killed."""

    def __init__(self, workers: int, context: Any, initializer: Callable[[], Any] | None = None,
                 kill_after_s: float = 10.0):
        self.size, self.context, self.initializer, self.kill_after_s = workers, context, initializer, kill_after_s
        self.workers: list[_Worker] = []
        self.start_failures = 0

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Run ``fn(task)`` for every task and yield ``(index, value)`` as each finishes; the
        workers still busy when the generator is closed are killed."""
        queue = deque(range(len(tasks)))
        left = len(tasks)
        try:
            while left:
                self._grow(min(self.size, left))
                self._assign(fn, tasks, queue)
                for index, value in self._collect():
                    left -= 1
                    yield index, value
        finally:
            for w in [w for w in self.workers if w.task is not None]:
                self._drop(w)

    def close(self) -> None:
        """Stop every worker."""
        for w in self.workers:
            w.stop()
        self.workers = []

    def _grow(self, wanted: int) -> None:
        while len(self.workers) < wanted:
            self.workers.append(_Worker(self.context, self.initializer))

    def _drop(self, w: _Worker) -> None:
        w.kill()
        self.workers.remove(w)

    def _assign(self, fn: Callable[[Any], Any], tasks: Sequence[Any], queue: deque[int]) -> None:
        for w in self.workers:
            if not queue:
                return
            if w.ready and w.task is None:
                index = queue.popleft()
                timeout = getattr(tasks[index], "timeout_s", None)
                w.conn.send((fn, tasks[index]))
                w.task = index
                w.deadline = time.monotonic() + timeout + self.kill_after_s if timeout else None

    def _collect(self) -> Iterator[tuple[int, Any]]:
        """Wait for the first worker to answer, die or pass its deadline; yield what finished."""
        deadlines = [w.deadline for w in self.workers if w.deadline is not None]
        wait_s = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        watched = {w.conn: w for w in self.workers}
        watched.update({w.process.sentinel: w for w in self.workers})
        ready = wait(list(watched), wait_s)
        answered = {watched[r] for r in ready}
        for w in list(self.workers):
            if w in answered:
                yield from self._answer(w)
            elif w.deadline is not None and w.task is not None and time.monotonic() >= w.deadline:
                index = w.task
                self._drop(w)
                yield index, TimeoutError(f"killed {self.kill_after_s:g} s after its timeout")

    def _answer(self, w: _Worker) -> Iterator[tuple[int, Any]]:
        try:
            kind, value = w.conn.recv() if w.conn.poll() else (None, None)
        except (EOFError, OSError):
            kind = None
        if kind is None:  # the worker died
            index, ready = w.task, w.ready
            self._drop(w)
            code = w.process.exitcode
            if index is not None:
                yield index, RuntimeError(f"the worker process died (exit code {code})")
            elif not ready:
                self.start_failures += 1
                if self.start_failures >= _START_FAILURES:
                    raise PluginError(f"executor 'local': worker processes die as they start (exit code {code}; "
                                      f"{_GUARD})")
            return
        if kind == _READY:
            w.ready = True
            self.start_failures = 0
            return
        index, w.task, w.deadline = w.task, None, None
        assert index is not None
        yield index, value
