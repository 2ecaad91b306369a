"""The Kineto timing of the host ops, by ``Record function id``: columns, not a tuple per op.

A dict of ``rf_id -> (ts, dur, tid, name)`` costs about 250 bytes an op (the dict entry, its
key, a tuple, two floats and a thread id); these columns cost 40 (8 bytes of each column), and
the rows' index, an :class:`.intmap.IntMap` over the record-function counter, 8 bytes for every
id up to the largest (about 48 bytes an op when the ops' ids are dense, as PyTorch's counter
makes them).  Each row is made a tuple only when a reader asks for it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping
from itertools import compress
from operator import add

from .intmap import IntMap

__all__ = ["SpanTable", "Span", "spans_of", "extents_of"]

#: a host op's Kineto span: start and duration (microseconds), thread, name
Span = tuple[float, float, int, str]


class SpanTable(Mapping[int, Span]):
    """Record function id -> (start, duration, thread, name) of a timed host op (microseconds);
    filled with :meth:`put` (a later span of the same id replaces the earlier one, as a dict
    entry would), read as a mapping.  Ids are non-negative: a negative one is never present."""

    __slots__ = ("_rows", "_keys", "_ts", "_dur", "_tids", "_names")

    def __init__(self) -> None:
        self._rows = IntMap()
        self._keys = array("q")
        self._ts = array("d")
        self._dur = array("d")
        self._tids = array("q")
        self._names: list[str] = []

    def put(self, key: int, ts: float, dur: float, tid: int, name: str) -> None:
        """Set the span of ``key`` (a negative key is left out: no op has it)."""
        if key < 0:
            return
        new = len(self._names)
        row = self._rows.setdefault(key, new)
        if row == new:
            self._keys.append(key)
            self._ts.append(ts)
            self._dur.append(dur)
            self._tids.append(tid)
            self._names.append(name)
            return
        self._ts[row], self._dur[row], self._tids[row], self._names[row] = ts, dur, tid, name

    def _row(self, key: object) -> int:
        """The row of ``key``, -1 when it has none (a key that is not an int has none)."""
        return self._rows.get(key) if type(key) is int else -1

    def __getitem__(self, key: int) -> Span:
        span = self.get(key)
        if span is None:
            raise KeyError(key)
        return span

    def get(self, key: int, default: None = None) -> Span | None:  # type: ignore[override]
        """The span of ``key``, None when it has none (one lookup, for the readers in a loop)."""
        row = self._row(key)
        if row < 0:
            return default
        return self._ts[row], self._dur[row], self._tids[row], self._names[row]

    def spans(self, keys: Iterable[int]) -> Iterator[Span | None]:
        """:meth:`get` of each of ``keys`` (integers) in turn, without a call per key."""
        ts, dur, tids, names = self._ts, self._dur, self._tids, self._names
        for row in self._rows.get_many(keys):
            yield None if row < 0 else (ts[row], dur[row], tids[row], names[row])

    def extents(self, keys: Iterable[int]) -> tuple[list[bool], list[float], list[float]]:
        """:func:`extents_of` this table, without a call per key."""
        rows = list(self._rows.get_many(keys))
        found = list(map((0).__le__, rows))
        starts = list(map(self._ts.__getitem__, compress(rows, found)))
        ends = list(map(add, starts, map(self._dur.__getitem__, compress(rows, found))))
        return found, starts, ends

    def __contains__(self, key: object) -> bool:
        return self._row(key) >= 0

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._names)


def spans_of(table: Mapping[int, Span], keys: Iterable[int]) -> Iterator[Span | None]:
    """The span of each of ``keys`` in ``table`` (None where it has none): one pass without a
    call per key when ``table`` is a :class:`SpanTable`."""
    if isinstance(table, SpanTable):
        return table.spans(keys)
    return map(table.get, keys)


def extents_of(table: Mapping[int, Span], keys: Iterable[int]) -> tuple[list[bool], list[float], list[float]]:
    """Which of ``keys`` have a span in ``table``, and the starts and ends (start + duration,
    microseconds) of those that have one, in the order of ``keys``: three columns, made without a
    call per key when ``table`` is a :class:`SpanTable`."""
    if isinstance(table, SpanTable):
        return table.extents(keys)
    found: list[bool] = []
    starts: list[float] = []
    ends: list[float] = []
    for rec in map(table.get, keys):
        found.append(rec is not None)
        if rec is not None:
            starts.append(rec[0])
            ends.append(rec[0] + rec[1])
    return found, starts, ends
