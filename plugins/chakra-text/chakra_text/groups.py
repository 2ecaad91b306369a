"""Which ranks each collective of a text workload involves: process groups and their names.

A collective has a *role*: ``ALL`` (every rank), ``MP`` (the rank's model-parallel group),
``DP`` (its data-parallel group), and in the transformer modes with SimAI's group suffixes
``EP`` (expert-parallel group) or ``DP_EP`` (data-parallel group within an expert).

With ``npus`` ranks and a model-parallel group size ``mp`` there are ``npus / mp``
model-parallel groups of ``mp`` ranks and ``mp`` data-parallel groups of ``dp = npus / mp``
ranks.  ASTRA-sim 1.0 puts the model-parallel dimension lowest for the transformer modes and
``HYBRID_DATA_MODEL`` (model-parallel groups are runs of consecutive ranks, data-parallel groups
are strided), and the data-parallel dimension lowest for ``HYBRID_MODEL_DATA`` (the other way
round).  Expert groups split each data-parallel group the way SimAI does: numbering the
model-parallel groups 0, 1, .., an ``EP`` group holds the same position of ``ep`` consecutive
model-parallel groups, a ``DP_EP`` group the same position of every ``ep``-th one.

Groups get decimal names from "1" in the order MP, DP, EP, DP_EP, each role's groups in order of
their lowest rank; a group with the same members as an earlier one reuses its name.  A role
whose group is every rank uses the default group (no ``pg_name``, nothing listed); a role whose
group is a single rank moves no data and its collectives are left out of the graph.
"""

from __future__ import annotations

__all__ = ["ALL", "MP", "DP", "EP", "DP_EP", "ROLE_OF_SUFFIX", "GroupLayout"]

ALL, MP, DP, EP, DP_EP = 0, 1, 2, 3, 4
#: group suffix of a comm type -> role
ROLE_OF_SUFFIX = {"EP": EP, "DP_EP": DP_EP}


class GroupLayout:
    """Process-group layout of ``npus`` ranks, model-parallel groups of ``mp`` ranks.

    ``mp_low``: model-parallel groups are consecutive ranks (else data-parallel groups are);
    ``ep``: expert-parallel group size (divides the data-parallel group size; ``mp_low`` only).
    """

    def __init__(self, npus: int, mp: int = 1, mp_low: bool = True, ep: int = 1):
        self.npus, self.mp, self.mp_low, self.ep = npus, mp, mp_low, ep
        self.dp = npus // mp
        self._names: dict[tuple[int, ...], str] | None = None

    def size(self, role: int) -> int:
        """Number of ranks in a group of ``role``."""
        return {ALL: self.npus, MP: self.mp, DP: self.dp, EP: self.ep, DP_EP: self.dp // self.ep}[role]

    def active(self, role: int) -> bool:
        """Whether collectives of ``role`` move data (their group has more than one rank)."""
        return self.size(role) > 1

    def members(self, role: int, rank: int) -> tuple[int, ...]:
        """The sorted ranks of ``rank``'s group of ``role``."""
        if role == ALL:
            return tuple(range(self.npus))
        if role in (MP, DP):
            size = self.size(role)
            count = self.npus // size
            if (role == MP) == self.mp_low:  # consecutive runs
                start = rank // size * size
                return tuple(range(start, start + size))
            return tuple(range(rank % count, self.npus, count))
        # expert groups: model-parallel group index g and position k of the rank
        g, k = divmod(rank, self.mp)
        if role == EP:
            first = g // self.ep * self.ep
            return tuple((first + t) * self.mp + k for t in range(self.ep))
        first = g % self.ep
        return tuple((first + t * self.ep) * self.mp + k for t in range(self.dp // self.ep))

    def _named_roles(self) -> list[int]:
        roles = [MP, DP] + ([EP, DP_EP] if self.mp_low else [])
        return [r for r in roles if 1 < self.size(r) < self.npus]

    def _name_table(self) -> dict[tuple[int, ...], str]:
        if self._names is None:
            names: dict[tuple[int, ...], str] = {}
            for role in self._named_roles():
                for rank in range(self.npus):
                    names.setdefault(self.members(role, rank), str(len(names) + 1))
            self._names = names
        return self._names

    def groups(self) -> dict[str, list[int]]:
        """``{pg_name: ranks}`` of every named group."""
        return {name: list(ranks) for ranks, name in self._name_table().items()}

    def pg_names(self, rank: int) -> dict[int, str]:
        """``{role: pg_name}`` of ``rank`` for the roles that have named groups."""
        table = self._name_table()
        return {role: table[self.members(role, rank)] for role in self._named_roles()}
