"""The summary drawing of a large rank: repeated layers folded, runs of nodes collapsed, a bounded
number of boxes.

The rank's nodes in dependency order are folded by :func:`._graphfold.fold` (tokens: node type
and name family, :func:`._opclass.family_of`).  With room to spare, the first instance of a fold
of folds is drawn box by box before a fold of the rest.  Each fold of at least ``MIN_BLOCK``
nodes is a box (``8 x 11 nodes`` with its first and last names, its operator classes and its time); the
units between them are collapsed into runs; while there are more than ``max_boxes`` boxes,
neighbouring ones are merged into runs.  Edges join boxes where a node of one depends on a node
of the other (data when any of those dependencies is a data dependency).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from chakra_core.analysis._graphfold import Fold, fold
from chakra_core.analysis._opclass import family_of, operator_class

__all__ = ["summarise", "MIN_BLOCK", "FOLD", "RUN"]

#: the smallest fold drawn as a box of its own (smaller ones go into runs)
MIN_BLOCK = 4
#: the ``type`` of a box of repeats and of a run of nodes in the drawing's node details
FOLD, RUN = -1, -2
_NAME_CHARS = 44
_KINDS = {2: "memory", 3: "memory", 5: "send", 6: "recv", 7: "collective"}


def summarise(order: np.ndarray, details: dict[int, dict[str, Any]], dep_ptr: np.ndarray, deps: np.ndarray,
              ndata: np.ndarray, max_boxes: int) -> tuple[dict[int, dict[str, Any]], list[tuple[int, int, str]]]:
    """Boxes (details with a ``label``, keyed by box number) and edges ``(box, box, "data"|"ctrl")``
    of the nodes at positions ``order`` (a dependency order) with ``details`` per position."""
    ids: dict[tuple[int, str], int] = {}
    tokens = [ids.setdefault((details[p]["type"], family_of(details[p]["name"])), len(ids)) for p in order.tolist()]
    groups = _cap(_unrolled(_runs(fold(tokens)), max_boxes), max_boxes)
    box_of = np.empty(len(order), np.int64)
    boxes = {}
    for k, units in enumerate(groups):
        lo, hi = units[0].start, units[-1].end
        box_of[lo:hi] = k
        boxes[k] = _box(k, units, [details[p] for p in order[lo:hi].tolist()])
    at = np.empty(int(order.max()) + 1 if len(order) else 0, np.int64)
    at[order] = box_of
    return boxes, _edges(at, dep_ptr, deps, ndata)


def _runs(units: list[Fold]) -> list[list[Fold]]:
    """Each fold of ``MIN_BLOCK`` nodes or more alone; the units between them together."""
    out: list[list[Fold]] = []
    run: list[Fold] = []
    for u in units:
        if u.count > 1 and u.size >= MIN_BLOCK:
            if run:
                out.append(run)
                run = []
            out.append([u])
        else:
            run.append(u)
    if run:
        out.append(run)
    return out


def _unrolled(groups: list[list[Fold]], max_boxes: int) -> list[list[Fold]]:
    """While there are fewer than a third of ``max_boxes`` boxes, the first instance of a fold
    that holds folds (micro-batches of layers), largest first, drawn box by box before the fold
    of the other instances, unless that makes more than half of ``max_boxes`` boxes."""
    done: set[int] = set()
    while len(groups) < max_boxes // 3:
        nested = [k for k, g in enumerate(groups) if len(g) == 1 and g[0].count > 1 and k not in done
                  and any(b.count > 1 for b in g[0].body)]
        if not nested:
            return groups
        k = max(nested, key=lambda i: groups[i][0].size)
        u = groups[k][0]
        period = u.size // u.count
        rest = [_shifted(b, period) for b in u.body]
        rest = [Fold(u.start + period, u.end, u.count - 1, rest)] if u.count > 2 else rest
        first, later = _runs(u.body), _runs(rest)
        if len(groups) - 1 + len(first) + len(later) > max_boxes // 2:
            return groups
        groups = groups[:k] + first + later + groups[k + 1:]
        done = {i if i < k else i + len(first) + len(later) - 1 for i in done} | {k + len(first)}
    return groups


def _shifted(unit: Fold, by: int) -> Fold:
    """``unit`` moved ``by`` elements later."""
    return Fold(unit.start + by, unit.end + by, unit.count, [_shifted(b, by) for b in unit.body])


def _cap(groups: list[list[Fold]], max_boxes: int) -> list[list[Fold]]:
    """Neighbouring groups merged, the smallest pair (by nodes) first, until at most
    ``max_boxes`` remain."""
    groups = [list(g) for g in groups]
    while len(groups) > max_boxes:
        sizes = [sum(u.size for u in g) for g in groups]
        k = min(range(len(groups) - 1), key=lambda i: sizes[i] + sizes[i + 1])
        groups[k:k + 2] = [groups[k] + groups[k + 1]]
    return groups


def _short(name: str) -> str:
    """``name`` shortened in the middle to at most ``_NAME_CHARS`` characters."""
    if len(name) <= _NAME_CHARS:
        return name
    half = (_NAME_CHARS - 1) // 2
    return name[:half] + "…" + name[-(_NAME_CHARS - 1 - half):]


def _node_class(d: dict[str, Any]) -> str:
    if d["type"] == 1:
        return "metadata"
    kind = _KINDS.get(d["type"], "cpu" if d["cpu"] else "compute")
    if kind == "collective":
        return (d["comm_type"] or "other collective").lower().replace("_", "-")
    return operator_class(d["name"], kind)


def _box(k: int, units: list[Fold], nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The details of box ``k``: ``units`` over ``nodes`` (their details, in order)."""
    classes = Counter(_node_class(d) for d in nodes).most_common(3)
    lines = []
    if len(units) == 1 and units[0].count > 1:
        u = units[0]
        lines.append(f"{u.count} x {u.size // u.count} nodes ({u.size} in all)")
        inner = [b for b in u.body if b.count > 1 and b.size >= MIN_BLOCK][:2]
        lines += [f"each with {b.count} x {b.size // b.count} nodes: "
                  f"{_short(family_of(nodes[b.start - u.start]['name']))}" for b in inner]
        kind = FOLD
    else:
        lines.append(f"{len(nodes)} node" + ("s" if len(nodes) > 1 else ""))
        kind = RUN
    lines.append(_short(nodes[0]["name"]) if len(nodes) == 1 else
                 f"{_short(nodes[0]['name'])} …")
    if len(nodes) > 1:
        lines.append(f"… {_short(nodes[-1]['name'])}")
    lines.append(", ".join(f"{c} {n}" for c, n in classes))
    total_us = sum(d["duration_micros"] for d in nodes)
    lines.append(f"{total_us:,} us")
    return {"id": f"b{k}", "name": nodes[0]["name"], "type": kind, "duration_micros": total_us, "cpu": False,
            "comm_size": None, "comm_type": "", "pg_name": "", "label": "\n".join(lines), "nodes": len(nodes),
            "repeats": units[0].count if kind == FOLD else 1}


def _edges(box_at: np.ndarray, dep_ptr: np.ndarray, deps: np.ndarray,
           ndata: np.ndarray) -> list[tuple[int, int, str]]:
    """Edges between boxes: ``box_at[position]`` is a node's box."""
    if not len(box_at):
        return []
    node = np.repeat(np.arange(len(box_at)), np.diff(dep_ptr[:len(box_at) + 1]))
    ok = deps >= 0
    rank_in_row = np.arange(len(deps)) - np.repeat(dep_ptr[:len(box_at)], np.diff(dep_ptr[:len(box_at) + 1]))
    src, dst = box_at[deps[ok]], box_at[node[ok]]
    data = (rank_in_row < ndata[node])[ok]
    keep = src != dst
    pairs: dict[tuple[int, int], bool] = {}
    for a, b, is_data in zip(src[keep].tolist(), dst[keep].tolist(), data[keep].tolist()):
        pairs[(a, b)] = pairs.get((a, b), False) or is_data
    return [(a, b, "data" if is_data else "ctrl") for (a, b), is_data in sorted(pairs.items())]
