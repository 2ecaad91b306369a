"""Fitting the hierarchical model of one trace set (the ``learned`` synthesizer).

Rank classes that are one role (equal up to the names of their groups and peers) share one
grammar, found once per role (``roles`` in the model), and are one class of the model, fitted on
all their ranks; each tile position keeps how it renames the class's groups and peers
(``tile_relabel``).

The step of each rank class is a grammar of repeated blocks (:mod:`.motifs`, period detection on
the (kind, group, peer) sequence): iteration -> phases (the step's body) -> repeated blocks ->
operators.  A block's communication nodes stay anchored where they are (they must agree across
ranks), and so do the nodes that wait on anything but the node before them (joins: where a
thread waits for a collective or another thread); the chains of computation between anchors are
*segments*, and a segment keeps no node sequence, only distributions:

- ``length``: its operator count (``chakra synth sample`` draws a count around it);
- ``mix``: how often each *op class* occurs in it (``"KIND.MAGNITUDE"``: a kind and the
  magnitude of its mean duration, so a kind that is sometimes a long wait is two classes),
  ``first``: the class it starts with, ``next`` and ``next2``: first- and second-order
  transition counts between its classes;
- ``times``: per op class in it, a log-normal fit of its durations (mean us, sigma of
  ``log(1 + us)``);
- dependencies as offsets back in the step, per slot (per occurrence where they differ);
- ``total``: the mean of its summed durations (us) over its instances (``total_by_rank`` per
  source rank when the ranks run at different speeds), ``cv`` their coefficient of variation.

A sample draws each segment's durations from its op classes' fits and rescales them to the
segment's total (:mod:`.sample_learned`), so it keeps the step time, not the sequence.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from chakra_core import TraceSet

from .fit_structure import _motifs, _slot, _symbols, node_role
from .kinds import kind_stats, populations
from .layout import RankTiling, find_tiling
from .motifs import Grammar, discover
from .profile import KindTable, RankProfile, read_profiles

__all__ = ["fit_learned_workload", "MAGNITUDE"]

#: the ratio of mean durations between neighbouring op classes of one kind
MAGNITUDE = 4.0


def _only_previous(deps: dict[str, Any]) -> bool:
    """Whether a slot depends on the node just before it and on nothing else, in every occurrence."""
    rows = [*(deps.get("data_seq") or [deps["data"]]), *(deps.get("ctrl_seq") or [deps["ctrl"]])]
    return {o for r in rows for o in r} == {1}


def _segments(g: Grammar, comm: set[int], chained: set[int]) -> tuple[list[list[int]], dict[int, tuple[int, int]]]:
    """Runs of computation leaves in every body, each a chain (a leaf that waits on anything but
    the node before it starts a run): the slots of each segment, and per slot its ``(segment,
    index)``."""
    segs: list[list[int]] = []
    where: dict[int, tuple[int, int]] = {}
    for body, _count in g.motifs:
        run: list[int] = []
        for kind, v in [*body, ("m", -1)]:
            if kind == "n" and v not in comm and (not run or v in chained):
                run.append(v)
                continue
            if run:
                for i, s in enumerate(run):
                    where[s] = (len(segs), i)
                segs.append(run)
                run = []
            if kind == "n" and v not in comm:
                run.append(v)
    return segs, where


def _op_class(kind: int, durations: np.ndarray) -> str:
    """``"KIND.MAGNITUDE"``: the kind and the magnitude of its mean duration, in steps of a
    factor :data:`MAGNITUDE` (so one kind that is sometimes a long wait is two op classes)."""
    mean = float(np.maximum(durations, 0).mean()) if len(durations) else 0.0
    return f"{kind}.{int(np.log1p(mean) / np.log(MAGNITUDE))}"


def _segment(slots: list[int], rows: list[np.ndarray], members: Sequence[RankProfile]) -> dict[str, Any]:
    rep = members[0]
    ops = [_op_class(int(rep.kind[rows[s][0]]), np.concatenate([m.duration[rows[s]] for m in members]))
           for s in slots]
    nxt: dict[str, Counter] = {}
    for a, b in zip(ops, ops[1:]):
        nxt.setdefault(a, Counter())[b] += 1
    nxt2: dict[str, Counter] = {}
    for a, b, c in zip(ops, ops[1:], ops[2:]):
        nxt2.setdefault(f"{a},{b}", Counter())[c] += 1
    times: dict[str, list[np.ndarray]] = {}
    for s, k in zip(slots, ops):
        times.setdefault(k, []).extend(np.maximum(m.duration[rows[s]], 0).astype(np.float64) for m in members)
    totals = [sum(np.maximum(m.duration[rows[s]], 0).astype(np.float64) for s in slots) for m in members]
    per_rank = [float(np.mean(t)) for t in totals]
    pooled = np.concatenate([np.atleast_1d(t) for t in totals])
    mean = float(pooled.mean())
    out: dict[str, Any] = {"length": len(slots), "mix": dict(sorted(Counter(ops).items())),
                           "first": ops[0], "next": {a: dict(sorted(c.items())) for a, c in sorted(nxt.items())},
                           "next2": {ab: dict(sorted(c.items())) for ab, c in sorted(nxt2.items())},
                           "total": round(mean, 3), "cv": round(float(pooled.std() / mean), 4) if mean > 0 else 0.0,
                           "times": {k: _lognormal(np.concatenate(v)) for k, v in sorted(times.items())}}
    if len(members) > 1 and max(per_rank) > 1.01 * max(min(per_rank), 1e-9):
        out["total_by_rank"] = [round(x, 3) for x in per_rank]
    return out


def _lognormal(values: np.ndarray) -> list[float]:
    """``[mean us, sigma]``: the mean and the standard deviation of ``log(1 + us)``."""
    return [round(float(values.mean()), 3), round(float(np.log1p(values).std()), 4)]


def _comm_slot(members: Sequence[RankProfile], rows: np.ndarray, pops: dict, role: list[Any]) -> dict[str, Any]:
    """A communication slot as the structural model keeps it, with its sizes in order (what the
    members of its group must agree on) and the mean of its durations (us; per source rank when
    the ranks differ) in place of their positions."""
    slot = _slot(members, rows, pops, role, True)
    for key in ("duration", "duration_by_rank", "num_ops", "num_ops_by_rank"):
        slot.pop(key, None)
    per_rank = [float(np.maximum(m.duration[rows], 0).mean()) for m in members]
    slot["mean_us"] = round(float(np.mean(per_rank)), 3)
    if len(members) > 1 and max(per_rank) > 1.01 * max(min(per_rank), 1e-9):
        slot["mean_us_by_rank"] = [round(x, 3) for x in per_rank]
    return slot


#: a rank's grammar, the source positions of each slot, and each slot's dependency offsets
_Shape = tuple[Grammar, list[np.ndarray], list[dict[str, Any]]]


def _shape_key(p: RankProfile, symbols: np.ndarray) -> bytes:
    """A digest of what the block grammar depends on: the symbols (numbered in first-appearance
    order, so ranks of one role agree) and the dependency offsets."""
    h = hashlib.blake2b(digest_size=20)
    for a in (symbols, p.data_ptr, p.data_off, p.ctrl_ptr, p.ctrl_off):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    return h.digest()


def _shape(rep: RankProfile, symbols: np.ndarray, max_period: int) -> _Shape:
    g = discover(symbols, max_period)
    slot_of = np.fromiter(g.slots_of(g.step), dtype=np.int64, count=len(rep))
    order = np.argsort(slot_of, kind="stable")
    bounds = np.searchsorted(slot_of[order], np.arange(len(g.slot_symbol) + 1))
    rows = [order[bounds[s]:bounds[s + 1]] for s in range(len(g.slot_symbol))]
    deps = [{**_deps("data", rep.data_ptr, rep.data_off, r), **_deps("ctrl", rep.ctrl_ptr, rep.ctrl_off, r)}
            for r in rows]
    return g, rows, deps


def _relabel(rep: RankProfile, other: RankProfile, rows: list[np.ndarray], roles: list[Any], tiling: RankTiling,
             kinds: KindTable) -> list[list[Any]] | None:
    """How ``other`` (a rank of the same role as ``rep``: same grammar and dependencies) names
    the groups and peers ``rep`` names: ``[[rep's role, other's role], ...]`` (the pairs that
    differ), or None when it is not a renaming (one role of ``rep`` is two of ``other``'s) or
    their communication differs in sizes, tags or roots."""
    pairs: dict[str, tuple[Any, Any]] = {}
    for s, r in enumerate(rows):
        if roles[s] is None:
            continue
        theirs = node_role(other, int(r[0]), tiling, kinds)
        if pairs.setdefault(repr(roles[s]), (roles[s], theirs))[1] != theirs:
            return None
        if any(not np.array_equal(getattr(rep, a)[r], getattr(other, a)[r]) for a in ("size", "tag", "root")):
            return None
    return [[a, b] for a, b in pairs.values() if a != b]


def _role_classes(by_class: list[tuple[list[RankProfile], bytes]], shapes: dict[bytes, _Shape], tiling: RankTiling,
                  kinds: KindTable) -> list[tuple[list[int], list[list[list[Any]]]]]:
    """The tiling's rank classes merged by role: per merged class, the tiling classes it holds
    and how each renames the first one's groups and peers."""
    merged: list[tuple[list[int], list[list[list[Any]]]]] = []
    open_by_key: dict[bytes, list[int]] = {}
    for c, (members, key) in enumerate(by_class):
        _g, rows, _deps = shapes[key]
        for m in open_by_key.get(key, []):
            first = by_class[merged[m][0][0]][0][0]
            roles = [node_role(first, int(r[0]), tiling, kinds) for r in rows]
            pairs = _relabel(first, members[0], rows, roles, tiling, kinds)
            if pairs is not None:
                merged[m][0].append(c)
                merged[m][1].append(pairs)
                break
        else:
            open_by_key.setdefault(key, []).append(len(merged))
            merged.append(([c], [[]]))
    return merged


def fit_learned_workload(traces: TraceSet, kinds: KindTable, max_period: int) -> dict[str, Any]:
    """The hierarchical model of one trace set (module docstring): one class per role, each
    tile position of the role renaming the class's groups and peers (``tile_relabel``)."""
    profiles = read_profiles(traces, kinds)
    tiling = find_tiling(profiles, traces.process_groups)
    pops = populations(profiles)
    shapes: dict[bytes, _Shape] = {}
    by_class: list[tuple[list[RankProfile], bytes]] = []
    for c in range(max(tiling.classes) + 1):
        members = [p for p in profiles if tiling.classes[p.rank % tiling.tile] == c]
        symbols = _symbols(members[0], tiling, kinds)
        key = _shape_key(members[0], symbols)
        if key not in shapes:
            shapes[key] = _shape(members[0], symbols, max_period)
        by_class.append((members, key))
    merged = _role_classes(by_class, shapes, tiling, kinds)
    model_class = {c: m for m, (held, _pairs) in enumerate(merged) for c in held}
    renames = {c: pairs for held, renamed in merged for c, pairs in zip(held, renamed)}
    classes = [_class([p for c in held for p in by_class[c][0]], shapes[by_class[held[0]][1]], pops, tiling, kinds)
               for held, _renamed in merged]
    out = {"ranks": len(profiles), "tile": tiling.tile,
           "tile_classes": [model_class[c] for c in tiling.classes], "roles": len(shapes),
           "kind_stats": kind_stats(pops), "classes": classes}
    if any(renames.values()):
        out["tile_relabel"] = [renames[c] for c in tiling.classes]
    return out


def _class(members: list[RankProfile], shape: _Shape, pops: dict, tiling: RankTiling,
           kinds: KindTable) -> dict[str, Any]:
    """One class: its blocks, communication anchors and segments, fitted on ``members`` (the
    first names the groups and peers)."""
    g, rows, deps = shape
    rep = members[0]
    roles = [node_role(rep, int(r[0]), tiling, kinds) for r in rows]
    comm = {s for s, r in enumerate(roles) if r is not None}
    chained = {s for s, d in enumerate(deps) if _only_previous(d)}
    segs, where = _segments(g, comm, chained)
    slots: list[dict[str, Any]] = []
    for s, r in enumerate(rows):
        role = roles[s]
        if role is not None:
            slots.append({**_comm_slot(members, r, pops, role), **deps[s]})
        else:
            seg, idx = where[s]
            slots.append({"segment": seg, "index": idx, **deps[s]})
    p2p = {s for s in comm if roles[s][0] != "g"}  # type: ignore[index]
    return {"ranks": len(members), "members": [p.rank for p in members], "nodes": len(rep),
            "step": g.step, "motifs": _motifs(g, p2p, comm), "slots": slots,
            "segments": [_segment(seg, rows, members) for seg in segs]}


def _deps(name: str, ptr: np.ndarray, off: np.ndarray, rows: np.ndarray) -> dict[str, Any]:
    """``{name: offsets}`` (the most common offsets among ``rows``) and, when the occurrences
    differ, ``{name + "_seq": offsets of each occurrence}`` (a block's first instance may wait
    on something its later instances do not)."""
    each = [off[ptr[r]:ptr[r + 1]].tolist() for r in rows.tolist()]
    common = Counter(tuple(x) for x in each).most_common(1)[0][0]
    out: dict[str, Any] = {name: list(common)}
    if any(tuple(x) != common for x in each):
        out[name + "_seq"] = each
    return out
