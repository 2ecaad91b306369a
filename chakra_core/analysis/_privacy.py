"""How far trace set B is from trace set A, node by node: the privacy part of ``chakra compare``.

Each rank's nodes in file order become tokens ``(kind, size bucket, duration bucket)`` (kind as
:func:`~chakra_core.analysis._compare.node_kind`; a bucket is ``floor(2 * log2(x + 1))``, half
an octave; a node without a size has bucket -1).  Rank ``r`` of B is aligned with rank ``r`` of
A over the first :data:`WINDOW` nodes of each, for at most :data:`RANKS` ranks:

- ``distance``: ``1 - ratio`` of :class:`difflib.SequenceMatcher` on the tokens (0: the same
  sequence, 1: nothing in common), ``structure_distance`` the same without the duration bucket;
- ``aligned``: the share of nodes the structure alignment pairs (matched blocks over the longer
  sequence); ``exact_durations`` / ``exact_sizes``: of the aligned pairs (with a size), the share
  whose duration (size) is the same number (None where there is no such pair: nothing sized);
- ``longest_duration_run``: the longest run of consecutive nodes whose exact durations appear
  consecutively in A too; ``longest_verbatim_run``: the same for (kind, size, duration).

Each figure is the mean over the ranks compared (the runs: the largest).  Two recordings of one
job are the yardstick: a sample at least as far from its source as a second recording is from
the first leaks no more of its node sequence than re-running the job does (docs/synth.md).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["WINDOW", "RANKS", "privacy", "format_privacy"]

#: nodes per rank aligned
WINDOW = 2000
#: ranks aligned
RANKS = 8

#: a rank's nodes: ``(kind, size or -1, duration us)`` each
Tokens = Sequence[tuple[str, int, int]]


def _bucket(x: int) -> int:
    return -1 if x < 0 else int(2 * math.log2(x + 1))


def _codes(items: Sequence[Any], table: dict[Any, int]) -> np.ndarray:
    return np.fromiter((table.setdefault(x, len(table)) for x in items), dtype=np.int64, count=len(items))


def longest_run(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The longest run of consecutive items of ``b`` that appears consecutively in ``a``."""
    if not len(a) or not len(b):
        return 0
    table: dict[Any, int] = {}
    ca, cb = _codes(a, table), _codes(b, table)
    prev = np.zeros(len(cb) + 1, dtype=np.int64)
    best = 0
    for x in ca.tolist():
        row = np.zeros(len(cb) + 1, dtype=np.int64)
        eq = cb == x
        row[1:][eq] = prev[:-1][eq] + 1
        best = max(best, int(row.max()))
        prev = row
    return best


def _rank(a: Tokens, b: Tokens) -> dict[str, Any]:
    full_a = [(k, _bucket(s), _bucket(d)) for k, s, d in a]
    full_b = [(k, _bucket(s), _bucket(d)) for k, s, d in b]
    shape_a, shape_b = [t[:2] for t in full_a], [t[:2] for t in full_b]
    sm = difflib.SequenceMatcher(None, shape_a, shape_b, autojunk=False)
    pairs = [(block.a + i, block.b + i) for block in sm.get_matching_blocks() for i in range(block.size)]
    sized = [(i, j) for i, j in pairs if a[i][1] >= 0]
    return {
        "distance": 1.0 - difflib.SequenceMatcher(None, full_a, full_b, autojunk=False).ratio(),
        "structure_distance": 1.0 - sm.ratio(),
        "aligned": len(pairs) / max(len(a), len(b), 1),
        "exact_durations": sum(a[i][2] == b[j][2] for i, j in pairs) / len(pairs) if pairs else None,
        "exact_sizes": sum(a[i][1] == b[j][1] for i, j in sized) / len(sized) if sized else None,
        "longest_duration_run": longest_run([t[2] for t in a], [t[2] for t in b]),
        "longest_verbatim_run": longest_run(list(a), list(b)),
    }


def privacy(a: Sequence[Tokens], b: Sequence[Tokens]) -> dict[str, Any]:
    """The privacy figures of B against A (module docstring) from each set's per-rank tokens
    (the first :data:`WINDOW` of each rank)."""
    ranks = min(len(a), len(b), RANKS)
    rows = [_rank(a[r][:WINDOW], b[r][:WINDOW]) for r in range(ranks)]
    out: dict[str, Any] = {"window": WINDOW, "ranks_compared": ranks}
    for key in ("distance", "structure_distance", "aligned", "exact_durations", "exact_sizes"):
        known = [r[key] for r in rows if r[key] is not None]  # a share of no pair is not known
        out[key] = round(float(np.mean(known)), 6) if known else None
    for key in ("longest_duration_run", "longest_verbatim_run"):
        out[key] = int(max((r[key] for r in rows), default=0))
    return out


def format_privacy(p: dict[str, Any]) -> list[str]:
    """The privacy figures as report lines."""
    if not p["ranks_compared"]:
        return []
    return [f"privacy (first {p['window']} nodes of {p['ranks_compared']} rank(s), B aligned on A): "
            f"distance {p['distance']:.4f}, structure distance {p['structure_distance']:.4f}, "
            f"aligned {p['aligned']:.2%}",
            f"  exact at aligned positions: durations {_share(p['exact_durations'])}, "
            f"sizes {_share(p['exact_sizes'])}; "
            f"longest run copied: durations {p['longest_duration_run']}, nodes {p['longest_verbatim_run']}"]


def _share(value: float | None) -> str:
    """A share as a percentage, or ``n/a`` where there was nothing to count (no sized node)."""
    return "n/a" if value is None else f"{value:.2%}"
