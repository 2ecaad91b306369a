"""Map the trace set's process groups onto ASTRA-sim communicator groups (ids from 1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chakra_core import ConfigError

from .report import ExportReport

__all__ = ["GroupPlan", "plan_groups"]


@dataclass
class GroupPlan:
    """``group_map``: trace pg_name -> written id ("" = all ranks); ``members``: written id ->
    ranks (also for "" and for one-rank groups, which are never written); ``written``: the
    ``groups.json`` content; ``world_pg``: the id for collectives on all trace ranks."""

    group_map: dict[str, str]
    members: dict[str, frozenset[int]]
    written: dict[str, list[int]]
    world_pg: str


def _key(name: str) -> tuple:
    return (0, int(name), name) if name.isdigit() else (1, 0, name)


def plan_groups(trace_groups: Mapping[str, Sequence[int]], user_groups: Mapping[str, Sequence[int]],
                npus: int, trace_ranks: Sequence[int], report: ExportReport) -> GroupPlan:
    """Number the groups from 1 in the order of their names (numeric names first).

    Groups given in the system description's comm-groups file add to the trace's and replace a
    trace group of the same name (reported).  A group of every network rank becomes "" (all
    ranks: ASTRA-sim then runs its multi-dimensional algorithms instead of one logical ring).
    When the trace covers fewer ranks than the network, collectives on "all ranks" get a group
    of the trace's ranks, so that the padded ranks are not waited for.  Names with the same
    members share one id (``groups.json`` lists each member list once).
    """
    merged = {str(k): list(v) for k, v in trace_groups.items()}
    for k, v in user_groups.items():
        k = str(k)
        if k in merged and sorted(merged[k]) != sorted(v):
            report.configs.append(f"process group {k!r}: ranks from the comm-groups file {list(v)} "
                                  f"replace the trace's {merged[k]}")
        merged[k] = list(v)
    full = frozenset(range(npus))
    members: dict[str, frozenset[int]] = {"": full}
    group_map: dict[str, str] = {}
    written: dict[str, list[int]] = {}

    def add(ranks: list[int]) -> str:
        for gid, there in written.items():  # one id per member list: names with the same ranks share it
            if there == sorted(ranks):
                return gid
        gid = str(len(written) + 1)
        written[gid] = sorted(ranks)
        members[gid] = frozenset(ranks)
        return gid

    for name in sorted((k for k in merged if k not in ("", "0")), key=_key):
        ranks = merged[name]
        bad = [r for r in ranks if not 0 <= r < npus]
        if bad:
            raise ConfigError(f"process group {name!r} names rank {bad[0]}, but the network has {npus} NPUs")
        if len(set(ranks)) != len(ranks):
            raise ConfigError(f"process group {name!r} lists a rank twice: {ranks}")
        if frozenset(ranks) == full:
            group_map[name] = ""
        elif len(ranks) < 2:
            group_map[name] = f"<one rank: {name}>"
            members[group_map[name]] = frozenset(ranks)
        else:
            group_map[name] = add(ranks)
        report.groups[name] = group_map[name] if len(ranks) >= 2 else "(one rank: not written)"
    world_pg = ""
    if frozenset(trace_ranks) != full:
        ranks = sorted(trace_ranks)
        if len(ranks) >= 2:
            world_pg = add(ranks)
            report.configs.append(f"the trace has {len(ranks)} of the network's {npus} ranks: its "
                                  f"all-rank collectives use group {world_pg} (its ranks)")
        else:
            world_pg = "<one rank: world>"
            members[world_pg] = frozenset(ranks)
        report.groups["(all trace ranks)"] = world_pg if len(ranks) >= 2 else "(one rank: not written)"
    return GroupPlan(group_map, members, written, world_pg)
