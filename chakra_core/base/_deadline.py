"""A deadline for a block of Python code in any thread: :func:`deadline` raises
:class:`PointTimeout` once its seconds have passed.

By ``SIGALRM`` in the main thread (an interval timer set by the caller is re-armed afterwards
with what is left of it), by an exception raised asynchronously in the block's thread
elsewhere; both interrupt Python code, not a call blocked inside a C extension.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["PointTimeout", "deadline"]


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
    started = time.monotonic()
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds, _REPEAT_S)

    def stop() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay > 0:  # an enclosing timer is re-armed with what is left of it (due now: at once)
            left = max(outer_delay - (time.monotonic() - started), 1e-6)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)

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
