"""Which ranks each collective of a text workload involves: process groups and their names.

A collective has a *role*: ``ALL`` (every rank), ``MP`` (the rank's model-parallel group),
``DP`` (its data-parallel group), and in the transformer modes with SimAI's group suffixes
``EP`` (expert-parallel group) or ``DP_EP`` (data-parallel group within an expert).

With ``npus`` ranks, a model-parallel group size ``mp`` and ``pp`` pipeline stages there are
``npus / mp`` model-parallel groups of ``mp`` ranks and ``mp * pp`` data-parallel groups of
``dp = npus / (mp * pp)`` ranks.  ASTRA-sim 1.0 puts the model-parallel dimension lowest for the
transformer modes and ``HYBRID_DATA_MODEL`` (model-parallel groups are runs of consecutive ranks,
data-parallel groups are strided), and the data-parallel dimension lowest for
``HYBRID_MODEL_DATA`` (the other way round, one stage only).  With stages, a rank is
``tp + mp * (stage + pp * d)`` (SimAI's MockNcclGroup: data-parallel groups strided by
``mp * pp``), so each stage's ranks form their own data-parallel and expert groups.  Expert groups
split each data-parallel group the way SimAI does at one stage (with stages, SimAI's cross them;
ours stay inside a stage): numbering a stage's model-parallel groups by
``d``, an ``EP`` group holds the same position of ``ep`` consecutive ones, a ``DP_EP`` group the
same position of every ``ep``-th one.

Groups get decimal names from "1" in the order MP, DP, EP, DP_EP, each role's groups in order of
their lowest rank; a group with the same members as an earlier one reuses its name (an ``EP``
group is the ``DP`` group when ``ep = dp``, a ``DP_EP`` group when ``ep = 1``).  A role whose
group is every rank uses the default group (no ``pg_name``, nothing listed); a role whose group
is a single rank moves no data and its collectives are left out of the graph.  Every name and
member list is found arithmetically from the rank, so a layout costs time linear in ``npus``.
"""

from __future__ import annotations

__all__ = ["ALL", "MP", "DP", "EP", "DP_EP", "ROLE_OF_SUFFIX", "GroupLayout"]

ALL, MP, DP, EP, DP_EP = 0, 1, 2, 3, 4
#: group suffix of a comm type -> role
ROLE_OF_SUFFIX = {"EP": EP, "DP_EP": DP_EP}


class GroupLayout:
    """Process-group layout of ``npus`` ranks, model-parallel groups of ``mp`` ranks.

    ``mp_low``: model-parallel groups are consecutive ranks (else data-parallel groups are);
    ``ep``: expert-parallel group size (divides the data-parallel group size; ``mp_low`` only);
    ``pp``: pipeline stages (``mp * pp`` divides ``npus``; ``mp_low`` only).
    """

    def __init__(self, npus: int, mp: int = 1, mp_low: bool = True, ep: int = 1, pp: int = 1):
        if pp > 1 and not mp_low:
            raise ValueError("pipeline stages need model-parallel groups of consecutive ranks (mp_low)")
        self.npus, self.mp, self.mp_low, self.ep, self.pp = npus, mp, mp_low, ep, pp
        self.dp = npus // (mp * pp)
        self._stride = mp * pp  # ranks between two members of a data-parallel group (mp_low)
        self._first = self._first_names()

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
        if role == MP:
            return self._run(rank, self.mp) if self.mp_low else self._strided(rank, self.dp)
        if role == DP:
            return self._strided(rank, self._stride) if self.mp_low else self._run(rank, self.dp)
        base, d = rank % self._stride, rank // self._stride  # position in the stage, data-parallel index
        if role == EP:
            first = d // self.ep * self.ep
            return tuple(base + (first + t) * self._stride for t in range(self.ep))
        return tuple(base + (d % self.ep + t * self.ep) * self._stride for t in range(self.dp // self.ep))

    @staticmethod
    def _run(rank: int, size: int) -> tuple[int, ...]:
        """The ``size`` consecutive ranks around ``rank``."""
        start = rank // size * size
        return tuple(range(start, start + size))

    def _strided(self, rank: int, stride: int) -> tuple[int, ...]:
        """The ranks ``stride`` apart through ``rank``."""
        return tuple(range(rank % stride, self.npus, stride))

    def _index(self, role: int, rank: int) -> int:
        """Position of ``rank``'s group of ``role`` among that role's groups, by lowest rank."""
        if role == MP:
            return rank // self.mp if self.mp_low else rank % self.dp
        if role == DP:
            return rank % self._stride if self.mp_low else rank // self.dp
        base, d = rank % self._stride, rank // self._stride
        return (d // self.ep if role == EP else d % self.ep) * self._stride + base

    def _named_roles(self) -> list[int]:
        roles = [MP, DP] + ([EP, DP_EP] if self.mp_low else [])
        return [r for r in roles if 1 < self.size(r) < self.npus]

    def _same_as(self, role: int) -> int:
        """The role whose groups ``role``'s groups are: DP for an expert role of DP's size."""
        return DP if role in (EP, DP_EP) and self.size(role) == self.dp else role

    def _first_names(self) -> dict[int, int]:
        """``{role: number of the name of its first group, less one}`` of the named roles."""
        first: dict[int, int] = {}
        taken = 0
        for role in self._named_roles():
            if self._same_as(role) == role:
                first[role] = taken
                taken += self.npus // self.size(role)
        return first

    def pg_name(self, role: int, rank: int) -> str:
        """The ``pg_name`` of ``rank``'s group of ``role`` (a role with named groups)."""
        role = self._same_as(role)
        return str(self._first[role] + self._index(role, rank) + 1)

    def groups(self) -> dict[str, list[int]]:
        """``{pg_name: ranks}`` of every named group."""
        out: dict[str, list[int]] = {}
        for role in self._first:
            for rank in range(self.npus):
                name = self.pg_name(role, rank)
                if name not in out:
                    out[name] = list(self.members(role, rank))
        return out

    def pg_names(self, rank: int) -> dict[int, str]:
        """``{role: pg_name}`` of ``rank`` for the roles that have named groups."""
        return {role: self.pg_name(role, rank) for role in self._named_roles()}
