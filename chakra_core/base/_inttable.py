"""An int64 -> int64 table for kernels (:mod:`chakra_core.base._kernels`) in one array.

Row 0 of a ``(2, capacity)`` int64 array holds the keys and row 1 the values (a value below 0:
an empty slot, so the values kept are 0 or more); capacity is a power of two, and a table is
doubled and refilled before it would be more than half full (open addressing, linear probing).
Kernels take and return the array, so both forms of a kernel run it: the compiled one without
numba's typed ``Dict``, whose construction from Python compiles code in every process that is
not kept in numba's cache (about 0.13 s of CPU for the validation's frontiers, measured), and the
Python one with the same slots (the probe start is computed from the low 62 bits of a product,
the same in 64-bit and in unbounded integers).

numba's on-disk cache of a kernel that calls these is not refreshed when only this file
changes: after editing it, clear the cache (``__pycache__/*.nbi``, ``*.nbc``) of the callers.
"""

from __future__ import annotations

import numpy as np

from chakra_core.base._kernels import kernel

__all__ = ["new_table", "table_get", "table_put"]

#: an odd multiplier below 2**63 (numba types a larger constant as uint64)
_MIX = 0x9E3779B1
#: the bits of a product both forms agree on and keep non-negative
_LOW62 = (1 << 62) - 1


def new_table(capacity: int = 1024) -> np.ndarray:
    """An empty table of ``capacity`` slots (a power of two)."""
    assert capacity > 0 and capacity & (capacity - 1) == 0, capacity
    table = np.zeros((2, capacity), np.int64)
    table[1] = -1
    return table


@kernel(cache=True, nogil=True, inline="always")
def _slot(table, key):  # pragma: no cover - compiled
    """The slot holding ``key``, or the empty one where it goes."""
    mask = table.shape[1] - 1
    k = int(key)
    x = ((k ^ (k >> 32)) * _MIX) & _LOW62
    h = (x ^ (x >> 31)) & mask
    while table[1, h] >= 0 and table[0, h] != key:
        h = (h + 1) & mask
    return h


@kernel(cache=True, nogil=True)
def table_get(table, key):  # pragma: no cover - compiled
    """The value of ``key``, or -1."""
    return table[1, _slot(table, key)]


@kernel(cache=True, nogil=True)
def table_put(table, used, key, value):  # pragma: no cover - compiled
    """``table`` with ``key`` -> ``value`` (``value`` >= 0; ``used``: the keys held before),
    doubled first when it would be more than half full; the table (the same array, or a new
    one)."""
    if 2 * (used + 1) > table.shape[1]:
        grown = np.zeros((2, 2 * table.shape[1]), np.int64)
        grown[1, :] = -1
        for h in range(table.shape[1]):
            if table[1, h] >= 0:
                g = _slot(grown, table[0, h])
                grown[0, g], grown[1, g] = table[0, h], table[1, h]
        table = grown
    h = _slot(table, key)
    table[0, h], table[1, h] = key, value
    return table
