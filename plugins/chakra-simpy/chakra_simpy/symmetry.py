"""Symmetry by role: ranks that the simulation would time alike are simulated once.

Two ranks are in one class when their traces are equal up to a consistent relabelling of their
process groups and peers (:func:`chakra_core.role_key`, from the serialized nodes, before any
Program is built) and every relabelled group and peer is timed alike: a group of the same size
whose ring links are all the same kind (so that all its members finish together), a peer on the
same dimension at the same hop count.  The lowest rank of a class stands for it (its
representative) and runs its own trace, with its own groups and peers; for that to be the
simulation of every rank of the class, the representatives must be closed: each member of a
group a representative issues on is stood for by a representative in that group that names the
group as that member does, and each peer of a representative is a representative.  Classes that
break this are dissolved into single ranks until it holds.

Congestion-aware runs relabel nothing (ranks share links per rank, so only ranks with identical
traces, groups and no point-to-point messages are merged).
"""

from __future__ import annotations

from collections.abc import Sequence

from chakra_core import Progress, RoleKey, TraceSet, ranks_compiled_worthwhile, role_keys

from .planner import Planner

__all__ = ["role_classes", "KEYS_COMPILED_FROM"]

#: the role keys of a set whose .et files hold at least this many bytes are taken by compiled loops
#: (as Python about 25 ms a MB; loading numba and its first calls about 0.5 s)
KEYS_COMPILED_FROM = 16 << 20


def role_classes(traces: TraceSet, planner: Planner, groups: dict[str, tuple[int, ...]],
                 aware: bool, bar: Progress, jobs: int = 0) -> list[list[int]]:
    """Classes of ranks (each ascending, its representative first), in representative order
    (the role keys by compiled loops when the set's .et files hold :data:`KEYS_COMPILED_FROM`
    bytes or more, or numba is loaded already; on ``jobs`` threads, 0: as
    :func:`chakra_core.role_keys` chooses)."""
    n = len(traces)
    keys: list[RoleKey] = []
    compile_it = ranks_compiled_worthwhile(traces, traces.ranks, KEYS_COMPILED_FROM)
    for _, get in role_keys(traces, compile_it, jobs or None):
        keys.append(get())
        bar.advance()
    signature = _Signatures(planner, groups, n)
    by_key: dict[tuple, list[int]] = {}
    for r, k in enumerate(keys):
        by_key.setdefault(_class_key(r, k, signature, aware), []).append(r)
    rep = [0] * n
    for ranks in by_key.values():
        for r in ranks:
            rep[r] = ranks[0]
    _close(rep, keys, groups)
    classes: dict[int, list[int]] = {}
    for r in range(n):
        classes.setdefault(rep[r], []).append(r)
    return list(classes.values())


class _Signatures:
    """What the timing of a group or a peer depends on, seen from one rank (None: unique)."""

    def __init__(self, planner: Planner, groups: dict[str, tuple[int, ...]], n: int):
        self.planner = planner
        self.groups = groups
        self.n = n
        self._cache: dict[str, tuple | None] = {}

    def group(self, name: str, rank: int) -> tuple | None:
        members = self.groups.get(name)
        if members is None or rank not in members:
            return None  # the engine names the error
        if name not in self._cache:
            self._cache[name] = self._ring(members)
        return self._cache[name]

    def _ring(self, members: Sequence[int]) -> tuple | None:
        if len(members) == self.n:
            return ("all",)
        if len(members) == 1:  # a group of one sends nothing
            return (1,)
        links = set()
        for j in range(len(members)):
            dim, hops = self.planner.hop(members[j - 1], members[j])
            links.add((dim.latency, dim.bytes_per_ns, hops))
        return (len(members), *links) if len(links) == 1 else None

    def peer(self, rank: int, peer: int) -> tuple | None:
        if not 0 <= peer < self.n or peer == rank:
            return None
        dim, hops = self.planner.hop(rank, peer)
        return dim.latency, dim.bytes_per_ns, hops


def _class_key(rank: int, key: RoleKey, sig: _Signatures, aware: bool) -> tuple:
    """The class a rank belongs to; a key holding the rank itself keeps it alone."""
    groups = tuple(sig.group(g, rank) for g in key.groups)
    peers = tuple(sig.peer(rank, p) for p in key.peers)
    if None in groups or None in peers or (aware and key.peers):
        return ("alone", rank)
    return (key.digest, key.groups) if aware else (key.digest, groups, peers)


def _close(rep: list[int], keys: list[RoleKey], groups: dict[str, tuple[int, ...]]) -> None:
    """Dissolve classes until the representatives are closed (module docstring)."""
    label = [{g: i for i, g in enumerate(k.groups)} for k in keys]
    checked: set[int] = set()
    while True:
        broken = set()
        for r in sorted(set(rep) - checked):
            for g in keys[r].groups:
                members = groups.get(g, ())
                inside = set(members)
                for m in members:
                    q = rep[m]
                    if q not in inside or label[q].get(g) != label[m].get(g):
                        broken.add(q)
            broken.update(rep[p] for p in keys[r].peers if 0 <= p < len(rep) and rep[p] != p)
            checked.add(r)
        broken = {q for q in broken if rep.count(q) > 1}
        if not broken:
            return
        for r in range(len(rep)):
            if rep[r] in broken:
                rep[r] = r
        checked -= broken
