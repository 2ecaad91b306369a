"""The ``resize_dp`` transform: the same job with another data-parallel width.

Where the ranks sit: a set made by the ``transformer`` generator says it in each rank's metadata
(``parallel_coords``, ``parallel_groups``, ``workload``: sizes and rank order); a recording is
taken as replicas of ``k`` consecutive ranks, ``k`` told by its process groups
(:func:`replica_size`) or ``replica_ranks``; 1 (pure data parallelism) otherwise.  New rank ``r'`` with
coordinates ``(tp, cp, dp', pp)`` (the same rank order, the new width) runs the trace of the rank
with ``dp = dp' mod dp_old`` and the same other coordinates: replicas are copied round-robin when
growing, the first ``dp`` kept when shrinking.

Groups: a group whose members share one data-parallel index (tensor, context, pipeline-embedding
groups) is copied into every new replica; a group spanning the data-parallel dimension (the
gradient groups ``dp`` and ``edp``, or in a recording any group whose data-parallel indices are a
residue class ``e mod k`` covering the old width, such as all ranks) grows to every new replica
that holds one of its members' traces; an expert-parallel group (a block of ``ep`` consecutive
data-parallel indices) is copied per block.  ``pg_name``\\ s, pipeline peers, the PyTorch
process-group node (in its own form, with each group's ``pg_desc`` and the default group "0"
over every rank) and the metadata (``rank``, coordinates, groups, workload) are rewritten, and a
send's ``comm_src`` (a receive's ``comm_dst``), where recorded, becomes the new rank.

Dropped, in a generated set: a group left with one member and the collectives on it (the
generator makes no group of one); their dependents wait for what they waited for.

Resharded: an all-gather's ``comm_size`` is its per-rank shard, so one on a group whose size
changes keeps the gathered bytes (``shard * old members``) split over the new members, rounded
up: ZeRO's parameter gathers over ``dp`` and ``edp``, as the generator writes them at the new
width (exactly when the old members divided the gathered bytes; else the old width's padding
can add up to ``ceil(old / new)`` bytes), and in a recording any all-gather on a growing group.

Kept: every other node, dependency, duration and size (gradients are the model's, whatever the
width; a reduce-scatter's size is its whole input).
What it cannot know: collectives the old width did not need (a width of 1 has no gradient
collective and is refused; with ``ep == dp`` there is no expert-gradient collective, and a wider
set gets none); a recorded all-gather of per-rank data (whose shard would stay and output grow,
where it is resharded as a tensor of the model's); how a width changes the work per replica
(the global batch grows with dp; for a fixed global batch, change micro_batches and regenerate)
and how the per-replica data loader or the optimizer's sharded size (ZeRO 1-3: ``P/dp``) would
change: those stay as recorded.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from chakra_core import (
    PG_INIT_NAME,
    CommType,
    ConfigError,
    GeneratedRank,
    GlobalMetadata,
    Node,
    NodeType,
    Option,
    RankTrace,
    TraceFormatError,
    TraceSet,
    Transform,
    check_limit,
    get_int,
    get_str,
    process_groups_json,
    set_attr,
)

__all__ = ["ResizeDp", "ResizeWarning", "DpLayout", "replica_size", "resized_groups"]

_DIMS = ("tp", "cp", "dp", "pp")
_GROWING = ("dp", "edp")
_BLOCKS = ("ep",)
#: the new name of a generated set's group left with one member: no group, and its collectives
#: are dropped (the generator issues none on a group of one)
_ALONE = "\0alone"


@dataclass
class DpLayout:
    """Where every rank of a set sits: sizes, order (fastest first), coordinates, group kinds."""

    sizes: dict[str, int]
    order: tuple[str, ...]
    coords: list[dict[str, int]]
    kinds: dict[str, str]
    workload: dict[str, Any] | None = None

    def rank(self, c: Mapping[str, int], sizes: Mapping[str, int]) -> int:
        """The rank of coordinates ``c`` under ``sizes`` in this order."""
        rank, stride = 0, 1
        for d in self.order:
            rank += c[d] * stride
            stride *= sizes[d]
        return rank


def _attrs(meta: GlobalMetadata) -> dict[str, str]:
    return {a.name: a.string_val for a in meta.attr if a.WhichOneof("value") == "string_val"}


def _layout(traces: TraceSet, replica_ranks: int | None) -> DpLayout:
    """The layout a generated set records, or a recording's (:func:`_recorded_layout`)."""
    first = _attrs(traces[traces.ranks[0]].metadata())
    if "parallel_coords" not in first or "workload" not in first:
        return _recorded_layout(traces, replica_ranks)
    if replica_ranks is not None:
        raise ConfigError("transform 'resize_dp': replica_ranks is for a recording; this set was generated and "
                          "records where its ranks sit")
    workload = json.loads(first["workload"])
    coords, kinds = [], {}
    for rt in traces:
        attrs = _attrs(rt.metadata())
        coords.append(json.loads(attrs["parallel_coords"]))
        for kind, name in json.loads(attrs.get("parallel_groups", "{}")).items():
            kinds[name] = kind
    sizes = {d: int(workload[d]) for d in _DIMS}
    return DpLayout(sizes, tuple(workload["order"].split("-")), coords, kinds, workload)


def _recorded_layout(traces: TraceSet, replica_ranks: int | None) -> DpLayout:
    """A recording as replicas of ``k`` consecutive ranks (rank = replica * k + place): ``k`` is
    ``replica_ranks``, else told by its process groups (:func:`replica_size`)."""
    n = len(traces)
    if traces.ranks != list(range(n)):
        raise ConfigError(f"transform 'resize_dp': the set's ranks are not 0 to {n - 1}")
    k = replica_size(traces.process_groups, n) if replica_ranks is None else replica_ranks
    if n % k:
        raise ConfigError(f"transform 'resize_dp': replica_ranks={k} does not divide the set's {n} ranks")
    if replica_ranks is None and k > 1:
        warnings.warn(f"resize_dp: the recording's process groups are the ranks {_classes(n, k)}: taken as "
                      f"{n // k} data-parallel replicas of {k} ranks (-O replica_ranks=1 for one rank a replica)",
                      ResizeWarning, stacklevel=2)
    return DpLayout({"tp": 1, "cp": 1, "dp": n // k, "pp": k}, ("tp", "cp", "pp", "dp"),
                    [{"tp": 0, "cp": 0, "dp": r // k, "pp": r % k} for r in range(n)], {})


def replica_size(groups: Mapping[str, list[int]], n: int) -> int:
    """The ranks per data-parallel replica of a recording of ``n`` ranks with process ``groups``:
    ``k`` > 1 when its groups include every residue class mod ``k`` of the ranks (each of
    ``n / k`` >= 2 ranks: the gradient groups of replicas of ``k`` consecutive ranks, such as
    pipeline stages), else 1 (pure data parallelism).  Two such ``k`` are refused."""
    found = {tuple(sorted(m)) for m in groups.values() if m}
    ks = [k for k in range(2, n // 2 + 1) if n % k == 0
          and all(tuple(range(e, n, k)) in found for e in range(k))]
    if len(ks) > 1:
        raise ConfigError(f"transform 'resize_dp': cannot tell the data-parallel groups of the recording: its process "
                          f"groups are the ranks {_classes(n, ks[0])} and {_classes(n, ks[1])}; give -O "
                          "replica_ranks=K (ranks per replica)")
    return ks[0] if ks else 1


def _classes(n: int, k: int) -> str:
    """The residue classes mod ``k`` of ``n`` ranks, as text: ``0,2 / 1,3``."""
    return " / ".join(",".join(map(str, range(e, n, k))) for e in range(k))


class ResizeWarning(UserWarning):
    """How ``resize_dp`` took a recording's layout."""


def _mode(name: str, members: list[int], lay: DpLayout) -> tuple[str, int]:
    """How group ``name`` scales: ``("grow", 0)`` or ``("block", size)``."""
    kind = lay.kinds.get(name)
    dps = sorted({lay.coords[r]["dp"] for r in members})
    n = lay.sizes["dp"]
    if kind in _GROWING:
        return "grow", 0
    if kind in _BLOCKS:
        return "block", len(dps)
    if len(dps) == 1:
        return "block", 1
    k = n // len(dps)
    if len(dps) * k == n and dps == list(range(dps[0], n, k)):
        return "grow", 0
    if kind is None and dps == list(range(dps[0], dps[0] + len(dps))) and dps[0] % len(dps) == 0:
        return "block", len(dps)
    raise ConfigError(f"transform 'resize_dp': cannot tell how process group {name!r} (data-parallel "
                      f"indices {dps}) scales with the data-parallel width")


def resized_groups(traces: TraceSet, lay: DpLayout, dp: int) -> tuple[dict[str, list[int]], list[dict[str, str]],
                                                                        list[int]]:
    """The new groups, each new rank's old-name -> new-name map, and each new rank's source rank."""
    sizes = {**lay.sizes, "dp": dp}
    old_n = lay.sizes["dp"]
    by_coords = {tuple(c[d] for d in _DIMS): r for r, c in zip(traces.ranks, lay.coords)}
    world = check_limit("npus", sizes["tp"] * sizes["cp"] * dp * sizes["pp"], "ranks of the resized set",
                        error=ConfigError)
    new_coords: list[dict[str, int]] = [{}] * world
    source = [0] * world
    for c in lay.coords:
        if c["dp"] >= min(old_n, dp):
            continue
        for copy in range((dp - c["dp"] + old_n - 1) // old_n):
            nc = {**{d: c[d] for d in _DIMS}, "dp": c["dp"] + copy * old_n}
            r = lay.rank(nc, sizes)
            new_coords[r] = nc
            source[r] = by_coords[tuple(c[d] for d in _DIMS)]
    groups: dict[str, list[int]] = {}
    names: list[dict[str, str]] = [{} for _ in range(world)]
    all_old = traces.ranks
    for old, members in traces.process_groups.items():
        members = members or all_old
        mode, size = _mode(old, members, lay)
        if size and dp % size:
            raise ConfigError(f"transform 'resize_dp': dp={dp} is not a multiple of {size}, the size of "
                              f"the expert-parallel group {old!r}")
        inside = set(members)
        parts: dict[int, list[int]] = {}
        for r in range(world):
            if source[r] in inside:
                parts.setdefault(0 if mode == "grow" else new_coords[r]["dp"] // size, []).append(r)
        for part in parts.values():
            if len(part) == 1 and lay.workload is not None:  # the generator makes no group of one
                names[part[0]][old] = _ALONE
                continue
            name = old if old in ("", "0") and len(part) == world else str(len(groups) + 1)
            if name in groups:
                name = str(len(groups) + 1)
            groups[name] = part
            for r in part:
                names[r][old] = name
    return groups, names, source


class ResizeDp(Transform):
    """Change the data-parallel width of a recorded or generated set (module docstring)."""

    description = "what-if: change the data-parallel width (replicate ranks, re-size groups)"
    options = {"dp": Option("int", None, "the new data-parallel width", required=True, minimum=1),
               "replica_ranks": Option("int", None, "a recording's ranks per data-parallel replica (default: "
                                       "told by its process groups, else 1)", minimum=1)}

    def apply(self, traces: TraceSet, options: Mapping[str, Any]) -> TraceSet:
        """The resized set (lazy: each new rank streams its source rank)."""
        dp = options["dp"]
        lay = _layout(traces, options.get("replica_ranks"))
        if lay.sizes["dp"] == 1:
            raise ConfigError("transform 'resize_dp': the set has no data parallelism (width 1), so no "
                              "gradient collective to resize; generate it with dp >= 2")
        groups, names, source = resized_groups(traces, lay, dp)
        sizes = {**lay.sizes, "dp": dp}
        members = _member_counts(traces, groups, len(source))
        origin = {new: old for m in names for old, new in m.items() if new != _ALONE}

        def pg_text(text: str, where: tuple[str, str]) -> str:
            return _pg_init_text(text, groups, origin, len(source), where)
        ranks = []
        for r, src in enumerate(source):
            ranks.append(_resized_rank(r, traces[src], lay, sizes, names[r], pg_text, members))
        return TraceSet(ranks, groups, source=traces.source)


#: ``(members before, members after)`` of a collective's group, by its old and new ``pg_name``
Members = Callable[[str | None, str | None], tuple[int, int]]


def _member_counts(traces: TraceSet, groups: Mapping[str, list[int]], world: int) -> Members:
    """The :data:`Members` of ``traces`` resized to ``groups`` on ``world`` ranks (None, "", "0",
    an unknown name or a group listed without ranks: every rank, as :meth:`TraceSet.group_members`)."""
    def count(table: Mapping[str, list[int]], pg: str | None, everyone: int) -> int:
        return everyone if pg in (None, "", "0") else len(table.get(pg) or ()) or everyone

    return lambda old, new: (count(traces.process_groups, old, len(traces)), count(groups, new, world))


def _resized_rank(rank: int, src: RankTrace, lay: DpLayout, sizes: dict[str, int], names: dict[str, str],
                  pg_text: Callable[[str, tuple[str, str]], str], members: Members) -> GeneratedRank:
    """New rank ``rank`` streaming ``src`` with its groups, peers and metadata rewritten
    (``pg_text``: the values of the process-group node, from the source's and where it is)."""
    own = lay.coords[src.rank]
    new_dp = rank // _stride(lay, sizes, "dp") % sizes["dp"]

    def peer(old: int) -> int:
        c = lay.coords[old]
        return lay.rank({**c, "dp": (new_dp + c["dp"] - own["dp"]) % sizes["dp"]}, sizes)

    def pg_init(n: Node) -> None:
        n.inputs.values = pg_text(n.inputs.values, (src.label, f"node {n.id}"))

    def nodes() -> Iterator[Node]:
        dropped: dict[int, tuple[list[int], list[int]]] = {}
        for n in src.editable_nodes():
            if dropped:
                _bypass(n, dropped)
            if n.type == NodeType.COMM_COLL_NODE and names.get(get_str(n, "pg_name") or "") == _ALONE:
                dropped[n.id] = (list(n.data_deps), list(n.ctrl_deps))
                continue
            yield _rewrite(n, names, peer, pg_init, rank, members)

    return GeneratedRank(rank, _metadata(src.metadata(), rank, lay, sizes, names, new_dp), nodes, src.path)


def _bypass(n: Node, dropped: Mapping[int, tuple[list[int], list[int]]]) -> None:
    """``n``'s dependencies on dropped nodes replaced by theirs: a dropped node's data
    dependencies in the field that named it, its control dependencies among ``n``'s control
    dependencies (a dropped node's own were bypassed when it was read)."""
    hit = [d for d in (*n.data_deps, *n.ctrl_deps) if d in dropped]
    if not hit:
        return
    for field in (n.data_deps, n.ctrl_deps):
        deps: dict[int, None] = {}
        for d in field:
            deps.update(dict.fromkeys(dropped[d][0] if d in dropped else (d,)))
        if field is n.ctrl_deps:
            for d in hit:
                deps.update(dict.fromkeys(dropped[d][1]))
        del field[:]
        field.extend(deps)


def _stride(lay: DpLayout, sizes: Mapping[str, int], dim: str) -> int:
    stride = 1
    for d in lay.order:
        if d == dim:
            return stride
        stride *= sizes[d]
    raise KeyError(dim)


def _rewrite(n: Node, names: Mapping[str, str], peer: Any, pg_init: Callable[[Node], None], rank: int,
             members: Members) -> Node:
    """``n`` with its group renamed (an all-gather also resharded, :func:`_reshard`), or its peer
    moved and its own endpoint (a send's ``comm_src``, a receive's ``comm_dst``, where recorded)
    set to ``rank``, or (the process-group node) its groups rewritten by ``pg_init``."""
    if n.type == NodeType.COMM_COLL_NODE:
        pg = get_str(n, "pg_name")
        new = names.get(pg, pg) if pg is not None else None
        if new != pg:
            set_attr(n, "pg_name", new)
        if get_int(n, "comm_type") == CommType.ALL_GATHER:
            _reshard(n, *members(pg, new))
    elif n.type in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE):
        send = n.type == NodeType.COMM_SEND_NODE
        key, own = ("comm_dst", "comm_src") if send else ("comm_src", "comm_dst")
        old = get_int(n, key)
        if old is not None:
            set_attr(n, key, peer(old))
        if get_int(n, own) is not None:
            set_attr(n, own, rank)
    elif n.type == NodeType.METADATA_NODE and n.name == PG_INIT_NAME:
        pg_init(n)
    return n


def _pg_init_text(text: str, groups: Mapping[str, list[int]], origin: Mapping[str, str], world: int,
                  where: tuple[str, str]) -> str:
    """The values of a ``## process_group:init ##`` node listing ``groups`` of ``world`` ranks, in
    the form of the source node's values ``text``: PyTorch's (a Python list holding the JSON
    string) or the bare JSON list; each group keeps the ``pg_desc`` of the group it was made from
    (``origin``: new name -> old name), and a default group ("0" or "") the source listed stays,
    over every rank."""
    bare = text.startswith("[{")
    try:
        listed = json.loads(text if bare else text[2:-2])
    except json.JSONDecodeError as e:
        raise TraceFormatError(f"bad process-group description: not JSON (line {e.lineno}, column {e.colno}: "
                               f"{e.msg})", *where) from None
    except RecursionError:
        raise TraceFormatError("bad process-group description: nested too deeply", *where) from None
    try:
        desc = {str(d["pg_name"]): str(d["pg_desc"]) for d in listed if "pg_desc" in d}
        default = [str(d["pg_name"]) for d in listed if str(d["pg_name"]) in ("0", "")]
    except (TypeError, KeyError):
        raise TraceFormatError('bad process-group description: not a list of {"pg_name": NAME, ...} objects',
                               *where) from None
    out = {**{d: list(range(world)) for d in default if d not in groups}, **groups}
    named = {g: desc[origin.get(g, g)] for g in out if origin.get(g, g) in desc}
    written = process_groups_json(out, named)
    return written if bare else repr([written])


def _reshard(n: Node, before: int, after: int) -> None:
    """An all-gather's ``comm_size``, the per-rank shard, for a group of ``after`` ranks instead of
    ``before``: the gathered bytes (``before`` shards) stay, split ``after`` ways, rounded up."""
    size = get_int(n, "comm_size")
    if size is not None and before != after:
        set_attr(n, "comm_size", -(-size * before // after))


def _metadata(meta: GlobalMetadata, rank: int, lay: DpLayout, sizes: Mapping[str, int], names: Mapping[str, str],
              new_dp: int) -> GlobalMetadata:
    out = GlobalMetadata()
    out.CopyFrom(meta)
    for a in out.attr:
        if a.name == "rank" and a.WhichOneof("value") in ("int64_val", "int32_val", "uint64_val", "uint32_val"):
            setattr(a, a.WhichOneof("value"), rank)
        elif a.name == "parallel_coords":
            coords = json.loads(a.string_val)
            coords["dp"] = new_dp
            if "ep" in coords and lay.workload:
                coords["ep"] = new_dp % int(lay.workload["ep"])
            a.string_val = json.dumps(coords, separators=(",", ":"))
        elif a.name == "parallel_groups":
            a.string_val = json.dumps({k: names.get(v, v) for k, v in json.loads(a.string_val).items()
                                       if names.get(v) != _ALONE}, separators=(",", ":"))
        elif a.name == "workload" and lay.workload:
            a.string_val = json.dumps({**lay.workload, "dp": sizes["dp"]}, separators=(",", ":"))
    return out
