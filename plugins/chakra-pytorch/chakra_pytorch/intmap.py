"""A dict-like map from non-negative integers to integers: an array for dense keys (8 B/key),
a dict for the few keys far beyond them."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

__all__ = ["IntMap"]

#: keys below this always go to the array (at most 8 MiB of it before any key is counted)
_DENSE_FLOOR = 1 << 20
#: above the floor, the array may span this many slots per key stored
_DENSE_FACTOR = 8


class IntMap:
    """``map[key] = value`` for non-negative integer keys; absent keys read as a default.

    PyTorch numbers record functions, node ids and Kineto's external ids with counters, so the
    keys are dense and an array costs 8 bytes per key where a dict costs about 100.  A key that
    would stretch the array far beyond the number of keys stored (a counter that started high,
    a corrupt file) goes to a side dict instead, so memory stays proportional to the keys.
    Values must fit a signed 64-bit integer.
    """

    __slots__ = ("_a", "_far", "_count")

    def __init__(self) -> None:
        self._a = array("q")
        self._far: dict[int, int] = {}
        self._count = 0

    def __setitem__(self, key: int, value: int) -> None:
        if key < 0:
            raise KeyError(key)
        a = self._a
        self._count += 1
        if key < len(a):
            a[key] = value
            return
        if key < max(_DENSE_FLOOR, _DENSE_FACTOR * self._count):
            a.frombytes(b"\xff" * 8 * max(key + 1 - len(a), len(a), 1024))
            a[key] = value
            # far keys that the array now covers move into it
            for k in [k for k in self._far if k < len(a)]:
                a[k] = self._far.pop(k)
            return
        self._far[key] = value

    def set_pairs(self, keys: Iterable[int], values: Iterable[int]) -> None:
        """``map[k] = v`` for the pairs of ``keys`` and ``values`` in turn, leaving out those
        with a negative key or value (one loop: the same as setting them one by one)."""
        a = self._a
        n = len(a)
        for k, v in zip(keys, values):
            if k < 0 or v < 0:
                continue
            if k < n:
                a[k] = v
                self._count += 1
            else:
                self[k] = v
                n = len(a)  # the array grows in place

    def setdefault(self, key: int, value: int) -> int:
        """The value of ``key`` when it was set, else ``value``, set now (``key`` and ``value``
        non-negative)."""
        a = self._a
        if 0 <= key < len(a):  # the common case, without a call
            old = a[key]
            if old >= 0:
                return old
            a[key] = value
            self._count += 1
            return value
        old = self.get(key)
        if old >= 0:
            return old
        self[key] = value
        return value

    def get_many(self, keys: Iterable[int], default: int = -1) -> Iterator[int]:
        """:meth:`get` of each of ``keys`` (integers) in turn, without a call per key (while the
        map is not changed)."""
        a, far = self._a, self._far
        n = len(a)
        for key in keys:
            v = a[key] if 0 <= key < n else far.get(key, -1)
            yield default if v < 0 else v

    def get(self, key: int, default: int = -1) -> int:
        """The value of ``key``, or ``default`` when it was never set (or is negative)."""
        if 0 <= key < len(self._a):
            v = self._a[key]
            return default if v < 0 else v
        v = self._far.get(key, -1)
        return default if v < 0 else v
