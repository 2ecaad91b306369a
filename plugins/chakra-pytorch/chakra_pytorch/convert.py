"""Convert PyTorch traces (host ET + optional Kineto per rank) to a lazily built TraceSet."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chakra_core import (
    GlobalMetadata,
    TraceFormatError,
    TraceSet,
    expand_paths,
    groups_by_rank,
    make_attr,
    with_process_groups,
)

from .extlink import link_host_ops
from .graph import ConvertedRank, build_graph
from .groupmatch import SetMatch, has_subgroups
from .hostet import HostTrace, read_header, read_host_et, scan_groups, schema_of
from .hostrank import TraceRank, scan_rank
from .ints import MAX_RANKS
from .kineto import KinetoTrace, read_distributed_info, read_kineto, scan_process_pid
from .lazyrank import LazyRank
from .nogc import cycle_collection_off
from .schema_version import PyTorchTraceWarning, check_schema
from .sniff import JSON_SUFFIXES, classify_files, is_linked, kineto_only_paths, rank_from_name, rank_in_name
from .stepstart import first_step_us, start_offsets_ns, with_start_offset

__all__ = ["RankFiles", "find_rank_files", "convert_rank", "open_pytorch"]


@dataclass
class RankFiles:
    """The files of one rank: its host ET and, optionally, its Kineto trace; what was read of
    them to sort and describe the set (the Kineto trace's ``distributedInfo``, the host ET's
    header) is kept, so that the conversion does not read it again."""

    rank: int
    host: str
    kineto: str | None = None
    distributed: dict[str, Any] | None = None
    header: dict[str, Any] | None = None


def find_rank_files(paths: Sequence[str]) -> tuple[list[RankFiles], dict[str, Any]]:
    """Sort ``paths`` (files or directories) into per-rank (host ET, Kineto) pairs.

    Every JSON file is looked at; those that are neither a host ET nor a Kineto trace are
    skipped with one warning naming them.  A file's rank is what the trace says first (a Kineto
    trace's ``distributedInfo.rank``, a host ET's ``record_param_comms`` rank; a host ET that says
    neither and whose name has no clear rank, ``rankN`` or ``NAME.N.json``, takes the rank of the
    Kineto trace its own process recorded, the same pid), else the rank in its name (see
    :func:`rank_in_name`: a number that is the file's pid is not one, the last number of a name
    without a clear rank is taken with a warning); a name that clearly says another rank than
    the trace is overruled, with a warning.  A lone host ET with at
    most one Kineto trace takes the Kineto trace's rank, else its own, else a rank clearly in
    its name (``NAME.3.json``, ``rank3``), else 0.  Two files claiming one rank, or a rank
    outside the world size, are a :class:`TraceFormatError`.
    Returns the pairs and the first ``distributedInfo`` seen.
    """
    files = expand_paths(paths, JSON_SUFFIXES, required=".json or .json.gz files")
    if not files:
        raise TraceFormatError("no .json or .json.gz files", None)
    kinds = classify_files(files)
    kinds.refuse_empty()
    note = kinds.skipped_note()
    if note is not None:
        warnings.warn(f"{os.path.dirname(kinds.others[0]) or '.'}: {note}", PyTorchTraceWarning, stacklevel=2)
    if not kinds.any_trace:
        raise TraceFormatError("neither a PyTorch execution trace nor a Kineto trace", files[0])
    if kinds.kineto_only:
        raise TraceFormatError("no host execution trace among the inputs (a Kineto trace alone is "
                               "not enough)", kinds.kinetos[0])
    hosts, kinetos = kinds.hosts, kinds.kinetos
    infos = {k: read_distributed_info(k) for k in kinetos}
    dist = next((i for i in infos.values() if i), {})
    if len(hosts) == 1 and len(kinetos) <= 1:
        first = scan_rank(hosts[0])
        rf = _single_rank(hosts[0], first, kinetos[0] if kinetos else None, dist)
        _check_world([rf], _world_of(dist, hosts[0], first))
        return [rf], dist
    by_rank: dict[int, RankFiles] = {}
    told = {h: scan_rank(h) for h in hosts}
    host_pids = {h: pid for h in hosts if told[h] is None and type(pid := read_header(h).get("pid")) is int}
    unnamed = [h for h, pid in host_pids.items() if rank_from_name(h, strict=True) in (None, pid)]
    kineto_pids = {k: scan_process_pid(k) for k in kinetos} if unnamed else {}
    _ranks_by_process(unnamed, host_pids, told, kineto_pids, infos)
    for h in hosts:
        r = _claimed_rank(h, told[h], lone=False, pid=host_pids.get(h))
        if r in by_rank:
            raise TraceFormatError(f"two host traces claim rank {r} ({by_rank[r].host} and {h})", h)
        by_rank[r] = RankFiles(r, h)
    for k in kinetos:
        info = infos[k]
        said = info.get("rank")
        if k not in kineto_pids and rank_from_name(k, strict=True) not in (None, said):  # perhaps its pid
            kineto_pids[k] = scan_process_pid(k)
        r = _claimed_rank(k, TraceRank(said, None, "distributedInfo.rank") if isinstance(said, int) else None,
                          lone=False, pid=kineto_pids.get(k))
        if r not in by_rank:
            raise TraceFormatError(f"Kineto trace of rank {r} has no host execution trace", k)
        if by_rank[r].kineto is not None:
            raise TraceFormatError(f"two Kineto traces claim rank {r} ({by_rank[r].kineto} and {k})", k)
        by_rank[r].kineto, by_rank[r].distributed = k, info
    out = [by_rank[r] for r in sorted(by_rank)]
    _check_world(out, _world_of(dist, hosts[0], told[hosts[0]]))
    return out, dist


def _ranks_by_process(hosts: list[str], pids: dict[str, int], told: dict[str, TraceRank | None],
                      kineto_pids: dict[str, int | None], infos: dict[str, dict[str, Any]]) -> None:
    """Set in ``told`` the rank of each host ET of ``hosts`` (whose trace does not say its rank
    and whose name has no clear rank) to that of the Kineto trace its own process
    recorded: the one Kineto trace that says its rank (``infos``) and whose process
    (``kineto_pids``) is the host ET's (``pids``); processes on other machines may share a pid,
    so a pid of two such Kineto traces pairs nothing."""
    by_pid: dict[int, int | None] = {}
    for k, pid in kineto_pids.items():
        said = infos[k].get("rank")
        if pid is not None and isinstance(said, int):
            by_pid[pid] = None if pid in by_pid else said
    for h in hosts:
        rank = by_pid.get(pids[h])
        if rank is not None:
            told[h] = TraceRank(rank, None, f"the Kineto trace of its process, pid {pids[h]}")


def _single_rank(host: str, own: TraceRank | None, kineto: str | None, dist: dict[str, Any]) -> RankFiles:
    """The files of a one-rank input: the Kineto trace's rank, else the host ET's ``own``, else
    a rank clearly in the host ET's name, else 0."""
    told = dist.get("rank") if kineto is not None else None
    if isinstance(told, int):
        r = told
    else:
        r = _claimed_rank(host, own, lone=True)
    return RankFiles(r, host, kineto, dist if kineto else None)


def _claimed_rank(path: str, told: TraceRank | None, lone: bool, pid: int | None = None) -> int:
    """The rank of one file: what the trace says (``told``), else its name (:func:`rank_in_name`:
    a rank assumed from a number that is not clearly one is said in a warning); a name that
    clearly says another rank than the trace is overruled with a warning.  A lone file reads only a rank
    that is clearly one in its name (``NAME.3.json``, ``rank3``) and is rank 0 without either;
    in a set, a file without either is a :class:`TraceFormatError`.  A number in the name that
    is the ``pid`` of the process that recorded the file is not a rank, nor is one above
    :data:`MAX_RANKS` (a millisecond timestamp, see :func:`rank_from_name`)."""
    if told is None:
        assumed = rank_in_name(path, lone, lambda: pid)
        if assumed is None:
            raise TraceFormatError("cannot tell the rank: the trace does not say it and the name has no "
                                   f"rank number (at most {MAX_RANKS}; put it in the name)", path)
        return assumed
    named = rank_from_name(path, strict=True, pid=lambda: pid)
    if named is not None and named != told.rank:
        warnings.warn(f"{path}: the trace says rank {told.rank} ({told.source}); the number {named} in the "
                      "file name is not taken for the rank", PyTorchTraceWarning, stacklevel=3)
    return told.rank


def _world_of(dist: dict[str, Any], host: str, told: TraceRank | None) -> tuple[int, str] | None:
    """The world size and where it was read: Kineto's ``distributedInfo.world_size``, else the
    default process group of a host ET (its ``record_param_comms``, ``told``, or its pg-init
    node)."""
    if isinstance(dist.get("world_size"), int):
        return dist["world_size"], "distributedInfo.world_size"
    if told is not None and told.world is not None:
        return told.world, f"{host}: {told.source}"
    size = _world_from(scan_groups(host))
    return (size, f"{host}: process group 0") if size else None


def _check_world(ranks: list[RankFiles], world: tuple[int, str] | None) -> None:
    """Every rank must be below the world size when a trace records it."""
    if world is None:
        return
    for rf in ranks:
        if rf.rank >= world[0]:
            raise TraceFormatError(f"rank {rf.rank} is outside the world size {world[0]} ({world[1]})", rf.host)


def _groups(dist: dict[str, Any], host_groups: dict[str, dict[str, Any]], world: int
            ) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for name, g in host_groups.items():
        ranks = g["ranks"] or (list(range(world)) if g["size"] in (world, 0) else [])
        if ranks:
            out[name] = ranks
    for g in dist.get("pg_config") or []:
        if isinstance(g, dict) and "pg_name" in g and isinstance(g.get("ranks"), list) and g["ranks"]:
            out[str(g["pg_name"])] = [int(r) for r in g["ranks"]]
    return out


def convert_rank(files: RankFiles, world: int | None = None, data_deps: bool = False,
                 idle_gaps: bool = True, min_idle_us: int = 10, match: SetMatch | None = None) -> ConvertedRank:
    """Convert one rank's files to a :class:`ConvertedRank` (all in memory for this rank; read
    with the cyclic garbage collector off, :func:`.nogc.cycle_collection_off`); ``match`` names
    the groups of collectives whose op does not."""
    with cycle_collection_off():
        host = read_host_et(files.host, files.header)
        if match is not None:
            match.apply(files.rank, host.ops)
        kt = _kineto_of(files.kineto, files.distributed, host) if files.kineto else host.linked
        dist = kt.distributed if kt is not None else {}
        world = world or int(dist.get("world_size") or 0) or _world_from(host.groups) or 1
        groups = _groups(dist, host.groups, world)
        return build_graph(host, kt, files.rank, world, groups, data_deps=data_deps, idle_gaps=idle_gaps,
                           min_idle_us=min_idle_us)


def _kineto_of(path: str, distributed: dict[str, Any] | None, host: HostTrace) -> KinetoTrace:
    """The Kineto trace ``path``, read for the timings of the host ops and linked to them (the
    set of rf_ids looked for is let go before the graph is built)."""
    wanted = {op.rf_id for op in host.ops}
    for op in host.ops:
        if op.comm is not None:
            wanted.update(op.comm.worker_rfs)
    kt = read_kineto(path, wanted, distributed)
    link_host_ops(kt, host, wanted)
    _warn_unfinished(kt)
    return kt


def _warn_unfinished(kt: KinetoTrace) -> None:
    """Warn when ops were still open when the profiler stopped: the trace does not say when
    their work ended, so their nodes are timed by what the host trace shows of them."""
    if kt.unfinished:
        ts, name = min(kt.unfinished)
        warnings.warn(f"{kt.path}: {len(kt.unfinished)} op(s) still running when the profiler stopped "
                      f"(Kineto 'finished': false), the first {name} at ts {ts:.3f} us: their end is not in "
                      "the trace, so their nodes are timed by the host trace alone (keep profiling after "
                      "the last step, e.g. chakra_collect's settle_s)", PyTorchTraceWarning, stacklevel=2)


def _world_from(groups: dict[str, dict[str, Any]]) -> int | None:
    g = groups.get("0")
    return g["size"] if g else None


def _metadata(files: RankFiles) -> GlobalMetadata:
    header = files.header = read_header(files.host)
    schema = schema_of(header, files.host)
    check_schema(schema, files.host)
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.extend([make_attr("source", "pytorch"), make_attr("schema", schema),
                      make_attr("rank", files.rank)])
    pid = header.get("pid")
    if isinstance(pid, int):
        meta.attr.append(make_attr("pid", pid))
    return meta


def open_pytorch(paths: Sequence[str], data_deps: bool = False, idle_gaps: bool = True,
                 min_idle_us: int = 10) -> TraceSet:
    """Open PyTorch traces as a TraceSet; each rank is converted when its nodes are read.
    Kineto traces without host execution traces are converted from Kineto alone."""
    kinetos = kineto_only_paths(paths)
    if kinetos is not None:
        from .kineto_only import open_kineto_only  # the Kineto-only route's modules, only when taken

        return open_kineto_only(kinetos, data_deps=data_deps, idle_gaps=idle_gaps, min_idle_us=min_idle_us)
    rank_files, dist = find_rank_files(paths)
    world = int(dist.get("world_size") or 0) or None
    if world is None and len(rank_files) > 1:
        world = max(rf.rank for rf in rank_files) + 1
    missing = [rf.host for rf in rank_files if rf.kineto is None and not is_linked(rf.host)]
    if missing:
        warnings.warn(f"{missing[0]}: no Kineto trace for {len(missing)} rank(s): durations are "
                      "missing (0)", PyTorchTraceWarning, stacklevel=2)
    # groups: Kineto's distributedInfo, else the first rank's pg-init node (a host ET is only
    # scanned for it when no Kineto trace lists the groups and the world size)
    listed = bool(dist.get("pg_config")) and bool(dist.get("world_size"))
    host_groups = {} if listed else scan_groups(rank_files[0].host)
    if world is None:
        world = _world_from(host_groups) or 1
    groups = {k: v for k, v in _set_groups(rank_files, dist, host_groups, world).items() if k != "0"}
    match = _set_match(rank_files, groups, world)
    offsets = start_offsets_ns({rf.rank: first_step_us(rf.kineto) if rf.kineto else None
                                for rf in rank_files} if len(rank_files) > 1 else {})
    own = groups_by_rank(groups)  # each rank's metadata as it is written: its own groups
    ranks = []
    for rf in rank_files:
        meta = with_process_groups(with_start_offset(_metadata(rf), offsets, rf.rank), own(rf.rank))
        ranks.append(LazyRank(rf.rank, meta, _factory(rf, world, data_deps, idle_gaps, min_idle_us, match),
                              path=rf.host))
    return TraceSet(ranks, process_groups=groups, source=rank_files[0].host)


def _set_groups(rank_files: Sequence[RankFiles], dist: dict[str, Any], host_groups: dict[str, dict[str, Any]],
                world: int) -> dict[str, list[int]]:
    """The groups of every rank together (each rank lists only the groups it is in): each
    rank's Kineto ``pg_config``, else its host ET's pg-init node when the first rank's has one."""
    out = _groups(dist, host_groups, world)
    for rf in rank_files:
        if (rf.distributed or {}).get("pg_config"):
            mine = _groups(rf.distributed or {}, {}, world)
        elif host_groups and rf is not rank_files[0]:
            mine = _groups({}, scan_groups(rf.host), world)
        else:
            continue
        out.update({k: v for k, v in mine.items() if k not in out})
    return out


def _set_match(rank_files: Sequence[RankFiles], groups: dict[str, list[int]], world: int) -> SetMatch | None:
    """The cross-rank matcher of collective groups, when the set has sub-groups."""
    if not has_subgroups(groups, world):
        return None
    every = {**groups, "0": list(range(world))}
    hosts = {rf.rank: (lambda rf=rf: read_host_et(rf.host, rf.header).ops) for rf in rank_files}
    return SetMatch(hosts, every, rank_files[0].host)


def _factory(rf: RankFiles, world: int | None, data_deps: bool, idle_gaps: bool, min_idle_us: int,
             match: SetMatch | None):
    def convert() -> ConvertedRank:
        """Convert the rank now."""
        return convert_rank(rf, world, data_deps, idle_gaps, min_idle_us, match)
    return convert
