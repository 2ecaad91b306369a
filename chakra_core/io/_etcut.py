"""The reader's compiled cut: the node frames of a chunk of an ``.et`` file, rewritten in one
pass into the wire form of a repeated message field number 1 (each frame behind the key
``0x0A``), which protobuf's C decoder parses as a batch of nodes.

A kernel (:mod:`chakra_core.base._kernels`): :class:`._etio.EtReader` runs its compiled form,
kept in numba's on-disk cache, for a file large enough to pay for loading numba (see there).
The checks and messages stay the reader's: the loop stops at any frame it does not copy plainly
(an empty message, one longer than the ``deps`` limit, a length prefix cut short, bad or running
past the chunk) and leaves it to the caller.
"""

from __future__ import annotations

import numpy as np

from chakra_core.base._copyrun import copy_run
from chakra_core.base._kernels import kernel

__all__ = ["frame_chunk"]


@kernel(cache=True, nogil=True)
def frame_chunk(buf, pos, end, longest):  # pragma: no cover - compiled
    """The whole frames of ``buf[pos:end]`` in the repeated-field form, up to the first frame
    that is empty, longer than ``longest`` bytes, or not whole within ``end``: ``(out, out_at,
    in_at, stop)``: the rewritten bytes (uint8), where each frame starts in them and in ``buf``
    (int64, one per frame), and the position in ``buf`` where the loop stopped."""
    out = np.empty(2 * (end - pos) + 1, np.uint8)  # a copied frame has 2 bytes or more: 1 key byte each
    cap = (end - pos) // 2 + 1
    out_at = np.empty(cap, np.int64)
    in_at = np.empty(cap, np.int64)
    k = 0
    o = 0
    while pos < end:
        value = np.uint64(0)
        p = pos
        ok = False
        for j in range(10):
            if p >= end:
                break
            b = buf[p]
            value |= np.uint64(b & 0x7F) << np.uint64(7 * j)
            p += 1
            if b < 0x80:
                ok = True
                break
        if not ok or value == 0 or value > np.uint64(longest) or value > np.uint64(end - p):
            break
        n = p + np.int64(value) - pos
        out_at[k] = o
        in_at[k] = pos
        out[o] = 0x0A
        copy_run(out, o + 1, buf, pos, n)
        o += 1 + n
        k += 1
        pos += n
    return out[:o], out_at[:k], in_at[:k], pos
