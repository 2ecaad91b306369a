"""Rank order and process groups.

Megatron-LM's order (the default): tensor parallelism fastest, then context, data, pipeline:
``rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))``; expert parallelism lives
inside data parallelism: ``ep_rank = dp_rank % ep``.  Another order is a permutation of the four
dimensions, fastest first.

Groups (only those of two or more ranks exist): ``tp`` (vary tp_rank), ``cp`` (vary cp_rank),
``dp`` (the gradient group: vary dp_rank and cp_rank, since context-parallel ranks hold the same
parameters), ``ep`` (vary ep_rank within one block of ``ep`` consecutive dp ranks), ``edp``
(expert gradients: vary cp_rank and dp_rank // ep), ``emb`` (the first and last stage, for the
tied word embedding's gradient).  Group names are "1", "2", ... in that order of kinds, then by
the smallest member.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import Model

__all__ = ["ParallelLayout", "GROUP_KINDS"]

GROUP_KINDS = ("tp", "cp", "dp", "ep", "edp", "emb")


@dataclass
class ParallelLayout:
    """Coordinates, peers and groups of every rank of ``model``."""

    model: Model
    strides: dict[str, int] = field(init=False)
    #: kind -> rank -> group name
    group_of: dict[str, list[str]] = field(init=False)
    #: group name -> members (ascending)
    groups: dict[str, list[int]] = field(init=False)

    def __post_init__(self) -> None:
        m = self.model
        sizes = self.sizes
        stride, self.strides = 1, {}
        for d in m.order:
            self.strides[d] = stride
            stride *= sizes[d]
        self.group_of, self.groups = {}, {}
        for kind in GROUP_KINDS:
            self._add_kind(kind)

    @property
    def sizes(self) -> dict[str, int]:
        """Size of each dimension."""
        m = self.model
        return {"tp": m.tp, "cp": m.cp, "dp": m.dp, "pp": m.pp}

    def rank(self, tp: int, cp: int, dp: int, pp: int) -> int:
        """The rank at these coordinates."""
        s = self.strides
        return tp * s["tp"] + cp * s["cp"] + dp * s["dp"] + pp * s["pp"]

    def coords(self, rank: int) -> dict[str, int]:
        """``{"tp", "cp", "dp", "pp", "ep"}`` coordinates of ``rank``."""
        sizes = self.sizes
        out = {d: rank // self.strides[d] % sizes[d] for d in sizes}
        out["ep"] = out["dp"] % self.model.ep
        return out

    def peer(self, rank: int, delta: int) -> int:
        """The rank ``delta`` stages further along the pipeline (modulo pp), same other coordinates."""
        c = self.coords(rank)
        return self.rank(c["tp"], c["cp"], c["dp"], (c["pp"] + delta) % self.model.pp)

    def _key(self, kind: str, c: dict[str, int]) -> tuple | None:
        """What the members of a ``kind`` group share (None: the rank is in no such group)."""
        m = self.model
        if kind == "tp":
            return (c["cp"], c["dp"], c["pp"]) if m.tp > 1 else None
        if kind == "cp":
            return (c["tp"], c["dp"], c["pp"]) if m.cp > 1 else None
        if kind == "dp":
            return (c["tp"], c["pp"]) if m.dp * m.cp > 1 else None
        if kind == "ep":
            return (c["tp"], c["cp"], c["dp"] // m.ep, c["pp"]) if m.ep > 1 else None
        if kind == "edp":
            return (c["tp"], c["ep"], c["pp"]) if m.experts and m.cp * m.dp // m.ep > 1 else None
        if kind == "emb":
            return (c["tp"], c["cp"], c["dp"]) if m.pp > 1 and m.tie_embeddings and c["pp"] in (0, m.pp - 1) else None
        raise KeyError(kind)

    def _add_kind(self, kind: str) -> None:
        members: dict[tuple, list[int]] = {}
        of = [""] * self.model.ranks
        for r in range(self.model.ranks):
            key = self._key(kind, self.coords(r))
            if key is not None:
                members.setdefault(key, []).append(r)
        for ranks in sorted(members.values()):
            name = str(len(self.groups) + 1)
            self.groups[name] = ranks
            for r in ranks:
                of[r] = name
        self.group_of[kind] = of
