"""Model tables as numpy arrays, for sampling many nodes at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Padded", "padded", "csr", "gather_rows", "stat_rows"]


class Padded:
    """Rows of different lengths in one float array (``table[i, :lengths[i]]``)."""

    def __init__(self, rows: Sequence[Sequence[float] | None]):
        self.lengths = np.array([len(r) if r else 0 for r in rows], dtype=np.int64)
        width = max(1, int(self.lengths.max(initial=0)))
        self.table = np.zeros((len(rows), width), dtype=np.float64)
        for i, r in enumerate(rows):
            if r:
                self.table[i, :len(r)] = r

    def present(self) -> np.ndarray:
        """Which rows have values."""
        return self.lengths > 0


def padded(rows: Sequence[Sequence[float] | None]) -> Padded:
    """:class:`Padded` of ``rows`` (None or empty: a row without values)."""
    return Padded(rows)


def csr(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, values)`` of integer rows."""
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=ptr[1:])
    vals = np.fromiter((v for r in rows for v in r), dtype=np.int64, count=int(ptr[-1]))
    return ptr, vals


def gather_rows(ptr: np.ndarray, vals: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR rows ``rows`` of ``(ptr, vals)``: ``(per-element owner index, values)``."""
    sizes = ptr[rows + 1] - ptr[rows]
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), sizes)
    starts = np.repeat(ptr[rows], sizes)
    within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return owner, vals[starts + within]


def stat_rows(kind_stats: dict[str, dict[str, Any]], nkinds: int, name: str) -> Padded:
    """Per kind id, its fitted table of ``name`` (a kind without one: an empty row)."""
    return Padded([kind_stats.get(str(k), {}).get(name) for k in range(nkinds)])
