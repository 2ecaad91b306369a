"""A rank's communication skeleton as the deadlock search reads it, and what it reports.

Plain records (no numpy): the per-node path builds them for any set, and the search
(:mod:`._deadlock`) is loaded only when a set of more than one rank is checked.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

__all__ = ["K_COLL", "K_SEND", "K_RECV", "K_SLOT", "Skeleton", "Wait"]

K_COLL, K_SEND, K_RECV, K_SLOT = range(4)


@dataclass
class Skeleton:
    """One rank's skeleton: per node its id, kind and ``(a, tag, size)`` (``a`` = peer rank, or
    the group number of a collective), and the skeleton nodes it waits for (CSR)."""

    ids: array
    kinds: bytearray
    peer_or_group: array
    tags: array
    sizes: array
    ptr: array
    preds: array


@dataclass
class Wait:
    """Rank ``rank`` is stuck at skeleton node ``index`` waiting for ``ranks``."""

    rank: int
    index: int
    ranks: list[int]
    seq: int = 0  # for a collective: which one on its group (0-based)
