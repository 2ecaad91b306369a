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

__all__ = ["rank_roles", "group_shapes", "shape_label", "EVERY_RANK"]

#: the names spans give the group of every rank (a backend's name for the unnamed group, and the
#: trace's "0")
EVERY_RANK = ("all", "0")


def rank_roles(spans: Spans) -> dict[int, int]:
    """``{rank: role}`` for every rank of the run; roles are numbered 0, 1, ... in order of their
    lowest rank.  The ranks that ran nothing share a role of their own."""
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
    of = {member: digest for rep, digest in digests.items() for member in spans.stands_for(rep)}
    roles: dict[bytes | None, int] = {}
    return {r: roles.setdefault(of.get(r), len(roles)) for r in sorted(set(of).union(range(spans.nranks)))}


def _members(spans: Spans) -> dict[int, list[int]]:
    """``{group string index: sorted member ranks}`` from the collectives that name each group,
    for the groups whose members the spans tell: the group of every rank, and those no rank
    that stands for others names (such a rank's classmates talk to other groups, or to this one:
    spans do not say which)."""
    sel = (spans.kind == SPAN_KINDS.index("collective")) & (spans.group >= 0)
    pairs = np.unique(np.stack([spans.group[sel], spans.rank[sel]]), axis=1) if sel.any() else np.zeros((2, 0))
    out: dict[int, set[int]] = {}
    unknown: set[int] = set()
    for g, r in zip(pairs[0].tolist(), pairs[1].tolist()):
        out.setdefault(int(g), set()).add(int(r))
        if len(spans.stands_for(int(r))) > 1 and spans.strings[int(g)] not in EVERY_RANK:
            unknown.add(int(g))
    every = list(range(spans.nranks))
    return {g: every if spans.strings[g] in EVERY_RANK else sorted(m) for g, m in out.items() if g not in unknown}


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
    which do not tell a symmetric simulation's groups: then only the group of every rank gets a
    shape), a label of the shape, and how many groups of the set share that size and stride
    (the others of one parallel dimension)."""
    if groups is not None:
        every = list(range(spans.nranks))
        named = {spans.string(g) for g in np.unique(spans.group[spans.group >= 0]).tolist()}
        members = {name: sorted(groups.get(name) or every) for name in named}
    else:
        members = {spans.string(g): m for g, m in _members(spans).items()}

    def signature(m: list[int]) -> tuple[int, frozenset[int]]:
        return len(m), frozenset(b - a for a, b in zip(m, m[1:]))

    counts: dict[tuple[int, frozenset[int]], int] = {}
    for m in (sorted(g) for g in groups.values()) if groups else members.values():
        counts[signature(m)] = counts.get(signature(m), 0) + 1
    return {name: {"ranks": m, "label": shape_label(m), "like": counts.get(signature(m), 1)}
            for name, m in members.items()}
