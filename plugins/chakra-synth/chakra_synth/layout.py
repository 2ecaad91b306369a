"""The relations between ranks: the smallest tile of ranks that the set repeats, rank classes,
and each process group described relative to a rank, so that a sample may have more or fewer
data-parallel replicas (tiles) with its groups rebuilt.

A tile of ``t`` ranks is valid when every rank behaves like the rank at its position in the
first tile (same kinds, same group references, same peers), every send and receive stays inside
its tile, and every process group is the world (``w``), a set of positions inside one tile
(``i:POSITIONS``) or a set of positions across every tile (``x:POSITIONS``).  ``t`` equal to
the number of ranks always qualifies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chakra_core import ConfigError

from .profile import WORLD, RankProfile

__all__ = ["Layout", "find_layout", "WORLD_REF"]

WORLD_REF = "w"
#: the group name a sample gives the world (``pg_name`` "0" is every rank)
WORLD_NAME = "0"


@dataclass
class Layout:
    """``tile`` ranks per replica; ``classes[p]`` is the rank class at tile position ``p``;
    ``refs[rank][pg_name]`` the relative description of each group a rank uses."""

    tile: int
    classes: list[int]
    refs: dict[str, str]

    def check_ranks(self, ranks: int) -> None:
        """Refuse a rank count that is not a whole number of tiles."""
        if ranks < 1 or ranks % self.tile:
            raise ConfigError(f"ranks={ranks}: the model repeats a tile of {self.tile} rank(s) "
                              f"(its data-parallel replica); give a multiple of {self.tile}")


def _group_ref(members: Sequence[int], nranks: int, tile: int) -> str | None:
    """The relative description of a group for ``tile``, or None when it has none."""
    if not members or len(set(members)) == nranks:
        return WORLD_REF
    tiles = sorted({m // tile for m in members})
    pos = sorted({m % tile for m in members})
    if len(set(members)) != len(tiles) * len(pos):
        return None
    joined = ",".join(map(str, pos))
    if len(tiles) == 1:
        return f"i:{joined}"
    if len(tiles) == nranks // tile:
        return f"x:{joined}"
    return None


def _signature(p: RankProfile, refs: Mapping[str, str], tile: int) -> tuple | None:
    base = (p.rank // tile) * tile
    peers = p.peer[p.peer >= 0]
    if ((peers // tile) * tile != base).any():
        return None
    return (p.kind.tobytes(), tuple(refs[g] if g is not None else None for g in p.group),
            ((p.peer[p.peer >= 0]) - base).tobytes())


def find_layout(profiles: Sequence[RankProfile], groups: Mapping[str, Sequence[int]]) -> Layout:
    """The smallest valid tile of the set (see the module docstring)."""
    nranks = len(profiles)
    used = {g for p in profiles for g in p.group if g is not None}
    for tile in (t for t in range(1, nranks + 1) if nranks % t == 0):
        refs: dict[str, str] = {}
        for name in used:
            members = list(range(nranks)) if name == WORLD else list(groups.get(name) or range(nranks))
            ref = _group_ref(members, nranks, tile)
            if ref is None:
                break
            refs[name] = ref
        else:
            sigs = [_signature(p, refs, tile) for p in profiles]
            if all(s is not None for s in sigs) and all(sigs[r] == sigs[r % tile] for r in range(nranks)):
                first: dict[tuple, int] = {}
                classes = [first.setdefault(s, len(first)) for s in sigs[:tile]]  # type: ignore[arg-type]
                return Layout(tile, classes, refs)
    raise AssertionError("a tile of every rank always qualifies")


def rank_groups(tile: int, ranks: int, refs: Sequence[str]) -> tuple[dict[str, list[int]], list[dict[str, str]]]:
    """The process groups of a sample of ``ranks`` ranks, and per rank ``{ref: pg_name}``.

    The world is ``"0"`` (not listed); the other groups are named ``"1"``, ``"2"``, ... in the
    order of ``refs`` (sorted) and tiles.
    """
    tiles = ranks // tile
    groups: dict[str, list[int]] = {}
    names: list[dict[str, str]] = [{WORLD_REF: WORLD_NAME} for _ in range(ranks)]
    for ref in sorted(set(refs) - {WORLD_REF}):
        scope, _, joined = ref.partition(":")
        pos = [int(x) for x in joined.split(",")]
        spans = [[k] for k in range(tiles)] if scope == "i" else [list(range(tiles))]
        for span in spans:
            members = sorted(k * tile + q for k in span for q in pos)
            if len(members) == ranks:
                name = WORLD_NAME
            else:
                name = str(len(groups) + 1)
                groups[name] = members
            for m in members:
                names[m][ref] = name
    return groups, names
