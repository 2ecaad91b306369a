"""Two pieces of work side by side: a thread for one of them only when the work is large."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["THREAD_FROM", "both"]

A = TypeVar("A")
B = TypeVar("B")

#: rows (spans, nodes) from which a thread pays for its start (about 0.1-5 ms on a loaded machine)
THREAD_FROM = 100_000


def both(left: Callable[[], A], right: Callable[[], B], rows: int) -> tuple[A, B]:
    """``left()`` and ``right()``; over ``rows`` rows (:data:`THREAD_FROM` or more), ``left`` runs
    in a thread of its own (numpy work outside the GIL) while ``right`` runs in this one."""
    if rows < THREAD_FROM:
        return left(), right()
    with ThreadPoolExecutor(1, thread_name_prefix="chakra-beside") as pool:
        future = pool.submit(left)
        other = right()
        return future.result(), other
