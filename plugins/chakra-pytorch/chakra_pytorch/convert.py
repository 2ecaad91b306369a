"""Convert PyTorch traces (host ET + optional Kineto per rank) to a lazily built TraceSet."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from chakra_core import (
    GeneratedRank,
    GlobalMetadata,
    Node,
    TraceFormatError,
    TraceSet,
    expand_paths,
    make_attr,
    with_process_groups,
)

from .graph import ConvertedRank, build_graph
from .hostet import read_header, read_host_et, scan_groups
from .ints import MAX_RANKS
from .kineto import KinetoTrace, read_distributed_info, read_kineto
from .schema_version import PyTorchTraceWarning, check_schema
from .sniff import JSON_SUFFIXES, is_linked, rank_from_name, sniff_kind

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

    The rank of a Kineto trace is its ``distributedInfo.rank``, else the rank in its name; a
    host ET's is the rank in its name (see :func:`rank_from_name`).  A lone host ET with at most
    one Kineto trace takes the Kineto trace's rank, else a rank clearly in its name
    (``NAME.3.json``, ``rank3``), else 0.  Returns the pairs and the first ``distributedInfo``
    seen.
    """
    files = expand_paths(paths, JSON_SUFFIXES, required=".json or .json.gz files")
    if not files:
        raise TraceFormatError("no .json or .json.gz files", None)
    hosts, kinetos = [], []
    for f in files:
        kind = sniff_kind(f)
        if kind == "host":
            hosts.append(f)
        elif kind == "kineto":
            kinetos.append(f)
        else:
            raise TraceFormatError("neither a PyTorch execution trace nor a Kineto trace", f)
    if not hosts:
        raise TraceFormatError("no host execution trace among the inputs (a Kineto trace alone is "
                               "not enough)", files[0])
    if len(hosts) == 1 and len(kinetos) <= 1:
        # one rank: the Kineto trace's distributedInfo.rank, else a rank in the name, else 0
        infos = [read_distributed_info(k) for k in kinetos]
        r = infos[0].get("rank") if infos and isinstance(infos[0].get("rank"), int) else None
        if r is None:
            r = rank_from_name(hosts[0], strict=True) or 0
            r = r if r <= MAX_RANKS else 0
        info = infos[0] if infos else {}
        return [RankFiles(r, hosts[0], kinetos[0] if kinetos else None, info if kinetos else None)], info
    by_rank: dict[int, RankFiles] = {}
    for h in hosts:
        r = rank_from_name(h)
        if r is None:
            raise TraceFormatError("cannot tell the rank from the name (put the rank number in it)", h)
        if r > MAX_RANKS:
            raise TraceFormatError(f"the number {r} in the name is not a rank (at most {MAX_RANKS}): "
                                   "put the rank number in it", h)
        if r in by_rank:
            raise TraceFormatError(f"two host traces for rank {r} ({by_rank[r].host} and {h})", h)
        by_rank[r] = RankFiles(r, h)
    dist: dict[str, Any] = {}
    for k in kinetos:
        info = read_distributed_info(k)
        dist = dist or info
        r = info.get("rank") if isinstance(info.get("rank"), int) else rank_from_name(k)
        if r is None or r not in by_rank:
            raise TraceFormatError(f"Kineto trace of rank {r} has no host execution trace", k)
        if by_rank[r].kineto is not None:
            raise TraceFormatError(f"two Kineto traces for rank {r} ({by_rank[r].kineto} and {k})", k)
        by_rank[r].kineto, by_rank[r].distributed = k, info
    return [by_rank[r] for r in sorted(by_rank)], dist


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
                 idle_gaps: bool = True, min_idle_us: int = 10) -> ConvertedRank:
    """Convert one rank's files to a :class:`ConvertedRank` (all in memory for this rank)."""
    host = read_host_et(files.host, files.header)
    kt = host.linked
    if files.kineto:
        wanted = {op.rf_id for op in host.ops}
        for op in host.ops:
            if op.comm is not None:
                wanted.update(op.comm.worker_rfs)
        kt = read_kineto(files.kineto, wanted, files.distributed)
        _warn_unfinished(kt)
    dist = kt.distributed if kt is not None else {}
    world = world or int(dist.get("world_size") or 0) or _world_from(host.groups) or 1
    groups = _groups(dist, host.groups, world)
    return build_graph(host, kt, files.rank, world, groups, data_deps=data_deps, idle_gaps=idle_gaps,
                       min_idle_us=min_idle_us)


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
    check_schema(str(header.get("schema", "")), files.host)
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.extend([make_attr("source", "pytorch"), make_attr("schema", str(header.get("schema", ""))),
                      make_attr("rank", files.rank)])
    pid = header.get("pid")
    if isinstance(pid, int):
        meta.attr.append(make_attr("pid", pid))
    return meta


def open_pytorch(paths: Sequence[str], data_deps: bool = False, idle_gaps: bool = True,
                 min_idle_us: int = 10) -> TraceSet:
    """Open PyTorch traces as a TraceSet; each rank is converted when its nodes are read.
    Kineto traces without host execution traces are converted from Kineto alone."""
    from .kineto_only import kineto_only_paths, open_kineto_only

    kinetos = kineto_only_paths(paths)
    if kinetos is not None:
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
    groups = {k: v for k, v in _groups(dist, host_groups, world).items() if k != "0"}
    ranks = []
    for rf in rank_files:
        meta = with_process_groups(_metadata(rf), groups)
        ranks.append(GeneratedRank(rf.rank, meta, _factory(rf, world, data_deps, idle_gaps, min_idle_us),
                                   path=rf.host))
    return TraceSet(ranks, process_groups=groups, source=rank_files[0].host)


def _factory(rf: RankFiles, world: int | None, data_deps: bool, idle_gaps: bool, min_idle_us: int):
    def nodes() -> Iterator[Node]:
        """Convert the rank now and yield its nodes."""
        return convert_rank(rf, world, data_deps, idle_gaps, min_idle_us).protobuf_nodes()
    return nodes
