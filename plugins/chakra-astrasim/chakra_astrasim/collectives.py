"""How collective kinds that ASTRA-sim does not model are turned into kinds it does.

ASTRA-sim 2.x models ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER and ALL_TO_ALL; it only replays the
recorded duration of a BROADCAST, and aborts on REDUCE, GATHER, SCATTER, REDUCE_SCATTER_BLOCK and
BARRIER.  The chakra schema carries no root rank, so these kinds cannot become send/recv pairs;
each becomes one or two modelled collectives on the same group, chosen so that the data moved
per link matches a bandwidth-optimal algorithm for the original kind.  ``P`` is the number of
ranks in the collective's group, ``S`` the node's ``comm_size`` in bytes.
"""

from __future__ import annotations

from chakra_core import CommType

__all__ = ["MODELLED", "RULES", "rewrite"]

#: kinds ASTRA-sim's system layer runs as collectives.
MODELLED = frozenset({CommType.ALL_REDUCE, CommType.ALL_GATHER, CommType.REDUCE_SCATTER,
                      CommType.ALL_TO_ALL})

#: the documented rule of each rewritten kind (also printed in docs/astrasim.md and the report).
RULES: dict[CommType, str] = {
    CommType.REDUCE: "ALL_REDUCE of S bytes: a bandwidth-optimal reduce (reduce-scatter, then "
                     "gather to the root) moves the same bytes per link as a ring all-reduce",
    CommType.GATHER: "ALL_GATHER with S as the per-rank shard: a ring gather takes P-1 steps of "
                     "one shard, as a ring all-gather does",
    CommType.SCATTER: "ALL_GATHER with S as the per-rank piece: a ring scatter is a gather run "
                      "backwards, P-1 steps of one piece",
    CommType.REDUCE_SCATTER_BLOCK: "REDUCE_SCATTER of S bytes (the same operation with equal blocks)",
    CommType.BARRIER: "ALL_REDUCE of `barrier_bytes` bytes (default 4: PyTorch runs a barrier as "
                      "a one-element all-reduce)",
    CommType.BROADCAST: "kept when it has a duration (ASTRA-sim replays it), else two ALL_GATHERs "
                        "of ceil(S/P) bytes in sequence: a bandwidth-optimal broadcast is a scatter "
                        "of S/P pieces followed by an all-gather of them (option replay_broadcast "
                        "true/false forces one way)",
}


def rewrite(kind: CommType, size: int, group_size: int, barrier_bytes: int) -> list[tuple[CommType, int]]:
    """The modelled collectives ``[(kind, comm_size_bytes), ...]`` that replace one of ``kind``.

    Modelled kinds come back unchanged; see :data:`RULES` for the others.
    """
    if kind in MODELLED:
        return [(kind, size)]
    if kind in (CommType.REDUCE,):
        return [(CommType.ALL_REDUCE, size)]
    if kind in (CommType.GATHER, CommType.SCATTER):
        return [(CommType.ALL_GATHER, size)]
    if kind == CommType.REDUCE_SCATTER_BLOCK:
        return [(CommType.REDUCE_SCATTER, size)]
    if kind == CommType.BARRIER:
        return [(CommType.ALL_REDUCE, barrier_bytes)]
    if kind == CommType.BROADCAST:
        piece = -(-size // max(group_size, 1))
        return [(CommType.ALL_GATHER, piece), (CommType.ALL_GATHER, piece)]
    raise ValueError(f"unknown collective kind {kind!r}")
