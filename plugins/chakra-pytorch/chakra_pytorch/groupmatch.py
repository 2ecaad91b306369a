"""The process group of each collective whose op does not name it, by matching calls across ranks.

A gloo trace does not say which group a ``c10d::allreduce_`` ran on (the group is an
``<Object>`` input; gloo writes no ``record_param_comms``).  A collective is issued by exactly its
group's members, in the same order on every member, so the groups are found by walking every
rank's collectives in issue order: a group takes the next collective of each of its members
when they all have one of the same kind and size, one collective at a time.  Among the groups
that can, one is taken unless a larger group holding its members may still take that call
(each of the larger group's other ranks has the same kind and size yet to match): then the
larger group waits for them, so a call that every rank issues goes to the whole job.  When
every group that can take a call may grow, the largest takes it.  A collective left unmatched (a
member's trace missing from the set, or calls that match no group) keeps the default group
"0", with a warning.  Ops that name their group (``record_param_comms``' ``pg_name``, Kineto's
``Process Group Name``) are taken as they are and left out of the walk.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from .comms import CommInfo
from .hostet import HostOp
from .schema_version import PyTorchTraceWarning

__all__ = ["unnamed_collectives", "match_groups", "name_groups", "SetMatch", "has_subgroups"]

#: a collective as the walk compares it: (kind, bytes)
Call = tuple[str, int]


def unnamed_collectives(ops: Sequence[HostOp]) -> list[CommInfo]:
    """The collectives of ``ops`` (in issue order) whose op does not name its group."""
    return [op.comm for op in ops if op.comm is not None and op.comm.kind not in ("send", "recv")
            and op.comm.pg_name is None]


def match_groups(calls: Mapping[int, Sequence[Call]], groups: Mapping[str, Sequence[int]]
                 ) -> tuple[dict[int, list[str | None]], int]:
    """Each rank's group name per call of ``calls[rank]`` (None where no group matched), and
    how many calls matched no group.  ``groups`` maps each group's name to its global ranks."""
    order = sorted(((name, tuple(ranks)) for name, ranks in groups.items() if ranks),
                   key=lambda g: (-len(g[1]), g[0]))
    order = [g for g in order if all(r in calls for r in g[1])]
    out: dict[int, list[str | None]] = {r: [None] * len(c) for r, c in calls.items()}
    pos = dict.fromkeys(calls, 0)
    ahead = {r: Counter(c) for r, c in calls.items()}  # each rank's calls not yet matched
    while True:
        fitting = [g for g in order if _fits(calls, pos, g[1])]
        if not fitting:
            break
        name, members = next((g for g in fitting if not _may_grow(g[1], calls[g[1][0]][pos[g[1][0]]], order, ahead)),
                             fitting[0])
        for r in members:
            ahead[r][calls[r][pos[r]]] -= 1
            out[r][pos[r]] = name
            pos[r] += 1
    left = sum(len(c) - pos[r] for r, c in calls.items())
    return out, left


def _fits(calls: Mapping[int, Sequence[Call]], pos: Mapping[int, int], members: Sequence[int]) -> bool:
    """True when every member of a group has a next call and they are all the same."""
    nxt = [calls[r][pos[r]] if pos[r] < len(calls[r]) else None for r in members]
    return nxt[0] is not None and all(c == nxt[0] for c in nxt)


def _may_grow(members: Sequence[int], call: Call, order: Sequence[tuple[str, tuple[int, ...]]],
              ahead: Mapping[int, Counter]) -> bool:
    """True when a larger group holding ``members`` may still take ``call``: each of its other
    ranks has such a call yet to match (then the smaller group waits for it)."""
    inside = set(members)
    return any(len(big) > len(members) and inside <= set(big)
               and all(ahead[r][call] > 0 for r in big if r not in inside) for _, big in order)


def name_groups(comms: Sequence[CommInfo], names: Sequence[str | None]) -> None:
    """Give each collective of ``comms`` its matched group name (None: left as it is)."""
    for comm, name in zip(comms, names):
        if name is not None:
            comm.pg_name = name


class SetMatch:
    """The matched group names of a whole set, worked out once, when the first rank is converted.

    ``hosts[rank]()`` reads that rank's host ops (in issue order); ``groups`` are the set's
    process groups (name -> global ranks, every rank's groups together); ``where`` names the set
    in the warning about unmatched collectives.
    """

    def __init__(self, hosts: Mapping[int, Callable[[], Sequence[HostOp]]], groups: Mapping[str, Sequence[int]],
                 where: str) -> None:
        self._hosts = hosts
        self._groups = groups
        self._where = where
        self._names: dict[int, list[str | None]] | None = None

    def names(self, rank: int) -> list[str | None]:
        """The group name of each unnamed collective of ``rank``, in issue order."""
        if self._names is None:
            calls = {r: [(c.kind, int(c.size_bytes)) for c in unnamed_collectives(read())]
                     for r, read in self._hosts.items()}
            self._names, left = match_groups(calls, self._groups)
            if left:
                warnings.warn(f"{self._where}: {left} collective(s) match no process group across the ranks "
                              "(a member's trace missing, or calls in another order): they keep the default "
                              "group 0", PyTorchTraceWarning, stacklevel=2)
        return self._names.get(rank, [])

    def apply(self, rank: int, ops: Sequence[HostOp]) -> None:
        """Name the group of each unnamed collective of ``ops`` (``rank``'s host ops)."""
        name_groups(unnamed_collectives(ops), self.names(rank))


def has_subgroups(groups: Mapping[str, Sequence[int]], world: int) -> bool:
    """True when ``groups`` hold a group of fewer than ``world`` ranks."""
    return any(len(set(ranks)) < world for ranks in groups.values() if ranks)
