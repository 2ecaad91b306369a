"""Which ranks play the same part in a run, and what shape each collective group has, read from
the spans alone.

A rank's role is the multiset of its operations (name and kind, counted): ranks of one pipeline
stage or one expert share it, ranks of different stages do not, whatever their speed.  A group's
members are the ranks whose collectives name it; its shape says how they lie (consecutive, or a
stride) and how many groups of the run have the same shape.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from chakra_core.analysis._spans import SPAN_KINDS, Spans

__all__ = ["rank_roles", "group_shapes", "shape_label"]


def rank_roles(spans: Spans) -> dict[int, int]:
    """``{rank: role}`` for every rank of the run; roles are numbered 0, 1, ... in order of their
    lowest rank."""
    ops = spans.ops()
    key = spans.name[ops].astype(np.int64) * len(SPAN_KINDS) + spans.kind[ops]
    rank = spans.rank[ops]
    order = np.lexsort((key, rank))
    key, rank = key[order], rank[order]
    digests: dict[int, bytes] = {}
    bounds = np.flatnonzero(np.diff(rank)) + 1
    for part_key, part_rank in zip(np.split(key, bounds), np.split(rank, bounds)):
        if len(part_rank):
            uniq, counts = np.unique(part_key, return_counts=True)
            digests[int(part_rank[0])] = hashlib.blake2b(uniq.tobytes() + counts.tobytes(), digest_size=16).digest()
    roles: dict[bytes, int] = {}
    out: dict[int, int] = {}
    for rep in sorted(digests):
        for member in sorted(spans.stands_for(rep)):
            out[member] = roles.setdefault(digests[rep], len(roles))
    return dict(sorted(out.items()))


def _members(spans: Spans) -> dict[int, list[int]]:
    """``{group string index: sorted member ranks}`` from the collectives that name each group
    (right when no rank stands for others)."""
    sel = (spans.kind == SPAN_KINDS.index("collective")) & (spans.group >= 0)
    pairs = np.unique(np.stack([spans.group[sel], spans.rank[sel]]), axis=1) if sel.any() else np.zeros((2, 0))
    out: dict[int, set[int]] = {}
    for g, r in zip(pairs[0].tolist(), pairs[1].tolist()):
        out.setdefault(int(g), set()).update(spans.stands_for(int(r)))
    return {g: sorted(m) for g, m in out.items()}


def shape_label(members: list[int]) -> str:
    """``8 ranks 0-7, consecutive``, ``2 ranks 0, 8 (stride 8)``, ``3 ranks 0, 2, 7``."""
    n = len(members)
    if n <= 1:
        return f"{n} rank {members[0]}" if members else "no ranks"
    steps = {b - a for a, b in zip(members, members[1:])}
    if steps == {1}:
        return f"{n} ranks {members[0]}-{members[-1]}, consecutive"
    shown = ", ".join(map(str, members[:4])) + (", ..." if n > 4 else "")
    return f"{n} ranks {shown}" + (f" (stride {steps.pop()})" if len(steps) == 1 else "")


def group_shapes(spans: Spans, groups: Mapping[str, Sequence[int]] | None = None) -> dict[str, dict[str, Any]]:
    """``{group name: {"ranks", "label", "like"}}`` for the groups the spans' collectives name:
    members (from ``groups``, the trace set's process groups, when given; else from the spans,
    which a symmetric simulation cannot tell: then only groups of every rank get a shape), a
    label of the shape, and how many groups of the set share that size and stride (the others
    of one parallel dimension)."""
    named = {spans.string(g) for g in np.unique(spans.group[spans.group >= 0]).tolist()}
    if groups is not None:
        every = list(range(spans.nranks))
        members = {name: sorted(groups.get(name) or every) for name in named}
    else:
        compressed = any(len(spans.stands_for(r)) > 1 for r in spans.ranks())
        members = {spans.string(g): m for g, m in _members(spans).items()
                   if not compressed or len(m) == spans.nranks}

    def signature(m: list[int]) -> tuple[int, frozenset[int]]:
        return len(m), frozenset(b - a for a, b in zip(m, m[1:]))

    counts: dict[tuple[int, frozenset[int]], int] = {}
    for m in (sorted(g) for g in groups.values()) if groups else members.values():
        counts[signature(m)] = counts.get(signature(m), 0) + 1
    return {name: {"ranks": m, "label": shape_label(m), "like": counts.get(signature(m), 1)}
            for name, m in members.items()}
