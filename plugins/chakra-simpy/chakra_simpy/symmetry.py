"""Symmetry by role: ranks that the simulation would time alike are simulated once.

Two ranks are in one class when their traces are equal up to a consistent relabelling of their
process groups and peers (:func:`chakra_core.role_key`, from the serialized nodes, before any
Program is built) and every relabelled group and peer is timed alike: a group of the same size
whose ring links are all the same kind (so that all its members finish together), a peer on the
same dimension at the same hop count.  Without congestion, a group's ring only times its
collectives (each link by its latency, bandwidth and hops), so a group whose links differ is
seen from each member as their kinds around the ring from that member on: two ranks at the same
place of such rings (the model-parallel groups of consecutive ranks on a ring network, the
longer link closing each) are timed alike too.  The ranks of a class must also see the same
classes around them, each with the same part: in each of their groups (but the whole set's,
whose every member is simulated), the members' classes from their own place on, each with the
label it gives the group; at each of their peers, its class and the label it gives them.
Classes are split until they do.  The lowest rank of a class stands for it (its
representative) and runs its own trace, with its own groups and peers; for that to be the
simulation of every rank of the class, the representatives must be closed: each member of a
group a representative issues on is stood for by a representative in that group that names the
group as that member does, and each peer of a representative is a representative.  Classes that
break this are dissolved into single ranks until it holds.

Congestion-aware runs relabel nothing (ranks share links per rank, so only ranks with identical
traces and no point-to-point messages, whose groups are the whole set's or of one rank, are merged).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import count
from typing import NamedTuple

from chakra_core import Progress, RoleKey, TraceSet, keys_compiled_worthwhile, role_keys

from .planner import Planner

__all__ = ["role_classes", "KEYS_COMPILED_FROM"]

#: the role keys of a set whose .et files of 16 KiB or more hold at least this many bytes are taken
#: by compiled loops (:func:`chakra_core.keys_compiled_worthwhile`; as Python 55-110 ms a MB of a
#: set of collectives, against about 0.35 s to load numba, which the programs of such a set
#: mostly load anyway: 0.35 s less for GPT-3-like x 16 on a Ring, 3.4 MB)
KEYS_COMPILED_FROM = 2 << 20


def role_classes(traces: TraceSet, planner: Planner, groups: dict[str, tuple[int, ...]],
                 aware: bool, bar: Progress, jobs: int = 0) -> tuple[list[list[int]], dict[str, str]]:
    """Classes of ranks (each ascending, its representative first), in representative order,
    and the group each group a rank names stands for: the one its representative names in its
    place (the role keys by compiled loops when the set's .et files of 16 KiB or more hold
    :data:`KEYS_COMPILED_FROM` bytes or more, or numba is loaded already; on ``jobs`` threads, 0: as
    :func:`chakra_core.role_keys` chooses)."""
    n = len(traces)
    keys: list[RoleKey] = []
    compile_it = keys_compiled_worthwhile(traces, traces.ranks, KEYS_COMPILED_FROM)
    for _, get in role_keys(traces, compile_it, jobs or None):
        keys.append(get())
        bar.advance()
    label = [{g: i for i, g in enumerate(k.groups)} for k in keys]
    around = _Neighbours(keys, groups, label)
    signature = _Signatures(planner, groups, n, aware, around.place)
    rep = _partition([_class_key(r, k, signature, aware) for r, k in enumerate(keys)])
    while True:
        rep = around.refine(rep)
        if not _close(rep, keys, groups, label):
            break
    classes: dict[int, list[int]] = {}
    stands_for: dict[str, str] = {}
    for r in range(n):
        classes.setdefault(rep[r], []).append(r)
        stands_for.update(zip(keys[r].groups, keys[rep[r]].groups))
    return list(classes.values()), stands_for


#: the signatures of the whole set's group and of a group of one rank (:meth:`_Signatures.group`)
_WHOLE_SET, _ONE_RANK = ("all",), (1,)
#: the group signatures under which congestion-aware runs merge ranks: the whole set's, whose
#: every member's messages are run, and a group of one, which sends nothing (the members of
#: another group share its links with other traffic each in their own way)
_OPEN = (_WHOLE_SET, _ONE_RANK)


class _UnevenRing(NamedTuple):
    """A group's ring whose links differ: the kind of the link into each member, by place."""

    kinds: tuple[tuple[int, float, int], ...]
    place: dict[int, int]

    def seen_from(self, rank: int) -> tuple:
        """The kinds of the ring's links from ``rank``'s on: equal for members timed alike."""
        j = self.place[rank]
        return ("from", *self.kinds[j:], *self.kinds[:j])


class _Signatures:
    """What the timing of a group or a peer depends on, seen from one rank (None: unique)."""

    def __init__(self, planner: Planner, groups: dict[str, tuple[int, ...]], n: int, aware: bool,
                 place: dict[str, dict[int, int]]):
        self.planner = planner
        self.groups = groups
        self.n = n
        self.aware = aware
        #: each member's place in each group named of more than one rank and fewer than all
        self.place = place
        #: per group: its signature when every member sees the same, else its ring as each sees it
        self._cache: dict[str, tuple | _UnevenRing | None] = {}

    def group(self, name: str, rank: int) -> tuple | None:
        members = self.groups.get(name)
        if members is None or rank not in members:
            return None  # the engine names the error
        if name not in self._cache:
            self._cache[name] = self._ring(name, members)
        got = self._cache[name]
        return got.seen_from(rank) if isinstance(got, _UnevenRing) else got

    def _ring(self, name: str, members: Sequence[int]) -> tuple | _UnevenRing | None:
        if len(members) == self.n:
            return _WHOLE_SET
        if len(members) == 1:  # a group of one sends nothing
            return _ONE_RANK
        kinds = []
        for j in range(len(members)):
            dim, hops = self.planner.hop(members[j - 1], members[j])
            kinds.append((dim.latency, dim.bytes_per_ns, hops))
        if len(set(kinds)) == 1:
            return (len(members), kinds[0])
        if self.aware:  # links shared with other traffic: the member's place is not enough
            return None
        return _UnevenRing(tuple(kinds), self.place[name])

    def peer(self, rank: int, peer: int) -> tuple | None:
        if not 0 <= peer < self.n or peer == rank:
            return None
        dim, hops = self.planner.hop(rank, peer)
        return dim.latency, dim.bytes_per_ns, hops


def _class_key(rank: int, key: RoleKey, sig: _Signatures, aware: bool) -> tuple:
    """The class a rank belongs to; a key holding the rank itself keeps it alone."""
    groups = tuple(sig.group(g, rank) for g in key.groups)
    peers = tuple(sig.peer(rank, p) for p in key.peers)
    if None in groups or None in peers or (aware and (key.peers or any(g not in _OPEN for g in groups))):
        return ("alone", rank)
    return (key.digest, key.groups) if aware else (key.digest, groups, peers)


def _partition(keys: Sequence) -> list[int]:
    """Each rank's representative: the lowest rank with its key."""
    first: dict = {}
    return [first.setdefault(k, r) for r, k in enumerate(keys)]


class _Neighbours:
    """The classes around each rank: in each of its groups from its own place on, each member
    with the label it gives the group, and at each of its peers, with the label the peer gives
    it (module docstring); ``label[r]``: rank r's label of each group it names."""

    def __init__(self, keys: list[RoleKey], groups: dict[str, tuple[int, ...]], label: list[dict[str, int]]):
        self.keys = keys
        self.label = label
        n = len(keys)
        #: the groups whose members the simulation may leave out: all but the whole set's, whose
        #: every member is simulated (the engine then checks that ranks simulated as one finish
        #: together)
        named = {g for k in keys for g in k.groups}
        self.groups = {g: m for g, m in groups.items() if 1 < len(m) < n and g in named}
        self.place = {g: {r: j for j, r in enumerate(m)} for g, m in self.groups.items()}
        self.peer_label = [{p: i for i, p in enumerate(k.peers)} for k in keys]
        #: what a rank's class is seen by: the groups of :attr:`groups` it is in, the ranks
        #: naming each such group, and the ranks naming it as a peer
        self.groups_of: list[list[str]] = [[] for _ in range(n)]
        for g, members in self.groups.items():
            for m in set(members):
                if 0 <= m < n:
                    self.groups_of[m].append(g)
        self.namers: dict[str, list[int]] = {g: [] for g in self.groups}
        self.peer_namers: list[list[int]] = [[] for _ in range(n)]
        for r, key in enumerate(keys):
            for g in key.groups:
                if g in self.namers:
                    self.namers[g].append(r)
            for p in set(key.peers):
                if 0 <= p < n:
                    self.peer_namers[p].append(r)

    def refine(self, rep: list[int]) -> list[int]:
        """Split the classes of ``rep`` until the ranks of each see the same classes around them
        (the coarsest such split, which is unique); each rank's representative, the lowest rank
        of its class.  Round by round, only the ranks that see a class that changed in the last
        round are looked at again (at first, every rank): the others see what they saw, which
        is what their class saw, so a chain of groups costs a few ranks a round, not the set."""
        ids = list(rep)
        classes: dict[int, set[int]] = {}
        for r, c in enumerate(ids):
            classes.setdefault(c, set()).add(r)
        dirty = set(range(len(ids)))
        fresh = count(max(max(classes, default=0), len(ids) - 1) + 1)  # new class ids
        while dirty:
            moved = self._split(ids, classes, dirty, fresh)
            dirty = set(moved)
            for r in moved:
                dirty.update(self.peer_namers[r])
            for g in {g for r in moved for g in self.groups_of[r]}:
                dirty.update(self.namers[g])
        lowest = {c: min(members) for c, members in classes.items()}
        return [lowest[c] for c in ids]

    def _split(self, ids: list[int], classes: dict[int, set[int]], dirty: set[int], fresh: Iterator[int]) -> list[int]:
        """One round: split each class by what its ``dirty`` ranks see now (its other ranks see
        what one of them sees); the ranks given a new class (its id drawn from ``fresh``)."""
        seen: dict[str, tuple[list, bool]] = {}
        by_class: dict[int, list[int]] = {}
        for r in sorted(dirty):
            if len(classes[ids[r]]) > 1:
                by_class.setdefault(ids[r], []).append(r)
        parts_of = []
        for c, looked in by_class.items():
            members = classes[c]
            parts: dict[tuple, list[int]] = {}
            if len(looked) < len(members):  # the ranks not looked at see what any one of them sees
                rest = next(m for m in members if m not in dirty)  # few are looked at, or all
                parts[self._sees(ids, seen, rest)] = []
            for r in looked:
                parts.setdefault(self._sees(ids, seen, r), []).append(r)
            if len(parts) > 1:
                pieces = list(parts.values())
                # the part of the ranks not looked at keeps the id, else the largest part
                parts_of.append((c, pieces, pieces[0] if len(looked) < len(members) else max(pieces, key=len)))
        moved: list[int] = []
        for c, pieces, keep in parts_of:
            for part in pieces:
                if part is keep:
                    continue
                new = next(fresh)
                for r in part:
                    ids[r] = new
                classes[new] = set(part)
                classes[c].difference_update(part)
                moved.extend(part)
        return moved

    def _sees(self, ids: list[int], seen: dict[str, tuple[list, bool]], r: int) -> tuple:
        """What rank ``r`` sees around it under the classes ``ids`` (``seen``: each group's
        members as :meth:`_members` gives them, filled as asked)."""
        key = self.keys[r]
        n = len(ids)
        return (ids[r], tuple(self._around(ids, seen, g, r) for g in key.groups),
                tuple((ids[p], self.peer_label[p].get(r)) if 0 <= p < n else -1 for p in key.peers))

    def _members(self, ids: list[int], g: str) -> tuple[list, bool]:
        """The class of each member of group ``g`` with its label of ``g``, by place; whether all
        are alike."""
        seen = [(ids[m], self.label[m].get(g)) for m in self.groups[g]]
        return seen, seen.count(seen[0]) == len(seen)

    def _around(self, ids: list[int], seen: dict[str, tuple[list, bool]], g: str, rank: int) -> tuple:
        if g not in self.groups:
            return ()
        got = seen.get(g)
        if got is None:
            got = seen[g] = self._members(ids, g)
        members, alike = got
        if alike:
            return (members[0],)
        j = self.place[g].get(rank)
        if j is None:  # a rank naming a group it is not in is alone (the engine names the error)
            return ()
        return (*members[j:], *members[:j])


def _close(rep: list[int], keys: list[RoleKey], groups: dict[str, tuple[int, ...]],
           label: list[dict[str, int]]) -> bool:
    """Dissolve classes until the representatives are closed (module docstring); True when it
    dissolved any."""
    checked: set[int] = set()
    dissolved = False
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
            return dissolved
        dissolved = True
        for r in range(len(rep)):
            if rep[r] in broken:
                rep[r] = r
        checked -= broken
