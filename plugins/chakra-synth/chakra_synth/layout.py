"""The relations between ranks: the smallest tile of ranks that the set repeats, rank classes,
and each process group described relative to the rank that uses it, so that ranks alike up to
their groups are one class and a sample may have more or fewer data-parallel replicas (tiles)
with its groups rebuilt.

For a tile of ``t`` ranks, a rank at position ``p`` of tile ``k`` (rank ``k*t + p``) sees each
of its groups as the world (``w``), as positions of its own tile (``i:OFFSETS``) or as positions
of every tile (``x:OFFSETS``), the offsets taken from ``p`` modulo ``t``; a peer of a send or
receive is an offset in its own tile.  ``t`` is valid when every rank behaves like the rank at
its position in the first tile (same kinds, group references and peers), every send and receive
stays inside its tile, and every group has such a description; ``t`` equal to the number of
ranks always qualifies.  Positions that behave alike share a rank class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .profile import WORLD, RankProfile

__all__ = ["RankTiling", "find_tiling", "group_members", "WORLD_REF", "WORLD_NAME"]

WORLD_REF = "w"
#: the group name a sample gives the world (``pg_name`` "0" is every rank)
WORLD_NAME = "0"


@dataclass
class RankTiling:
    """``tile`` ranks per replica; ``classes[p]`` is the rank class at tile position ``p``;
    ``refs[rank][pg_name]`` the description of each group a source rank uses."""

    tile: int
    classes: list[int]
    refs: list[dict[str, str]]


def _group_ref(members: Sequence[int], rank: int, nranks: int, tile: int) -> str | None:
    """How ``rank`` sees the group ``members`` with ``tile``, or None when it cannot."""
    ms = set(members)
    if not ms or len(ms) == nranks:
        return WORLD_REF
    if rank not in ms:
        return None
    tiles = {m // tile for m in ms}
    pos = {m % tile for m in ms}
    if len(ms) != len(tiles) * len(pos):
        return None
    offsets = ",".join(str(x) for x in sorted((q - rank % tile) % tile for q in pos))
    if tiles == {rank // tile}:
        return f"i:{offsets}"
    if len(tiles) == nranks // tile:
        return f"x:{offsets}"
    return None


def group_members(ref: str, rank: int, tile: int, ranks: int) -> tuple[int, ...]:
    """The ranks of the group ``ref`` as rank ``rank`` of a set of ``ranks`` sees it."""
    if ref == WORLD_REF:
        return tuple(range(ranks))
    scope, _, joined = ref.partition(":")
    p, k = rank % tile, rank // tile
    pos = sorted((p + int(o)) % tile for o in joined.split(","))
    tiles = [k] if scope == "i" else range(ranks // tile)
    return tuple(sorted(t * tile + q for t in tiles for q in pos))


def peer_offset(peer: int, rank: int, tile: int) -> int:
    """A peer as an offset from ``rank``'s position in its tile."""
    return (peer % tile - rank % tile) % tile


def _signature(p: RankProfile, refs: Mapping[str, str], tile: int) -> tuple | None:
    peers = p.peer[p.peer >= 0]
    if ((peers // tile) != p.rank // tile).any():
        return None
    return (p.kind.tobytes(), tuple(refs[g] if g is not None else None for g in p.group),
            tuple(peer_offset(int(x), p.rank, tile) for x in peers.tolist()))


def find_tiling(profiles: Sequence[RankProfile], groups: Mapping[str, Sequence[int]]) -> RankTiling:
    """The smallest valid tile of the set (see the module docstring)."""
    nranks = len(profiles)
    for tile in (t for t in range(1, nranks + 1) if nranks % t == 0):
        refs = _refs(profiles, groups, tile)
        if refs is None:
            continue
        sigs = [_signature(p, r, tile) for p, r in zip(profiles, refs)]
        if all(s is not None for s in sigs) and all(sigs[r] == sigs[r % tile] for r in range(nranks)):
            first: dict[tuple, int] = {}
            classes = [first.setdefault(s, len(first)) for s in sigs[:tile]]  # type: ignore[arg-type]
            return RankTiling(tile, classes, refs)
    raise AssertionError("a tile of every rank always qualifies")


def _refs(profiles: Sequence[RankProfile], groups: Mapping[str, Sequence[int]],
          tile: int) -> list[dict[str, str]] | None:
    nranks = len(profiles)
    out = []
    for p in profiles:
        mine: dict[str, str] = {}
        for name in {g for g in p.group if g is not None}:
            members = range(nranks) if name == WORLD else (groups.get(name) or range(nranks))
            ref = _group_ref(list(members), p.rank, nranks, tile)
            if ref is None:
                return None
            mine[name] = ref
        out.append(mine)
    return out


class GroupNames:
    """Names of the groups of a sample: the world is ``"0"`` (not listed), the others ``"1"``,
    ``"2"``, ... in the order they are first asked for."""

    def __init__(self, tile: int, ranks: int):
        self.tile, self.ranks = tile, ranks
        self.groups: dict[str, list[int]] = {}
        self._by_members: dict[tuple[int, ...], str] = {}

    def name(self, ref: str, rank: int) -> str:
        """The ``pg_name`` of group ``ref`` for ``rank``."""
        members = group_members(ref, rank, self.tile, self.ranks)
        if len(members) == self.ranks:
            return WORLD_NAME
        name = self._by_members.get(members)
        if name is None:
            name = self._by_members[members] = str(len(self.groups) + 1)
            self.groups[name] = list(members)
        return name
