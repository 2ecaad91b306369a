"""Which ranks each collective of a text workload involves: process groups and their names.

A collective has a *role*: ``ALL`` (every rank), ``MP`` (the rank's model-parallel group) or
``DP`` (the rank's data-parallel group).  With ``npus`` ranks and a model-parallel group size
``mp`` there are ``npus / mp`` model-parallel groups of ``mp`` ranks and ``mp`` data-parallel
groups of ``npus / mp`` ranks.  ASTRA-sim 1.0 puts the model-parallel dimension lowest for the
transformer modes and ``HYBRID_DATA_MODEL`` (model-parallel groups are runs of consecutive
ranks, data-parallel groups are strided), and the data-parallel dimension lowest for
``HYBRID_MODEL_DATA`` (the other way round).

Groups get decimal names from "1": the model-parallel groups first, in order of their lowest
rank, then the data-parallel groups.  A role whose group is every rank uses the default group
(no ``pg_name``, nothing listed); a role whose group is a single rank moves no data and its
collectives are left out of the graph.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ALL", "MP", "DP", "Layout"]

ALL, MP, DP = 0, 1, 2


@dataclass(frozen=True)
class Layout:
    """Process-group layout of ``npus`` ranks with model-parallel groups of ``mp`` ranks.

    ``mp_low``: model-parallel groups are consecutive ranks (else data-parallel groups are).
    """

    npus: int
    mp: int = 1
    mp_low: bool = True

    @property
    def dp(self) -> int:
        """Size of a data-parallel group."""
        return self.npus // self.mp

    def size(self, role: int) -> int:
        """Number of ranks in a group of ``role``."""
        return {ALL: self.npus, MP: self.mp, DP: self.dp}[role]

    def active(self, role: int) -> bool:
        """Whether collectives of ``role`` move data (their group has more than one rank)."""
        return self.size(role) > 1

    def _named(self, role: int) -> bool:
        return role != ALL and 1 < self.size(role) < self.npus

    def _members(self, role: int) -> list[list[int]]:
        """The groups of ``role``, each a sorted rank list, ordered by lowest rank."""
        size = self.size(role)
        consecutive = (role == MP) == self.mp_low
        count = self.npus // size
        if consecutive:
            return [list(range(g * size, (g + 1) * size)) for g in range(count)]
        return [list(range(g, self.npus, count)) for g in range(count)]

    def groups(self) -> dict[str, list[int]]:
        """``{pg_name: ranks}`` of every named group (model-parallel first, then data-parallel)."""
        out: dict[str, list[int]] = {}
        for role in (MP, DP):
            if self._named(role):
                for ranks in self._members(role):
                    out[str(len(out) + 1)] = ranks
        return out

    def pg_names(self, rank: int) -> dict[int, str]:
        """``{role: pg_name}`` of ``rank`` for the roles that have named groups."""
        out: dict[int, str] = {}
        base = 0
        for role in (MP, DP):
            if not self._named(role):
                continue
            size = self.size(role)
            count = self.npus // size
            consecutive = (role == MP) == self.mp_low
            index = rank // size if consecutive else rank % count
            out[role] = str(base + index + 1)
            base += count
        return out
