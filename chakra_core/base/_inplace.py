"""A zero-filled table of integers that grows, widens its entries (2 bytes to 4) and turns them
into narrower offsets (8 bytes to 4), in place.

On Linux the table is a private anonymous memory map that ``mremap`` enlarges: its pages move
without being copied, so a growing table never holds its old and its new copy at once (a table
of 4 bytes a slot would otherwise take up to 8 at each growth).  Elsewhere numpy's in-place
``resize`` (``realloc``) grows it.  New slots read 0 either way.  Widening enlarges the bytes
the same way and moves each entry to its wider place from the last one down, so that no entry is
overwritten before it is read; narrowing goes from the first entry up, for the same reason, and
gives back the bytes past the narrowed entries.
"""

from __future__ import annotations

import gc
import mmap
import sys

import numpy as np

from chakra_core.base._kernels import compiled, kernel

__all__ = ["GrowingTable"]

_MREMAP = sys.platform.startswith("linux")


@kernel(cache=True, nogil=True)
def _spread(narrow, wide):  # pragma: no cover - compiled
    """Each of ``narrow``'s entries into the same place of ``wide``, a wider view of the same
    bytes (from the last entry down: entry ``t`` of ``wide`` covers no narrow entry above ``t``)."""
    for t in range(len(narrow) - 1, -1, -1):
        wide[t] = narrow[t]


@kernel(cache=True, nogil=True)
def _squeeze(wide, narrow, low):  # pragma: no cover - compiled
    """Each of ``wide``'s entries less ``low`` into the same place of ``narrow``, a view of the
    same bytes as narrow or narrower entries (from the first entry up: entry ``t`` of ``narrow``
    covers no wide entry above ``t``)."""
    for t in range(len(narrow)):
        narrow[t] = wide[t] - low


class GrowingTable:
    """``array``: the table's slots (of ``dtype``, int32 unless told); :meth:`grow` enlarges it,
    :meth:`widen` doubles its entries' width and :meth:`offsets` halves it, each making a new
    array (hold no other view of the old one)."""

    def __init__(self, slots: int, dtype: np.dtype | type = np.int32) -> None:
        self.dtype = np.dtype(dtype)
        size = self.dtype.itemsize * slots
        #: the bytes: a memory map (grown by mremap) or a numpy byte array (grown by realloc)
        self._bytes_of: mmap.mmap | np.ndarray = (
            mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) if _MREMAP else np.zeros(size, np.uint8))
        self.array = self._view()

    def grow(self, slots: int) -> None:
        """At least ``slots`` slots, the ones so far kept."""
        if slots > len(self.array):
            self._bytes(slots * self.dtype.itemsize)

    def widen(self, dtype: np.dtype | type) -> None:
        """The same slots with entries of ``dtype`` (twice the width of the current ones), their
        values kept."""
        wide, slots = np.dtype(dtype), len(self.array)
        if wide.itemsize != 2 * self.dtype.itemsize:  # the order of the moves holds for twice the width only
            raise ValueError(f"cannot widen {self.dtype} entries to {wide}")
        self._bytes(slots * wide.itemsize)
        narrow, self.dtype = self.array[:slots], wide
        self.array = self.array.view(wide)
        compiled(_spread)(narrow, self.array)

    def offsets(self, dtype: np.dtype | type, used: int, low: int) -> None:
        """The first ``used`` entries less ``low`` as entries of ``dtype`` (as wide as the
        current ones or half as wide; every difference fits it), the table cut to them."""
        tight = np.dtype(dtype)
        if self.dtype.itemsize not in (tight.itemsize, 2 * tight.itemsize):  # the moves' order holds for these
            raise ValueError(f"cannot turn {self.dtype} entries into {tight} offsets")
        wide, narrow = self.array[:used], self.array.view(tight)[:used]
        compiled(_squeeze)(wide, narrow, self.dtype.type(low))
        del wide, narrow
        self.dtype = tight
        self._bytes(used * tight.itemsize)

    def _bytes(self, size: int) -> None:
        """The table's bytes grown (the new ones 0) or cut to ``size``, ``array`` viewing them."""
        self.array = np.zeros(0, self.dtype)  # the bytes cannot move while a view of them is held
        store = self._bytes_of
        if isinstance(store, np.ndarray):
            store.resize(size, refcheck=False)
        else:
            try:
                store.resize(size)
            except BufferError:
                # a view outliving its last use in a reference cycle (seen once numba had first
                # compiled a kernel given the table, in this process): a collection frees it
                gc.collect()
                store.resize(size)
        self.array = self._view()

    def _view(self) -> np.ndarray:
        """The table's bytes as entries of its dtype."""
        store = self._bytes_of
        return store.view(self.dtype) if isinstance(store, np.ndarray) else np.frombuffer(store, self.dtype)
