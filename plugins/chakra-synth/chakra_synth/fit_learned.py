"""Fitting the hierarchical model of one trace set (the ``learned`` synthesizer).

The step of each rank class is a grammar of repeated blocks (:mod:`.motifs`, period detection on
the (kind, group, peer) sequence): iteration -> phases (the step's body) -> repeated blocks ->
operators.  A block's communication nodes stay anchored where they are (they must agree across
ranks); the runs of computation between them are *segments*, and a segment keeps no node
sequence, only distributions:

- ``length``: its operator count (``chakra synth sample`` draws a count around it);
- ``mix``: how often each kind occurs in it, ``first``: the kinds it starts with, ``next``:
  first-order transition counts between its kinds;
- ``times``: per kind in it, a log-normal fit of its durations (mean us, sigma of ``log(1 + us)``);
- ``total``: the mean of its summed durations (us) over its instances (``total_by_rank`` per
  source rank when the ranks run at different speeds), ``cv`` their coefficient of variation.

Durations per kind are drawn from the kind's quantile table with multiplicative noise and then
rescaled to the segment's drawn total, so a sample keeps the step time, not the sequence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from chakra_core import TraceSet

from .fit_structure import _motifs, _slot, _symbols, node_role
from .kinds import kind_stats, populations
from .layout import find_tiling
from .motifs import Grammar, discover
from .profile import KindTable, RankProfile, read_profiles

__all__ = ["fit_learned_workload"]


def _segments(g: Grammar, comm: set[int]) -> tuple[list[list[int]], dict[int, tuple[int, int]]]:
    """Runs of computation leaves in every body: the slots of each segment, and per slot its
    ``(segment, index)``."""
    segs: list[list[int]] = []
    where: dict[int, tuple[int, int]] = {}
    for body, _count in g.motifs:
        run: list[int] = []
        for kind, v in [*body, ("m", -1)]:
            if kind == "n" and v not in comm:
                run.append(v)
                continue
            if run:
                for i, s in enumerate(run):
                    where[s] = (len(segs), i)
                segs.append(run)
                run = []
    return segs, where


def _segment(slots: list[int], rows: list[np.ndarray], members: Sequence[RankProfile]) -> dict[str, Any]:
    rep = members[0]
    kinds = [int(rep.kind[rows[s][0]]) for s in slots]
    nxt: dict[str, Counter] = {}
    for a, b in zip(kinds, kinds[1:]):
        nxt.setdefault(str(a), Counter())[str(b)] += 1
    times: dict[int, list[np.ndarray]] = {}
    for s, k in zip(slots, kinds):
        times.setdefault(k, []).extend(np.maximum(m.duration[rows[s]], 0).astype(np.float64) for m in members)
    totals = [sum(np.maximum(m.duration[rows[s]], 0).astype(np.float64) for s in slots) for m in members]
    per_rank = [float(np.mean(t)) for t in totals]
    pooled = np.concatenate([np.atleast_1d(t) for t in totals])
    mean = float(pooled.mean())
    out: dict[str, Any] = {"length": len(slots), "mix": {str(k): n for k, n in sorted(Counter(kinds).items())},
                           "first": kinds[0], "next": {a: dict(sorted(c.items())) for a, c in sorted(nxt.items())},
                           "total": round(mean, 3), "cv": round(float(pooled.std() / mean), 4) if mean > 0 else 0.0,
                           "times": {str(k): _lognormal(np.concatenate(v)) for k, v in sorted(times.items())}}
    if len(members) > 1 and max(per_rank) > 1.01 * max(min(per_rank), 1e-9):
        out["total_by_rank"] = [round(x, 3) for x in per_rank]
    return out


def _lognormal(values: np.ndarray) -> list[float]:
    """``[mean us, sigma]``: the mean and the standard deviation of ``log(1 + us)``."""
    return [round(float(values.mean()), 3), round(float(np.log1p(values).std()), 4)]


def _comm_slot(members: Sequence[RankProfile], rows: np.ndarray, pops: dict, role: list[Any],
               exact: bool) -> dict[str, Any]:
    """A communication slot as the structural model keeps it, with the mean of its durations (us;
    per source rank when the ranks differ) in place of their positions."""
    slot = _slot(members, rows, pops, role, exact)
    for key in ("duration", "duration_by_rank", "num_ops", "num_ops_by_rank"):
        slot.pop(key, None)
    per_rank = [float(np.maximum(m.duration[rows], 0).mean()) for m in members]
    slot["mean_us"] = round(float(np.mean(per_rank)), 3)
    if len(members) > 1 and max(per_rank) > 1.01 * max(min(per_rank), 1e-9):
        slot["mean_us_by_rank"] = [round(x, 3) for x in per_rank]
    return slot


def fit_learned_workload(traces: TraceSet, kinds: KindTable, max_period: int) -> dict[str, Any]:
    """The hierarchical model of one trace set (module docstring)."""
    profiles = read_profiles(traces, kinds)
    tiling = find_tiling(profiles, traces.process_groups)
    pops = populations(profiles)
    single = len(set(tiling.classes)) == 1
    classes = []
    for c in range(max(tiling.classes) + 1):
        members = [p for p in profiles if tiling.classes[p.rank % tiling.tile] == c]
        rep = members[0]
        g = discover(_symbols(rep, tiling, kinds), max_period)
        slot_of = np.fromiter(g.slots_of(g.step), dtype=np.int64, count=len(rep))
        order = np.argsort(slot_of, kind="stable")
        bounds = np.searchsorted(slot_of[order], np.arange(len(g.slot_symbol) + 1))
        rows = [order[bounds[s]:bounds[s + 1]] for s in range(len(g.slot_symbol))]
        roles = [node_role(rep, int(r[0]), tiling, kinds) for r in rows]
        comm = {s for s, r in enumerate(roles) if r is not None}
        segs, where = _segments(g, comm)
        slots: list[dict[str, Any]] = []
        for s, r in enumerate(rows):
            deps = {"data": _common(rep.data_ptr, rep.data_off, r), "ctrl": _common(rep.ctrl_ptr, rep.ctrl_off, r)}
            if s in comm:
                exact = roles[s][0] != "g" or not single  # type: ignore[index]
                slots.append({**_comm_slot(members, r, pops, roles[s], exact), **deps})
            else:
                seg, idx = where[s]
                slots.append({"segment": seg, "index": idx, **deps})
        p2p = {s for s in comm if roles[s][0] != "g"}  # type: ignore[index]
        classes.append({"ranks": len(members), "members": [p.rank for p in members], "nodes": len(rep),
                        "step": g.step, "motifs": _motifs(g, p2p, comm), "slots": slots,
                        "segments": [_segment(seg, rows, members) for seg in segs]})
    return {"ranks": len(profiles), "tile": tiling.tile, "tile_classes": tiling.classes,
            "kind_stats": kind_stats(pops), "classes": classes}


def _common(ptr: np.ndarray, off: np.ndarray, rows: np.ndarray) -> list[int]:
    """The most common dependency-offset tuple among ``rows``."""
    seen = Counter(tuple(off[ptr[r]:ptr[r + 1]].tolist()) for r in rows.tolist())
    return list(seen.most_common(1)[0][0])
