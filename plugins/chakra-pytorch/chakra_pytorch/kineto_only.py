"""Kineto traces alone (the PyTorch profiler's default output) as a lazily built TraceSet.

An input is Kineto-only when its JSON files hold Kineto traces and no host execution trace;
files that are neither are skipped with one warning.  One file per rank: the rank is the
trace's ``distributedInfo.rank``, else the rank in the file name (for a lone file only a clear
one, ``NAME.3.json`` or ``rank3``, else 0); the world size is ``distributedInfo.world_size``,
else the highest rank plus one.  The groups are ``distributedInfo.pg_config``'s.  Each rank is
converted by :func:`convert_kineto_rank` when its nodes are read.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from chakra_core import (
    GlobalMetadata,
    TraceFormatError,
    TraceSet,
    groups_by_rank,
    make_attr,
    with_process_groups,
)

from .groupmatch import SetMatch, has_subgroups
from .kineto import read_distributed_info, scan_process_pid
from .kineto_graph import KINETO_SCHEMA, convert_kineto_rank, kineto_host
from .lazyrank import LazyRank
from .outnode import ConvertedRank
from .schema_version import PyTorchTraceWarning
from .sniff import rank_in_name
from .stepstart import first_step_us, start_offsets_ns, with_start_offset

__all__ = ["KinetoRank", "find_kineto_ranks", "open_kineto_only"]


@dataclass
class KinetoRank:
    """One rank's Kineto trace and its ``distributedInfo`` ({} when it has none)."""

    rank: int
    path: str
    distributed: dict[str, Any]


def find_kineto_ranks(files: Sequence[str]) -> tuple[list[KinetoRank], int]:
    """Each Kineto trace's rank, sorted, and the world size (see the module docstring)."""
    ranks: dict[int, KinetoRank] = {}
    worlds = set()
    for f in files:
        info = read_distributed_info(f)
        r = info.get("rank")
        if not isinstance(r, int):
            r = rank_in_name(f, len(files) == 1, partial(scan_process_pid, f))  # a lone file: 0 at worst
        if r is None:
            raise TraceFormatError("cannot tell the rank: no distributedInfo.rank and no rank number in "
                                   "the name", f)
        if r in ranks:
            raise TraceFormatError(f"two Kineto traces claim rank {r} ({ranks[r].path} and {f})", f)
        ranks[r] = KinetoRank(r, f, info)
        if isinstance(info.get("world_size"), int):
            worlds.add(info["world_size"])
    if len(worlds) > 1:
        raise TraceFormatError(f"the traces disagree on the world size ({sorted(worlds)})", files[0])
    world = worlds.pop() if worlds else max(ranks) + 1
    for kr in ranks.values():
        if kr.rank >= world:
            raise TraceFormatError(f"rank {kr.rank} is outside the world of {world} ranks", kr.path)
    return [ranks[r] for r in sorted(ranks)], world


def _groups(ranks: Sequence[KinetoRank]) -> dict[str, list[int]]:
    """The explicit groups of ``distributedInfo.pg_config`` over all ranks."""
    out: dict[str, list[int]] = {}
    for kr in ranks:
        for g in kr.distributed.get("pg_config") or []:
            if isinstance(g, dict) and "pg_name" in g and isinstance(g.get("ranks"), list) and g["ranks"]:
                out.setdefault(str(g["pg_name"]), [int(r) for r in g["ranks"]])
    return out


def _metadata(kr: KinetoRank) -> GlobalMetadata:
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.extend([make_attr("source", "pytorch"), make_attr("schema", KINETO_SCHEMA),
                      make_attr("rank", kr.rank)])
    return meta


def open_kineto_only(files: Sequence[str], data_deps: bool = False, idle_gaps: bool = True,
                     min_idle_us: int = 10) -> TraceSet:
    """Open Kineto traces (one per rank) as a TraceSet; each rank is converted when read.
    ``data_deps`` cannot be honoured (Kineto has no tensor ids): it is ignored with a warning."""
    if data_deps:
        warnings.warn(f"{files[0]}: data_deps ignored: a Kineto trace has no tensor ids (only a host "
                      "execution trace gives data dependencies)", PyTorchTraceWarning, stacklevel=2)
    ranks, world = find_kineto_ranks(files)
    groups = _groups(ranks)
    listed = {k: v for k, v in groups.items() if k != "0"}
    match = None
    if has_subgroups(groups, world):
        hosts = {kr.rank: (lambda kr=kr: kineto_host(kr.path, world, kr.distributed)[0].ops) for kr in ranks}
        match = SetMatch(hosts, {**groups, "0": list(range(world))}, ranks[0].path)
    offsets = start_offsets_ns({kr.rank: first_step_us(kr.path) for kr in ranks} if len(ranks) > 1 else {})
    own = groups_by_rank(listed)  # each rank's metadata as it is written: its own groups
    out = []
    for kr in ranks:
        meta = with_process_groups(with_start_offset(_metadata(kr), offsets, kr.rank), own(kr.rank))
        out.append(LazyRank(kr.rank, meta, _factory(kr, world, groups, idle_gaps, min_idle_us, match),
                            path=kr.path))
    return TraceSet(out, process_groups=listed, source=ranks[0].path)


def _factory(kr: KinetoRank, world: int, groups: dict[str, list[int]], idle_gaps: bool, min_idle_us: int,
             match: SetMatch | None):
    def convert() -> ConvertedRank:
        """Convert the rank now."""
        return convert_kineto_rank(kr.path, kr.rank, world, groups, kr.distributed, idle_gaps,
                                   min_idle_us, match)
    return convert
