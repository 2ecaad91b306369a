"""Protobuf wire encoding of many messages at once, in numpy (one row per message).

A *piece* is ``(flat, lens)``: the bytes of every row concatenated in row order and each row's
length.  Pieces are built from varints, constants and table lookups and concatenated row by row,
so that a million packets cost a few array operations instead of a million Python calls.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Piece", "varint_bytes", "varints", "const", "lookup", "concat", "expand", "field", "select", "tag"]

Piece = tuple[np.ndarray, np.ndarray]


def varint_bytes(value: int) -> bytes:
    """One unsigned varint (negative values as 64-bit two's complement)."""
    value = int(value) & ((1 << 64) - 1)
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(number: int, wire: int) -> bytes:
    """The key of field ``number`` with wire type ``wire`` (0 varint, 1 fixed64, 2 length-delimited)."""
    return varint_bytes(number << 3 | wire)


def varints(values: np.ndarray) -> Piece:
    """Each value as an unsigned varint (int64 values are taken as uint64)."""
    v = np.ascontiguousarray(values).astype(np.uint64, copy=False)
    n = len(v)
    if not n:
        return np.zeros(0, np.uint8), np.zeros(0, np.int64)
    lens = np.ones(n, np.int64)
    top = v >> np.uint64(7)
    width = 1
    while top.any():
        lens += top > 0
        top >>= np.uint64(7)
        width += 1
    grid = np.empty((n, width), np.uint8)
    rest = v.copy()
    for j in range(width):
        grid[:, j] = (rest & np.uint64(0x7F)).astype(np.uint8)
        rest >>= np.uint64(7)
    cols = np.arange(width)
    grid[cols[None, :] < (lens[:, None] - 1)] |= 0x80
    return grid[cols[None, :] < lens[:, None]], lens


def const(data: bytes, n: int) -> Piece:
    """The same bytes in each of ``n`` rows."""
    return np.tile(np.frombuffer(data, np.uint8), n), np.full(n, len(data), np.int64)


def lookup(table: list[bytes], index: np.ndarray) -> Piece:
    """Row ``i`` is ``table[index[i]]``."""
    lens_t = np.array([len(t) for t in table], np.int64)
    flat_t = np.frombuffer(b"".join(table), np.uint8) if table else np.zeros(0, np.uint8)
    start_t = np.concatenate(([0], np.cumsum(lens_t)[:-1])) if len(table) else np.zeros(0, np.int64)
    lens = lens_t[index]
    return _gather(flat_t, start_t[index], lens), lens


def _gather(flat: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The slices ``flat[starts[i]:starts[i]+lens[i]]`` concatenated."""
    total = int(lens.sum())
    if not total:
        return np.zeros(0, np.uint8)
    row_begin = np.cumsum(lens) - lens
    pos = np.arange(total, dtype=np.int64) - np.repeat(row_begin, lens) + np.repeat(starts, lens)
    return flat[pos]


def concat(*pieces: Piece) -> Piece:
    """Row ``i`` is row ``i`` of every piece, one after the other."""
    lens = np.sum([p[1] for p in pieces], axis=0).astype(np.int64)
    out = np.empty(int(lens.sum()), np.uint8)
    offset = np.cumsum(lens) - lens
    for flat, plens in pieces:
        if len(flat):
            width = int(plens[0])
            if width and len(flat) == width * len(plens):  # every row the same length (a constant, a fixed width)
                out[(offset[:, None] + np.arange(width)).reshape(-1)] = flat
            else:
                shift = offset - (np.cumsum(plens) - plens)
                out[np.arange(len(flat), dtype=np.int64) + np.repeat(shift, plens)] = flat
        offset += plens
    return out, lens


def expand(piece: Piece, mask: np.ndarray) -> Piece:
    """A piece made for the rows where ``mask`` is True (in order), with empty other rows."""
    lens = np.zeros(len(mask), np.int64)
    lens[mask] = piece[1]
    return piece[0], lens


def field(number: int, body: Piece) -> Piece:
    """A length-delimited field ``number`` holding each row of ``body``."""
    n = len(body[1])
    return concat(const(tag(number, 2), n), varints(body[1]), body)


def select(piece: Piece, keep: np.ndarray) -> Piece:
    """The piece with the rows where ``keep`` is False emptied."""
    flat, lens = piece
    return flat[np.repeat(keep, lens)], np.where(keep, lens, 0)
