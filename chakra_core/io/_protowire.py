"""Protobuf wire encoding of many messages at once, in numpy (one row per message).

A :class:`Rows` holds the fields of its rows as *slots*: each slot is one field part (a tag, a
varint, a table entry, a run of fixed64 values) for every row at once, with each row's length
(0 where a row leaves it out).  :meth:`Rows.lengths` gives every row's message length, so that
rows of several :class:`Rows` (messages of different shapes) can share one output buffer in any
interleaving; :meth:`Rows.write` then stores each slot's bytes at the rows' positions, one byte
position of a slot for all rows per array operation.  A byte past a row's value that would
still fall inside the same row is written anyway (the slots after it overwrite it), so most
slots need no mask.  Nested messages are slots too: a length prefix is a varint slot filled,
once the slots after it are known, with the sum of their lengths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from chakra_core.io._varint import encode_varint

__all__ = ["Rows", "tag", "varint_lens", "SCRATCH"]

_SHIFTS = [np.uint64(7 * j) for j in range(10)]
_LOW7 = np.uint64(0x7F)
#: a slot wider than this is written with one 2-D scatter instead of one operation per byte
_WIDE_SLOT = 16


def tag(number: int, wire: int) -> bytes:
    """The key of field ``number`` with wire type ``wire`` (0 varint, 1 fixed64, 2 length-delimited)."""
    return encode_varint(number << 3 | wire)


def varint_lens(values: np.ndarray) -> np.ndarray:
    """The length in bytes of each value's varint (values taken as uint64)."""
    lens = np.ones(len(values), np.int64)
    if not len(values):
        return lens
    top = int(values.max())
    threshold = 1 << 7
    while threshold <= top:
        lens += values >= np.uint64(threshold)
        threshold <<= 7
    return lens


@dataclass
class _Slot:
    kind: str
    width: int
    lens: np.ndarray | None
    data: object = None
    fixed: bool = False


class Rows:
    """The messages of ``n`` rows, built field by field (every method appends a slot and
    returns the rows' lengths of it)."""

    def __init__(self, n: int):
        self.n = n
        self.slots: list[_Slot] = []

    def const(self, data: bytes, present: np.ndarray | None = None) -> np.ndarray:
        """The same bytes in every row (in the rows where ``present``)."""
        lens = np.full(self.n, len(data), np.int64) if present is None else np.where(present, len(data), 0)
        self.slots.append(_Slot("const", len(data), lens, data, fixed=present is None))
        return lens

    def varint(self, values: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
        """Each row's value as an unsigned varint (int64 taken as uint64), left out where not ``present``."""
        v = np.ascontiguousarray(values).astype(np.uint64, copy=False)
        if present is not None:
            v = np.where(present, v, np.uint64(0))
        lens = varint_lens(v)
        if present is not None:
            lens = np.where(present, lens, 0)
        self.slots.append(_Slot("varint", int(lens.max()) if self.n else 0, lens, v))
        return lens

    def lookup(self, table: list[bytes], index: np.ndarray) -> np.ndarray:
        """Row ``i`` holds ``table[index[i]]``."""
        width = max((len(t) for t in table), default=0)
        grid = np.zeros((max(width, 1), len(table)), np.uint8)
        for k, t in enumerate(table):
            grid[:len(t), k] = np.frombuffer(t, np.uint8)
        lens = np.array([len(t) for t in table], np.int64)[index]
        self.slots.append(_Slot("grid", width, lens, grid[:width, index]))
        return lens

    def fixed64s(self, key: bytes, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """A repeated fixed64 field (``key`` its tag): row ``i`` holds ``ids[i, :counts[i]]``
        (``ids`` is ``n x k``)."""
        k = ids.shape[1]
        entry = np.empty((k, len(key) + 8, self.n), np.uint8)
        entry[:, :len(key)] = np.frombuffer(key, np.uint8)[None, :, None]
        entry[:, len(key):] = np.ascontiguousarray(ids, "<u8").view(np.uint8).reshape(self.n, k, 8).transpose(1, 2, 0)
        lens = counts.astype(np.int64) * (len(key) + 8)
        self.slots.append(_Slot("grid", k * (len(key) + 8), lens, entry.reshape(-1, self.n)))
        return lens

    def prefix(self) -> int:
        """Reserve a varint slot (a length prefix) to be filled by :meth:`fill`; returns its handle."""
        self.slots.append(_Slot("varint", 0, None))
        return len(self.slots) - 1

    def fill(self, handle: int) -> np.ndarray:
        """Fill the prefix ``handle`` with the summed lengths of the slots after it."""
        total = np.zeros(self.n, np.int64)
        for s in self.slots[handle + 1:]:
            assert s.lens is not None, "an inner prefix is filled before the outer one"
            total += s.lens
        v = total.astype(np.uint64)
        lens = varint_lens(v)
        self.slots[handle] = _Slot("varint", int(lens.max()) if self.n else 0, lens, v)
        return lens

    def lengths(self) -> np.ndarray:
        """Each row's message length."""
        total = np.zeros(self.n, np.int64)
        for s in self.slots:
            total += s.lens  # type: ignore[arg-type]
        return total

    def write(self, out: np.ndarray, starts: np.ndarray, lengths: np.ndarray | None = None) -> None:
        """Store row ``i``'s message at ``out[starts[i]:]``; ``out`` ends in :data:`SCRATCH`
        bytes past every row, where masked writes go (``lengths``: :meth:`lengths`, if known)."""
        if not self.n:
            return
        pos = starts.astype(np.int64, copy=True)
        rest = (self.lengths() if lengths is None else lengths).copy()
        scratch = len(out) - SCRATCH
        for s in self.slots:
            lens = s.lens
            assert lens is not None
            rest -= lens
            if s.width:
                _write_slot(out, s, pos, lens, rest, scratch)
            pos += lens


#: bytes at the end of an output buffer that absorb the writes a row leaves out
SCRATCH = _WIDE_SLOT


def _write_slot(out: np.ndarray, s: _Slot, pos: np.ndarray, lens: np.ndarray, rest: np.ndarray,
                scratch: int) -> None:
    """The bytes of slot ``s`` at ``pos``: unmasked where what spills past a row's value stays in
    the row (``rest`` bytes follow it), else sent to ``out[scratch:]`` past the row's own bytes."""
    w = s.width
    if s.kind == "grid" and w > _WIDE_SLOT:
        keep = np.arange(w)[:, None] < lens[None, :]
        out[(pos[None, :] + np.arange(w)[:, None])[keep]] = s.data[keep]  # type: ignore[index]
        return
    if s.fixed:
        shortest, safe = w, True
    else:
        shortest = int(lens.min())
        safe = shortest == w or bool((w - lens <= rest).all())
    for j in range(w):
        col = _column(s, j, lens)
        at = pos if safe or j < shortest else np.where(lens > j, pos, scratch)
        out[j:][at] = col


def _column(s: _Slot, j: int, lens: np.ndarray) -> np.ndarray | np.uint8:
    """Byte ``j`` of slot ``s`` in every row (a scalar for a constant)."""
    if s.kind == "const":
        return np.uint8(s.data[j])  # type: ignore[index]
    if s.kind == "grid":
        return s.data[j]  # type: ignore[index]
    v: np.ndarray = s.data  # type: ignore[assignment]
    if s.width == 1:
        return v.astype(np.uint8)
    col = ((v >> _SHIFTS[j]) & _LOW7 if j else v & _LOW7).astype(np.uint8)
    col |= (lens > j + 1).view(np.uint8) << np.uint8(7)
    return col
