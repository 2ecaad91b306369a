"""A zero-filled table of 4-byte integers that grows in place.

On Linux the table is a private anonymous memory map that ``mremap`` enlarges: its pages move
without being copied, so a growing table never holds its old and its new copy at once (a table
of 4 bytes a slot would otherwise take up to 8 at each growth).  Elsewhere numpy's in-place
``resize`` (``realloc``) grows it.  New slots read 0 either way.
"""

from __future__ import annotations

import mmap
import sys

import numpy as np

__all__ = ["GrowingTable"]

_MREMAP = sys.platform.startswith("linux")


class GrowingTable:
    """``array``: the table's slots (int32); :meth:`grow` enlarges it, and makes a new array
    (hold no other view of the old one)."""

    def __init__(self, slots: int) -> None:
        if _MREMAP:
            self._map: mmap.mmap | None = mmap.mmap(-1, 4 * slots, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            self.array = np.frombuffer(self._map, np.int32)
        else:
            self._map = None
            self.array = np.zeros(slots, np.int32)

    def grow(self, slots: int) -> None:
        """At least ``slots`` slots, the ones so far kept."""
        if slots <= len(self.array):
            return
        if self._map is None:
            self.array.resize(slots, refcheck=False)
            return
        self.array = np.zeros(0, np.int32)  # the map cannot move while a view of it is held
        self._map.resize(4 * slots)
        self.array = np.frombuffer(self._map, np.int32)
