"""Fitting the structural model of one trace set: tiling, rank classes, motifs and slots."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from chakra_core import NodeType, TraceSet

from .kinds import kind_stats, populations
from .layout import RankTiling, find_tiling, peer_offset
from .motifs import Grammar, discover
from .profile import KindTable, RankProfile, read_profiles
from .quantiles import positions, slot_knots

__all__ = ["fit_workload", "node_role"]


def node_role(p: RankProfile, i: int, tiling: RankTiling, kinds: KindTable) -> list[Any] | None:
    """The communication role of node ``i``: ``["g", ref]``, ``["send"|"recv", peer offset]``."""
    g = p.group[i]
    if g is not None:
        return ["g", tiling.refs[p.rank][g]]
    peer = int(p.peer[i])
    if peer < 0:
        return None
    send = kinds.keys[int(p.kind[i])][0] == NodeType.COMM_SEND_NODE
    return ["send" if send else "recv", peer_offset(peer, p.rank, tiling.tile)]


def _symbols(p: RankProfile, tiling: RankTiling, kinds: KindTable) -> np.ndarray:
    index: dict[tuple, int] = {}
    keys = ((int(k), repr(node_role(p, i, tiling, kinds))) for i, k in enumerate(p.kind.tolist()))
    return np.fromiter((index.setdefault(key, len(index)) for key in keys), dtype=np.int64, count=len(p))


def _offsets(ptr: np.ndarray, off: np.ndarray, rows: np.ndarray) -> list[int]:
    """The most common dependency-offset tuple among ``rows``."""
    seen = Counter(tuple(off[ptr[r]:ptr[r + 1]].tolist()) for r in rows.tolist())
    return list(seen.most_common(1)[0][0])


def _slot(members: Sequence[RankProfile], rows: np.ndarray, pops: dict, role: list[Any] | None,
          exact_sizes: bool) -> dict[str, Any]:
    rep = members[0]
    i0 = int(rows[0])
    k = int(rep.kind[i0])
    slot: dict[str, Any] = {"kind": k, "role": role,
                            "data": _offsets(rep.data_ptr, rep.data_off, rows),
                            "ctrl": _offsets(rep.ctrl_ptr, rep.ctrl_off, rows)}
    roots = Counter(int(m.root[r]) for m in members for r in rows.tolist())
    if roots.most_common(1)[0][0] >= 0:
        slot["root"] = roots.most_common(1)[0][0]
    for name in ("duration", "size", "num_ops"):
        vals = np.concatenate([getattr(m, name)[rows] for m in members])
        if (vals >= 0).sum() * 2 <= len(vals):
            continue
        kinds, pop = pops[name]
        if name == "size" and exact_sizes:
            slot["size_exact"] = np.maximum(getattr(rep, name)[rows], 0).tolist()
            continue
        own = pop[kinds == k]
        slot[name] = slot_knots(positions(np.maximum(vals, 0), own))
        if name != "size" and len(members) > 1:
            by_rank = [slot_knots(positions(np.maximum(getattr(m, name)[rows], 0), own)) for m in members]
            if any(kn != by_rank[0] for kn in by_rank):
                slot[name + "_by_rank"] = by_rank
    if slot["role"] is not None and slot["role"][0] != "g":
        slot["tags"] = np.maximum(rep.tag[rows], 0).tolist()
    return slot


def _motifs(g: Grammar, p2p_slots: set[int], comm_slots: set[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for body, count in g.motifs:  # bodies name earlier motifs only
        comm = any(out[v]["comm"] if kind == "m" else v in comm_slots for kind, v in body)
        p2p = any(out[v]["p2p"] if kind == "m" else v in p2p_slots for kind, v in body)
        out.append({"body": [[kind, v] for kind, v in body], "count": count, "comm": comm, "p2p": p2p})
    return out


def fit_workload(traces: TraceSet, kinds: KindTable, max_period: int) -> dict[str, Any]:
    """The model of one trace set (the tiling, and per rank class its motifs and slots)."""
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
        slots = []
        for s in range(len(g.slot_symbol)):
            rows = order[bounds[s]:bounds[s + 1]]
            role = node_role(rep, int(rows[0]), tiling, kinds)
            exact = role is not None and (role[0] != "g" or not single)
            slots.append(_slot(members, rows, pops, role, exact))
        comm = {s for s, sl in enumerate(slots) if sl["role"] is not None}
        p2p = {s for s in comm if slots[s]["role"][0] != "g"}
        classes.append({"ranks": len(members), "members": [p.rank for p in members], "nodes": len(rep), "step": g.step,
                        "motifs": _motifs(g, p2p, comm), "slots": slots})
    return {"ranks": len(profiles), "tile": tiling.tile, "tile_classes": tiling.classes,
            "kind_stats": kind_stats(pops), "classes": classes}
