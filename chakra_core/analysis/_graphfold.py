"""Repeated blocks of a sequence folded: the layers of a rank's graph, found in its node order.

A rank's nodes in dependency order, each given a token (its type and its name's family, names
equal up to their numbers), repeat block by block: the nodes of layer 0 are followed by those of
layer 1, micro-batch after micro-batch.  :func:`fold` finds those tandem repeats greedily from the
left (at each place the repeat covering the most units, its period at most ``max_period``), folds
the first instance's own repeats inside it, and runs again over what it folded, so that blocks
of blocks (micro-batches of layers) fold too.  Periods are compared by rolling hashes, then
checked element by element.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Fold", "fold"]

_BASE = 1_000_003
_MOD = (1 << 61) - 1


@dataclass
class Fold:
    """A unit of a folded sequence: one element (``start``, ``count`` 1, no ``body``), or
    ``count`` repeats of ``body`` (the first instance, itself folded) covering elements
    ``start`` to ``end`` (exclusive)."""

    start: int
    end: int
    count: int = 1
    body: list[Fold] = field(default_factory=list)

    @property
    def size(self) -> int:
        """Elements covered, every repeat counted."""
        return self.end - self.start


def fold(tokens: Sequence[int], max_period: int = 512, candidates: int = 64) -> list[Fold]:
    """``tokens`` as folded units (see the module docstring): periods up to ``max_period``
    units, the first ``candidates`` later occurrences of a unit's token tried as period ends."""
    units = [Fold(i, i + 1) for i in range(len(tokens))]
    keys: list[object] = list(tokens)
    while True:
        folded = _fold_units(units, _intern(keys), max_period, candidates)
        if len(folded) == len(units):
            return folded
        units = folded
        keys = [_key(u, tokens) for u in units]


def _key(unit: Fold, tokens: Sequence[int]) -> object:
    if unit.count == 1 and not unit.body:
        return tokens[unit.start]
    return (unit.count, tuple(_key(b, tokens) for b in unit.body))


def _intern(keys: list[object]) -> list[int]:
    ids: dict[object, int] = {}
    return [ids.setdefault(k, len(ids)) for k in keys]


def _fold_units(units: list[Fold], t: list[int], max_period: int, candidates: int) -> list[Fold]:
    n = len(t)
    pre = [0] * (n + 1)
    for i, x in enumerate(t):
        pre[i + 1] = (pre[i] * _BASE + x + 1) % _MOD
    powers = [1] * (n + 1)
    for i in range(n):
        powers[i + 1] = powers[i] * _BASE % _MOD

    def h(i: int, p: int) -> int:
        return (pre[i + p] - pre[i] * powers[p]) % _MOD

    nxt = [-1] * n
    last: dict[int, int] = {}
    for i in range(n - 1, -1, -1):
        nxt[i] = last.get(t[i], -1)
        last[t[i]] = i
    return _scan(units, t, 0, n, nxt, h, max_period, candidates)


def _scan(units: list[Fold], t: list[int], lo: int, hi: int, nxt: list[int], h, max_period: int,
          candidates: int) -> list[Fold]:
    out: list[Fold] = []
    i = lo
    while i < hi:
        p, k = _best_repeat(t, i, hi, nxt, h, max_period, candidates)
        if k < 2:
            out.append(units[i])
            i += 1
            continue
        body = _scan(units, t, i, i + p, nxt, h, max_period, candidates)
        out.append(Fold(units[i].start, units[i + p * k - 1].end, k, body))
        i += p * k
    return out


def _best_repeat(t: list[int], i: int, hi: int, nxt: list[int], h, max_period: int,
                 candidates: int) -> tuple[int, int]:
    """The period and repeat count covering the most units from ``i`` (count 1: none)."""
    best_p, best_k = 1, 1
    j, tried = nxt[i], 0
    while j != -1 and j - i <= max_period and tried < candidates and i + 2 * (j - i) <= hi:
        p = j - i
        tried += 1
        first = h(i, p)
        if h(j, p) == first and t[i:j] == t[j:j + p]:
            k = 2
            while i + (k + 1) * p <= hi and h(i + k * p, p) == first and t[i:j] == t[i + k * p:i + (k + 1) * p]:
                k += 1
            if p * k > best_p * best_k:
                best_p, best_k = p, k
        j = nxt[j]
    return best_p, best_k
