"""Repeated motifs of a node sequence: a grammar of tandem repeats found from the graph itself.

The nodes of a rank, in topological order, are symbols (kind, group reference, peer).  The
longest run of a block repeated back to back (the most nodes saved) becomes a motif ``(body,
count)`` and is replaced by one symbol; the search repeats on the shorter sequence and on the
new body until no run saves two nodes or more.  Layers become a motif repeated once per layer,
blocks inside them motifs of their own, and the whole sequence the *step* motif (count 1).

Each leaf of a body is a *slot*: every node the slot stands for, in every instance of the
motif, feeds that slot's statistics, so numbers stay correlated within a motif.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Grammar", "discover"]

#: a body element: ("n", slot) for a node, ("m", motif id) for a motif
Element = tuple[str, int]


@dataclass
class Grammar:
    """``motifs[i] = (body, count)``; ``step`` is the motif of the whole sequence; ``slot_symbol``
    the symbol each slot stands for."""

    motifs: list[tuple[list[Element], int]] = field(default_factory=list)
    step: int = -1
    slot_symbol: list[int] = field(default_factory=list)

    def length(self, motif: int, counts: list[int] | None = None) -> int:
        """Nodes in one expansion of ``motif`` (with ``counts`` instead of the fitted ones)."""
        memo: dict[int, int] = {}

        def size(m: int) -> int:
            if m not in memo:
                body, count = self.motifs[m]
                one = sum(1 if kind == "n" else size(v) for kind, v in body)
                memo[m] = one * (counts[m] if counts is not None else count)
            return memo[m]
        return size(motif)

    def slots_of(self, motif: int, counts: list[int] | None = None) -> Iterator[int]:
        """The slot of each node of ``motif``'s expansion, in order (source counts by default)."""
        body, count = self.motifs[motif]
        for _ in range(counts[motif] if counts is not None else count):
            for kind, v in body:
                if kind == "n":
                    yield v
                else:
                    yield from self.slots_of(v, counts)


def _best_run(seq: np.ndarray, max_period: int) -> tuple[int, int, int] | None:
    """``(start, period, count)`` of the run that saves the most nodes (ties: shorter period)."""
    n = len(seq)
    best: tuple[int, int, int, int] | None = None
    for p in range(1, min(max_period, n // 2) + 1):
        eq = seq[:-p] == seq[p:]
        if not eq.any():
            continue
        padded = np.concatenate(([False], eq, [False]))
        edges = np.flatnonzero(padded[1:] != padded[:-1])
        starts, ends = edges[0::2], edges[1::2]
        lengths = ends - starts
        reps = lengths // p + 1
        saving = (reps - 1) * p
        j = int(np.argmax(saving))
        if reps[j] >= 2 and (best is None or saving[j] > best[0]):
            best = (int(saving[j]), int(starts[j]), p, int(reps[j]))
    if best is None or best[0] < 2:
        return None
    return best[1], best[2], best[3]


def _compress(seq: list[int], motifs: list[tuple[tuple[int, ...], int]], known: dict, first_motif: int,
              max_period: int) -> list[int]:
    """Collapse runs in ``seq`` into motif symbols (``first_motif + id``) until none saves 2 nodes."""
    while True:
        run = _best_run(np.asarray(seq, dtype=np.int64), max_period)
        if run is None:
            return seq
        start, period, count = run
        body = tuple(_compress(seq[start:start + period], motifs, known, first_motif, max_period))
        key = (body, count)
        if key not in known:
            known[key] = len(motifs)
            motifs.append(key)
        seq = seq[:start] + [first_motif + known[key]] + seq[start + period * count:]


def discover(symbols: np.ndarray, max_period: int = 256) -> Grammar:
    """The grammar of ``symbols`` (ints >= 0); expanding it gives ``symbols`` back."""
    first = int(symbols.max()) + 1 if len(symbols) else 0
    raw: list[tuple[tuple[int, ...], int]] = []
    top = _compress(symbols.tolist(), raw, {}, first, max_period)
    raw.append((tuple(top), 1))
    g = Grammar(step=len(raw) - 1)
    for body, count in raw:
        elements: list[Element] = []
        for s in body:
            if s >= first:
                elements.append(("m", s - first))
            else:
                elements.append(("n", len(g.slot_symbol)))
                g.slot_symbol.append(s)
        g.motifs.append((elements, count))
    return g
