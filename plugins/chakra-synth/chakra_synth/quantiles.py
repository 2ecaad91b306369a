"""Fitted distributions as quantile tables, and stratified sampling from them.

A kind's distribution of one number (duration, size, ``num_ops``) is a table of at most
:data:`KIND_KNOTS` values at the probabilities ``(i + 0.5) / L`` (every sorted value when there
are no more; the quantiles otherwise), read back by linear interpolation.  A slot keeps where its
nodes fall in their kind's distribution: at most :data:`SLOT_KNOTS` probabilities (``u`` values).
A sample of ``C`` occurrences of a slot takes one point of each of ``C`` equal strata of the
slot's ``u`` distribution, in a seeded order, so that the slot's values keep their spread and
their sum however many occurrences are drawn; the slots of one motif share that order, so the
numbers of one motif instance are drawn at the same quantile of their slots (a large layer is
large in its compute and in its communication alike).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["KIND_KNOTS", "SLOT_KNOTS", "kind_table", "positions", "slot_knots", "ppf", "lerp_rows",
           "affine_permutations", "granularity"]

KIND_KNOTS = 256
SLOT_KNOTS = 256


def kind_table(values: np.ndarray) -> list[int]:
    """The quantile table of ``values`` (integers)."""
    v = np.sort(np.asarray(values, dtype=np.int64))
    if len(v) <= KIND_KNOTS:
        return v.tolist()
    probs = (np.arange(KIND_KNOTS) + 0.5) / KIND_KNOTS
    return np.rint(np.quantile(v, probs)).astype(np.int64).tolist()


def positions(values: np.ndarray, population: np.ndarray) -> np.ndarray:
    """Mid-rank probability of each of ``values`` in ``population`` (its kind's values)."""
    pop = np.sort(population)
    lo = np.searchsorted(pop, values, side="left")
    hi = np.searchsorted(pop, values, side="right")
    return (lo + hi) / (2.0 * len(pop))


def slot_knots(us: np.ndarray) -> list[float]:
    """At most :data:`SLOT_KNOTS` probabilities summarising a slot's ``u`` values."""
    u = np.sort(us)
    if len(u) > SLOT_KNOTS:
        u = np.quantile(u, (np.arange(SLOT_KNOTS) + 0.5) / SLOT_KNOTS)
    return [round(float(x), 6) for x in u]


def lerp_rows(table: np.ndarray, lengths: np.ndarray, rows: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per element, row ``rows[k]`` of ``table`` (padded; ``lengths`` long) read at probability
    ``p[k]`` (points at ``(i + 0.5) / length``, linear between, flat outside)."""
    n = lengths[rows].astype(np.float64)
    x = np.clip(p * n - 0.5, 0.0, np.maximum(n - 1.0, 0.0))
    i = np.floor(x).astype(np.int64)
    j = np.minimum(i + 1, lengths[rows] - 1)
    frac = x - i
    return table[rows, i] * (1.0 - frac) + table[rows, j] * frac


def ppf(table: np.ndarray, lengths: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Values of kind tables (rows of ``table``) at probabilities ``u``."""
    return lerp_rows(table, lengths, rows, u)


def affine_permutations(counts: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per slot, ``(a, b)`` with ``j -> (a*j + b) mod count`` a permutation of ``range(count)``."""
    a = np.ones(len(counts), dtype=np.int64)
    b = np.zeros(len(counts), dtype=np.int64)
    for k, c in enumerate(counts.tolist()):
        if c > 1:
            x = int(rng.integers(1, c))
            while math.gcd(x, c) != 1:
                x = x % (c - 1) + 1
            a[k], b[k] = x, int(rng.integers(0, c))
    return a, b


def granularity(values: np.ndarray) -> int:
    """The greatest common divisor of the positive ``values`` (1 when there are none)."""
    pos = values[values > 0]
    return int(np.gcd.reduce(pos)) if len(pos) else 1
