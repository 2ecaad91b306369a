"""The parts of a collective left to fewer network dimensions than its group spans.

A collective over all ranks whose plan runs on some dimensions only (``involved_dim``, or an
implementation list shorter than the network) never moves data between ranks that differ on a
dimension it leaves out: the ranks sharing their coordinates there form a part, and the parts
run apart.  ASTRA-sim has no barrier across them, so a part starts when its own last member
issues the collective and ends on its own (:meth:`collectives.Collectives.arrive`).
"""

from __future__ import annotations

from collections.abc import Sequence

from chakra_core.system import SystemDescription

__all__ = ["PartMap", "Parts", "part_map"]


class PartMap:
    """Which part each rank belongs to (``of[rank]``), and each part's ranks (``ranks[p]``)."""

    __slots__ = ("of", "ranks")

    def __init__(self, of: list[int], ranks: list[list[int]]):
        self.of = of
        self.ranks = ranks


def part_map(sd: SystemDescription, used: frozenset[int]) -> PartMap | None:
    """The parts of a collective over all ranks on the dimensions ``used``; None when it spans
    the network as one part (every dimension of more than one NPU used)."""
    left = [d for d, dim in enumerate(sd.dimensions) if d not in used and dim.npus_count > 1]
    if not left:
        return None
    keys: dict[tuple[int, ...], int] = {}
    of = []
    for r in range(sd.npus):
        c = sd.coords(r)
        of.append(keys.setdefault(tuple(c[d] for d in left), len(keys)))
    ranks: list[list[int]] = [[] for _ in keys]
    for r, p in enumerate(of):
        ranks[p].append(r)
    return PartMap(of, ranks)


class Parts:
    """The issue of one collective's parts: ``arrive(ranks)`` counts the ranks of a member in,
    and returns the parts that member completed."""

    __slots__ = ("map", "left", "done_ranks", "sync_wait")

    def __init__(self, pm: PartMap):
        self.map = pm
        self.left = [len(r) for r in pm.ranks]
        #: ranks whose part ended (for the record of the whole collective)
        self.done_ranks = 0
        #: the longest a member of one part waited for the last member of its part
        self.sync_wait = 0

    def arrive(self, ranks: Sequence[int]) -> list[int]:
        """Count ``ranks`` (a member's) in; the parts they complete."""
        of, left = self.map.of, self.left
        done = []
        for r in ranks:
            p = of[r]
            left[p] -= 1
            if not left[p]:
                done.append(p)
        return done

    def complete(self, ranks: Sequence[int]) -> bool:
        """Whether the parts of every one of ``ranks`` are complete."""
        of, left = self.map.of, self.left
        return all(not left[of[r]] for r in ranks)

    def all_at_once(self, done: Sequence[int]) -> bool:
        """Whether ``done`` is every part (all complete at one member's issue)."""
        return len(done) == len(self.left)
