"""The export plan: everything decided once for the whole set before the ranks are converted."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Plan"]


@dataclass
class Plan:
    """Per-set decisions that :func:`chakra_astrasim.workload.convert_rank` applies to every rank.

    ``group_map`` maps a trace ``pg_name`` to the ASTRA-sim group id written on collectives
    ("" = all ranks of the network); ``members`` maps each written id ("" included) to its
    ranks; ``world_pg`` is the id given to collectives whose ``pg_name`` is absent, "" or "0".
    ``peak_perf`` (TFLOPS) is what a duration is encoded against when ``roofline`` is on, and
    with ``local_mem_bw`` (GB/s) what a kept ``num_ops`` is timed with;
    ``splits`` is the ``preferred-dataset-splits`` written (all-gathers are at least that large).
    """

    npus: int
    ndims: int
    group_map: dict[str, str]
    members: dict[str, frozenset[int]]
    world_pg: str = ""
    cpu_ops: str = "drop_zero"
    keep_memory: bool = True
    unsupported: str = "rewrite"
    replay_broadcast: bool | None = None  # None: replay when the node has a duration
    barrier_bytes: int = 4
    incomplete_p2p: str = "drop"
    roofline: bool = False
    keep_num_ops: bool = False
    peak_perf: float = 1.0
    local_mem_bw: float = 50.0
    duration_attr: str = "duration_ns"
    join_limit: int = 16
    splits: int = 4
