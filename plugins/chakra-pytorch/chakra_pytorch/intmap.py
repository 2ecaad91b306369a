"""A dict-like map from small non-negative integers to integers, stored in one array (8 B/key)."""

from __future__ import annotations

from array import array

__all__ = ["IntMap"]


class IntMap:
    """``map[key] = value`` for dense non-negative integer keys; absent keys read as a default.

    PyTorch numbers record functions, node ids and Kineto's external ids with counters, so the
    keys are dense and an array costs 8 bytes per key where a dict costs about 100.
    """

    __slots__ = ("_a",)

    def __init__(self) -> None:
        self._a = array("q")

    def __setitem__(self, key: int, value: int) -> None:
        a = self._a
        if key >= len(a):
            a.frombytes(b"\xff" * 8 * max(key + 1 - len(a), len(a), 1024))
        a[key] = value

    def get(self, key: int, default: int = -1) -> int:
        """The value of ``key``, or ``default`` when it was never set (or is negative)."""
        if 0 <= key < len(self._a):
            v = self._a[key]
            return default if v < 0 else v
        return default
