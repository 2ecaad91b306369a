"""The growing table of validation's frontiers: slots kept and new ones 0, by mremap (Linux) and
by numpy's realloc."""

from __future__ import annotations

import numpy as np
import pytest

from chakra_core.validation import _inplace


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
