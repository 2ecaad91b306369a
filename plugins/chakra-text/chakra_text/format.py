"""The ``text`` input format: an ASTRA-sim 1.0 text workload as a lazily generated TraceSet.

The per-rank graph is built once and serialized once; each rank's file is that byte template
with the rank's ``pg_name`` attribute appended to its collectives (a repeated field may be
appended to a serialized protobuf message), so 1024 ranks cost 1024 cheap byte joins, not
1024 graph constructions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from chakra_core import (
    ConfigError,
    GeneratedRank,
    GlobalMetadata,
    InputFormat,
    Node,
    NodeType,
    Option,
    TraceFormatError,
    TraceSet,
    check_limit,
    make_attr,
)

from .graph import Spec, build_graph
from .groups import ALL, GroupLayout
from .modes import HYBRID_MODES
from .parse import Workload, parse_workload

__all__ = ["TextFormat", "TextRank", "convert_workload", "time_converter", "TIME_UNITS"]

#: microseconds per unit of the file's times, as (numerator, denominator); ``cycles`` is
#: ``cycle_ns`` nanoseconds each.
TIME_UNITS = {"cycles": None, "ns": (1, 1000), "us": (1, 1), "ms": (1000, 1)}


def time_converter(unit: str, cycle_ns: float) -> Callable[[float], int]:
    """A function turning a file time in ``unit`` into whole microseconds (rounded half up)."""
    scale = TIME_UNITS[unit]
    num, den = (cycle_ns, 1000) if scale is None else scale
    return lambda t: int(math.floor(t * num / den + 0.5))


class TextRank(GeneratedRank):
    """One rank: the shared serialized template plus this rank's ``pg_name`` suffixes."""

    def __init__(self, rank: int, metadata: GlobalMetadata, template: list[bytes], roles: bytes,
                 suffixes: Sequence[bytes]):
        super().__init__(rank, metadata, self._decode)
        self._template = template
        self._roles = roles
        self._suffixes = suffixes

    def raw(self) -> Iterator[bytes]:
        """Serialized node messages of this rank, in id order."""
        sfx = self._suffixes
        for data, role in zip(self._template, self._roles):
            yield data + sfx[role] if role else data

    def _decode(self) -> Iterator[Node]:
        return (Node.FromString(b) for b in self.raw())


def _serialize(spec: Spec) -> bytes:
    n = Node(id=spec.id, name=spec.name, type=spec.type)
    n.data_deps.extend(spec.deps)
    if spec.type == NodeType.COMP_NODE:
        n.duration_micros = spec.duration
    n.attr.append(make_attr("is_cpu_op", False))
    if spec.type == NodeType.COMM_COLL_NODE:
        n.attr.append(make_attr("comm_type", spec.comm_type))
        n.attr.append(make_attr("comm_size", spec.comm_size))
    return n.SerializeToString()


def _pg_suffix(name: str) -> bytes:
    n = Node()
    n.attr.append(make_attr("pg_name", name))
    return n.SerializeToString()


def _layout(w: Workload, npus: int, mp_group: int | None) -> GroupLayout:
    if w.mode not in HYBRID_MODES:
        return GroupLayout(npus)
    mp = mp_group if mp_group is not None else w.mp_group
    if mp is None:
        raise ConfigError(f"{w.path}: {w.mode} needs the model-parallel group size: "
                          "give option mp_group (or model_parallel_NPU_group: on line 1)")
    if mp > npus or npus % mp:
        raise ConfigError(f"{w.path}: model-parallel group size {mp} does not divide npus={npus}")
    if (npus // mp) % w.ep:
        raise ConfigError(f"{w.path}: expert-parallel group size ep: {w.ep} does not divide the "
                          f"data-parallel group size {npus // mp}")
    return GroupLayout(npus, mp, mp_low=w.mode != "HYBRID_MODEL_DATA", ep=w.ep)


def convert_workload(w: Workload, npus: int | None = None, passes: int = 1, time_unit: str = "cycles",
                     cycle_ns: float = 1.0, mp_group: int | None = None) -> TraceSet:
    """Turn a parsed workload into a TraceSet of ``npus`` ranks (see docs/text-workloads.md)."""
    npus = npus if npus is not None else w.all_gpus
    if npus is None:
        raise ConfigError(f"{w.path}: option npus is required (the file has no all_gpus: on line 1)")
    check_limit("npus", npus, "npus", w.path, error=ConfigError)
    layout = _layout(w, npus, mp_group)
    specs = build_graph(w, layout, passes, time_converter(time_unit, cycle_ns))
    template = [_serialize(s) for s in specs]
    roles = bytes(s.role if s.type == NodeType.COMM_COLL_NODE else ALL for s in specs)
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.extend([
        make_attr("source", w.path), make_attr("text_mode", w.mode), make_attr("passes", passes),
        make_attr("time_unit", time_unit),
    ])
    if w.mode in HYBRID_MODES:
        meta.attr.append(make_attr("model_parallel_group_size", layout.mp))
    suffix_cache: dict[tuple, list[bytes]] = {}
    ranks = []
    for r in range(npus):
        names = layout.pg_names(r)
        key = tuple(sorted(names.items()))
        sfx = suffix_cache.get(key)
        if sfx is None:
            sfx = [b""] * 5
            for role, name in names.items():
                sfx[role] = _pg_suffix(name)
            suffix_cache[key] = sfx
        own = GlobalMetadata()
        own.CopyFrom(meta)
        ranks.append(TextRank(r, own, template, roles, sfx))
    return TraceSet(ranks, process_groups=layout.groups(), source=w.path)


class TextFormat(InputFormat):
    """ASTRA-sim 1.0 text workloads (every mode) as per-rank Chakra ETs."""

    description = "ASTRA-sim 1.0 text workload to per-rank Chakra ETs"
    per_rank = True  # every worker builds the one shared template; ranks are written independently
    options = {
        "npus": Option("int", None, "number of ranks (default: all_gpus: of line 1, else required)",
                       minimum=1),
        "passes": Option("int", 1, "training passes (iterations) to unroll", minimum=1),
        "time_unit": Option("str", "cycles", "unit of the file's compute times",
                            choices=tuple(TIME_UNITS)),
        "cycle_ns": Option("float", 1.0, "nanoseconds per cycle when time_unit=cycles "
                           "(ASTRA-sim 1.0's default clock: 1 ns)", unit="ns", minimum=0),
        "mp_group": Option("int", None, "model-parallel group size for the hybrid modes (default: "
                           "model_parallel_NPU_group: of line 1)", minimum=1),
    }

    def open(self, paths: Sequence[str], options: Mapping[str, Any]) -> TraceSet:
        """Parse the one workload file in ``paths`` and return its lazily generated rank set."""
        if len(paths) != 1:
            raise TraceFormatError(f"the text format takes one workload file, got {len(paths)}",
                                   paths[0] if paths else None)
        w = parse_workload(paths[0])
        opts = dict(options)
        if w.mode not in HYBRID_MODES and opts.get("mp_group") is not None:
            raise ConfigError(f"{w.path}: option mp_group applies to the hybrid modes, not {w.mode}")
        cycle_ns = opts.get("cycle_ns")
        return convert_workload(w, opts.get("npus"), opts.get("passes") or 1, opts.get("time_unit") or "cycles",
                                1.0 if cycle_ns is None else cycle_ns, opts.get("mp_group"))
