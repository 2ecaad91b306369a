"""Collectives the network model does not time: those that replay their recorded duration (a
broadcast with a ``duration_micros``, as ASTRA-sim replays it), on each member's communication
resource, without waiting for the other members.

They keep their :class:`classify.CollectiveArgs` in the program's ``extra`` but are no
``K_COLL`` node, so :mod:`collectives` never sees them; this module gives their note and their
rows of the Result's ``summary.collectives`` (times in ns).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .actor import Actor
from .classify import CollectiveArgs
from .program import COMM_NAME, K_COMP, R_COMM, Program

__all__ = ["REPLAYED_BY", "replayed_nodes", "replayed_note", "replayed_rows"]

#: what timed a replayed collective: its ``phases`` in the summary, its spans' ``algorithm``
REPLAYED_BY = "recorded duration"


def replayed_nodes(prog: Program) -> np.ndarray:
    """The indices of ``prog``'s collectives that replay their recorded duration (compute-like
    nodes on the communication resource), ascending."""
    kind = np.frombuffer(prog.kind, np.uint8)
    resource = np.frombuffer(prog.resource, np.uint8)
    return np.flatnonzero((kind == K_COMP) & (resource == R_COMM))


def replayed_note(progs: Iterable[Program], classes: Iterable[list[int]]) -> str | None:
    """The note naming each collective kind that replayed its recorded duration and how many
    nodes over all ranks did (``classes``: the ranks each program stands for); None for none."""
    nodes: dict[str, int] = {}
    for prog, ranks in zip(progs, classes):
        for name, n in prog.replayed.items():
            nodes[name] = nodes.get(name, 0) + n * len(ranks)
    if not nodes:
        return None
    counts = ", ".join(f"{name}: {n} node(s)" for name, n in sorted(nodes.items()))
    return (f"collectives replayed their recorded duration_micros, not timed by the network ({counts}): "
            "a broadcast with a duration replays it, as ASTRA-sim does (docs/simulator.md); their "
            "comm_size is counted, no bandwidth is derived from them")


def replayed_rows(actors: Iterable[Actor]) -> list[dict]:
    """Rows of ``summary.collectives`` for the replayed collectives, per kind and group: the k-th
    replayed collective a rank issues on a group is one collective with the k-th of every other
    member; its ``bytes`` are its ``comm_size``, its time the longest of its members' (each
    member replays its own from when it issues it: no sync wait)."""
    per_key: dict[tuple[str, str], list[list[tuple[int, int]]]] = {}
    for a in actors:
        for key, calls in _issued(a).items():
            per_key.setdefault(key, []).append(calls)
    return [_row(name, pg, members) for (name, pg), members in sorted(per_key.items())]


def _issued(a: Actor) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """Per (kind, group), the ``(bytes, ns)`` of each replayed collective of actor ``a`` in issue
    order."""
    nodes = replayed_nodes(a.prog)
    start = np.frombuffer(a.start, np.int64)[nodes]
    end = np.frombuffer(a.end, np.int64)[nodes]
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for k in np.lexsort((nodes, start)).tolist():
        args = a.prog.extra[int(nodes[k])]
        assert isinstance(args, CollectiveArgs)
        out.setdefault((COMM_NAME[args.comm_type], args.pg), []).append((args.size, int(end[k] - start[k])))
    return out


def _row(name: str, pg: str, members: list[list[tuple[int, int]]]) -> dict:
    """One row of ``summary.collectives`` from each member actor's ``(bytes, ns)`` calls."""
    calls = max(len(m) for m in members)
    sizes = [next(m[k][0] for m in members if len(m) > k) for k in range(calls)]
    times = [max(m[k][1] for m in members if len(m) > k) for k in range(calls)]
    return {"collective": name, "group": pg or "all", "count": calls, "bytes": sum(sizes),
            "total_ns": sum(times), "max_ns": max(times), "sync_wait_ns": 0, "chunks": 0,
            "phases": [REPLAYED_BY], "replayed": True}
