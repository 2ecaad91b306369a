"""A table of integers that grows, widens and narrows in place (validation's frontiers, the
longest path of ranks whose ids do not ascend): slots kept and new ones 0, by mremap (Linux) and
by numpy's realloc."""

from __future__ import annotations

import numpy as np
import pytest

from chakra_core.base import _inplace


@pytest.mark.parametrize("mremap", [True, False])
def test_growing_keeps_the_slots_and_zero_fills(mremap, monkeypatch):
    monkeypatch.setattr(_inplace, "_MREMAP", mremap and _inplace._MREMAP)
    t = _inplace.GrowingTable(1000)
    assert len(t.array) == 1000 and not t.array.any()
    t.array[:] = np.arange(1000)
    for slots in (999, 5000, 1 << 20):
        t.grow(slots)
        assert len(t.array) == max(slots, 1000)
        assert t.array[:1000].tolist() == list(range(1000)) and not t.array[1000:].any()
    t.array[-1] = 7
    assert t.array[-1] == 7


@pytest.mark.parametrize("mremap", [True, False])
def test_widening_keeps_every_value_and_the_zeros(mremap, monkeypatch):
    monkeypatch.setattr(_inplace, "_MREMAP", mremap and _inplace._MREMAP)
    t = _inplace.GrowingTable(70_000, np.uint16)
    values = np.arange(70_000, dtype=np.int64) % 65_536
    values[::7] = 0
    t.array[:] = values
    t.widen(np.int32)
    assert t.array.dtype == np.int32 and len(t.array) == 70_000
    assert (t.array == values).all()
    t.grow(100_000)
    assert (t.array[:70_000] == values).all() and not t.array[70_000:].any()
    t.array[-1] = 1 << 30
    assert t.array[-1] == 1 << 30


@pytest.mark.parametrize("mremap", [True, False])
@pytest.mark.parametrize("tight", [np.uint32, np.uint64])
def test_offsets_in_place_narrow_and_cut(mremap, tight, monkeypatch):
    monkeypatch.setattr(_inplace, "_MREMAP", mremap and _inplace._MREMAP)
    t = _inplace.GrowingTable(200_000, np.uint64)
    low = (1 << 40) + 5
    values = np.uint64(low) + (np.arange(150_000, dtype=np.uint64) * np.uint64(7919)) % np.uint64(1 << 32)
    t.array[:150_000] = values
    t.offsets(tight, 150_000, low)
    assert t.array.dtype == tight and len(t.array) == 150_000
    assert (t.array.astype(np.uint64) == values - np.uint64(low)).all()
