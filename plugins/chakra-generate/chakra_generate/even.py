"""The ``even_collectives`` transform: one size for every member of an uneven collective.

An MoE layer's token dispatch and combine are all-to-alls whose members move different amounts
(``all_to_all_single`` with uneven split sizes), so each rank's node records its own
``comm_size``. The simulators, ASTRA-sim among them, time a collective from one size that every
member shares, and matching members of different sizes never complete: validation refuses such
a set (``coll-order``). This transform gives each such collective one size, chosen by ``size``:

- ``max`` (the default): the largest member's, since a collective whose members wait for one
  another ends when its busiest member is done (it overstates the traffic of the others);
- ``mean``: the members' mean, rounded up, so that the total bytes stay (about) the same.

The k-th collective of a process group on each member is one collective (the order in which
validation and the simulators match them). Only collectives of the ``kinds`` named whose members
agree on the kind are changed; any other difference is left for validation to report. What was
changed is said in one warning.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from chakra_core import CommType, ConfigError, Node, NodeType, Option, TraceSet, Transform, node_columns, set_attr

__all__ = ["EvenCollectives", "EvenWarning"]

_RULES = ("max", "mean")


class EvenWarning(UserWarning):
    """What ``even_collectives`` changed."""


class EvenCollectives(Transform):
    """Give every member of an uneven collective one ``comm_size`` (the largest, or the mean)."""

    description = "one size for all members of an uneven collective (MoE all-to-all): the largest or the mean"
    options = {
        "kinds": Option("list", ["all_to_all"], "the collective kinds made even (all_to_all, all_gather, "
                        "reduce_scatter, reduce_scatter_block, all_reduce, broadcast, reduce, gather, scatter)"),
        "size": Option("str", "max", "the size given to every member: max (the largest member's) or "
                       "mean (the members' mean, rounded up)", choices=_RULES),
    }

    def apply(self, traces: TraceSet, options: Mapping[str, Any]) -> TraceSet:
        """The lazily evened set (the sizes are read from every rank first, in one columnar pass)."""
        rule = options["size"]
        kinds = _kinds(options["kinds"])
        sizes = _sizes(traces)
        new, changed = _even(sizes, kinds, rule)
        if changed:
            warnings.warn(_said(changed, rule), EvenWarning, stacklevel=2)
        if not new:
            return traces

        def fn(rank: int, n: Node) -> Node:
            size = new.get(rank, {}).get(n.id) if n.type == NodeType.COMM_COLL_NODE else None
            if size is not None:
                set_attr(n, "comm_size", size)
            return n

        return traces.map_nodes(fn)


def _kinds(names: list[Any]) -> set[int]:
    """The CommType numbers of the collective kinds named (``all_to_all`` or ``ALL_TO_ALL``)."""
    out = set()
    for name in names:
        kind = CommType.__members__.get(str(name).upper())
        if kind is None or kind == CommType.BARRIER:
            known = ", ".join(k.lower() for k in CommType.__members__ if k != "BARRIER")
            raise ConfigError(f"transform 'even_collectives': unknown collective kind {name!r} (kinds: {known})")
        out.add(int(kind))
    return out


#: (rank, node id, comm_type, comm_size) of each collective, by group, in file order
Sizes = dict[str, list[list[tuple[int, int, int, int]]]]


def _sizes(traces: TraceSet) -> Sizes:
    """Each rank's collectives by process group (``""``: the world), in file order."""
    out: Sizes = {}
    for rank in traces.ranks:
        cols = node_columns(traces[rank], ("comm_type", "comm_size", "pg_name"))
        ctype, csize, pg = cols.attrs["comm_type"], cols.attrs["comm_size"], cols.attrs["pg_name"]
        per_group: dict[str, list[tuple[int, int, int, int]]] = {}
        for i in np.flatnonzero(cols.types == NodeType.COMM_COLL_NODE).tolist():
            t, s = ctype.get_int(i), csize.get_int(i)
            if t is None or s is None:
                continue
            name = pg.get_str(i, "") or ""
            per_group.setdefault("" if name == "0" else name, []).append((rank, int(cols.ids[i]), t, s))
        for name, calls in per_group.items():
            out.setdefault(name, []).append(calls)
    return out


def _even(sizes: Sizes, kinds: set[int], rule: str) -> tuple[dict[int, dict[int, int]], dict[tuple[str, int], int]]:
    """The new sizes (rank -> node id -> size) and, per (group, kind), how many collectives
    changed."""
    new: dict[int, dict[int, int]] = {}
    changed: dict[tuple[str, int], int] = {}
    for group, members in sizes.items():
        for k in range(max(len(m) for m in members)):
            calls = [m[k] for m in members if k < len(m)]
            if len(calls) < 2 or len({c[2] for c in calls}) > 1 or calls[0][2] not in kinds:
                continue
            got = [c[3] for c in calls]
            if min(got) == max(got):
                continue
            size = max(got) if rule == "max" else math.ceil(sum(got) / len(got))
            for rank, nid, _t, s in calls:
                if s != size:
                    new.setdefault(rank, {})[nid] = size
            key = (group, calls[0][2])
            changed[key] = changed.get(key, 0) + 1
    return new, changed


def _said(changed: dict[tuple[str, int], int], rule: str) -> str:
    """The warning that says what was made even."""
    parts = [f"{n} {CommType(t).name} on {'the world' if not g else f'group {g!r}'}"
             for (g, t), n in sorted(changed.items())]
    how = "the largest member's" if rule == "max" else "the members' mean"
    return (f"even_collectives: {', '.join(parts)} had members of different sizes; each member's comm_size "
            f"is now {how} (-O size=max|mean)")
