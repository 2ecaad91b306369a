"""A thread-safe store of the most recently used values, bounded by their summed sizes.

What a process keeps between runs (:func:`.loading.program_of`'s programs, bounded by their
files' bytes; :func:`.planner.planner_for`'s planners, bounded by their count) goes in one of
these; the bound is given on each insertion, so that a caller may read it from a setting that
changes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["LruStore"]

V = TypeVar("V")


class LruStore(Generic[V]):
    """Values by key, the least recently used dropped first once their sizes sum past a bound."""

    def __init__(self) -> None:
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        """The value kept for ``key`` (now the most recently used), else None."""
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value: V, bound: int, size: int = 1) -> None:
        """Keep ``value`` of ``size`` for ``key``, then drop the least recently used values
        until the sizes kept sum to at most ``bound``."""
        with self._lock:
            self._insert(key, value, bound, size)

    def get_or_make(self, key: Hashable, make: Callable[[], V], bound: int) -> V:
        """The value kept for ``key``, else ``make()`` kept (size 1) under ``bound``; one
        value per key even when threads ask at once."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit[0]
            value = make()
            self._insert(key, value, bound, 1)
            return value

    def _insert(self, key: Hashable, value: V, bound: int, size: int) -> None:
        """:meth:`put` with the lock held."""
        self._held -= self._items.pop(key, (None, 0))[1]
        self._items[key] = (value, size)
        self._held += size
        while self._held > bound:
            self._held -= self._items.popitem(last=False)[1][1]
