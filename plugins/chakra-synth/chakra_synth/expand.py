"""Expanding a fitted grammar with new repetition counts, as a stream of slot arrays."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["Expansion", "scaled_counts", "fit_factor"]

#: motif expansions up to this many nodes are built once as arrays and reused
CHUNK = 65536


class Expansion:
    """The motifs of one rank class with ``counts`` (per motif) in place of the fitted ones."""

    def __init__(self, motifs: Sequence[dict[str, Any]], counts: Sequence[int]):
        self.motifs = motifs
        self.counts = list(counts)
        self._one: dict[int, np.ndarray] = {}
        self._len: dict[int, int] = {}

    def length(self, m: int) -> int:
        """Nodes in the expansion of motif ``m`` (all its repetitions)."""
        if m not in self._len:
            one = sum(1 if kind == "n" else self.length(v) for kind, v in self.motifs[m]["body"])
            self._len[m] = one * self.counts[m]
        return self._len[m]

    def _once(self, m: int) -> np.ndarray:
        """The slots of one repetition of motif ``m`` (short motifs only)."""
        if m not in self._one:
            parts = [np.array([v], dtype=np.int64) if kind == "n" else np.tile(self._once(v), self.counts[v])
                     for kind, v in self.motifs[m]["body"]]
            self._one[m] = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return self._one[m]

    def body(self, m: int) -> Iterator[np.ndarray]:
        """The slots of one repetition of motif ``m``, in arrays of at most :data:`CHUNK`."""
        leaves: list[int] = []
        for kind, v in self.motifs[m]["body"]:
            if kind == "n":
                leaves.append(v)
                continue
            if leaves:
                yield np.array(leaves, dtype=np.int64)
                leaves = []
            if self.length(v) <= CHUNK:
                yield np.tile(self._once(v), self.counts[v])
            elif self.length(v) // self.counts[v] <= CHUNK:
                once = self._once(v)
                per = max(1, CHUNK // len(once)) if len(once) else 1
                left = self.counts[v]
                while left > 0:
                    k = min(per, left)
                    yield np.tile(once, k)
                    left -= k
            else:
                for _ in range(self.counts[v]):
                    yield from self.body(v)
        if leaves:
            yield np.array(leaves, dtype=np.int64)

    def instances(self, step: int, nslots: int) -> tuple[np.ndarray, np.ndarray]:
        """How many times each motif's body is expanded in the whole expansion of ``step``, and
        the motif each slot belongs to (a slot occurs once per expansion of its body)."""
        inst = np.zeros(len(self.motifs), dtype=np.int64)
        inst[step] = self.counts[step]
        owner = np.zeros(nslots, dtype=np.int64)
        for m in range(len(self.motifs) - 1, -1, -1):  # a body names earlier motifs only
            for kind, v in self.motifs[m]["body"]:
                if kind == "n":
                    owner[v] = m
                else:
                    inst[v] += inst[m] * self.counts[v]
        return inst, owner


def scaled_counts(motifs: Sequence[dict[str, Any]], scalable: Sequence[bool], factor: float,
                  fixed: Mapping[int, int] | None = None) -> list[int]:
    """Each scalable motif's count times ``factor`` (rounded, at least 1), the others as fitted,
    and the motifs of ``fixed`` (``{motif: count}``) with their given count."""
    counts = [max(1, round(m["count"] * factor)) if ok else int(m["count"]) for m, ok in zip(motifs, scalable)]
    for m, c in (fixed or {}).items():
        counts[m] = c
    return counts


def fit_factor(motifs: Sequence[dict[str, Any]], scalable: Sequence[bool], step: int, target: int,
               fixed: Mapping[int, int] | None = None) -> float:
    """The factor whose :func:`scaled_counts` give ``step`` the length closest to ``target``."""
    def length(f: float) -> int:
        return Expansion(motifs, scaled_counts(motifs, scalable, f, fixed)).length(step)
    lo, hi = 1e-9, 1.0
    while length(hi) < target and hi < 1e12:
        hi *= 2.0
    for _ in range(80):
        mid = (lo * hi) ** 0.5
        if length(mid) < target:
            lo = mid
        else:
            hi = mid
    return lo if abs(length(lo) - target) < abs(length(hi) - target) else hi
