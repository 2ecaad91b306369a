"""The ``text`` input format: an ASTRA-sim 1.0 text workload as a lazily generated TraceSet.

The per-rank graph is built once and serialized once; each rank's file is that byte template
with the rank's ``pg_name`` attribute appended to its collectives (a repeated field may be
appended to a serialized protobuf message), so 1024 ranks cost 1024 cheap byte joins, not
1024 graph constructions.
"""

from __future__ import annotations

import math
import warnings
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
from .modes import HYBRID_MODES, RECOMPUTE_MODE
from .parse import Workload, parse_workload

__all__ = ["TextFormat", "TextRank", "TextWarning", "convert_workload", "time_converter", "TIME_UNITS"]

#: microseconds per unit of the file's times, as (numerator, denominator); ``cycles`` is
#: ``cycle_ns`` nanoseconds each.
TIME_UNITS = {"cycles": None, "ns": (1, 1000), "us": (1, 1), "ms": (1000, 1)}


def time_converter(unit: str, cycle_ns: float) -> Callable[[float], int]:
    """A function turning a file time in ``unit`` into whole microseconds (rounded half up)."""
    scale = TIME_UNITS[unit]
    num, den = (cycle_ns, 1000) if scale is None else scale
    return lambda t: int(math.floor(t * num / den + 0.5))


class TextWarning(UserWarning):
    """A conversion that took values the options did not give (from the file's header line, or
    defaults), or a header field that the file's mode ignores."""


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


def _line(w: Workload) -> str:
    return f"line {w.header_line}"


def _npus(w: Workload, npus: int | None) -> tuple[int, str | None]:
    """The rank count and, when it is the file's ``all_gpus:``, a note saying so."""
    if npus is not None:
        return npus, None
    if w.all_gpus is None:
        raise ConfigError(f"option npus is required (the file has no all_gpus: on {_line(w)})", w.path)
    return w.all_gpus, f"npus={w.all_gpus} from all_gpus: ({_line(w)})"


def _mp(w: Workload, mp_group: int | None) -> tuple[int, str | None]:
    """The model-parallel group size and, when it is the file's, a note saying so."""
    if mp_group is not None:
        return mp_group, None
    if w.mp_group is None:
        raise ConfigError(f"{w.mode} needs the model-parallel group size: give option mp_group "
                          "(or model_parallel_NPU_group: on the header line)", w.path, _line(w))
    return w.mp_group, f"mp_group={w.mp_group} from model_parallel_NPU_group: ({_line(w)})"


def _layout(w: Workload, npus: int, npus_note: str | None, mp_group: int | None) -> tuple[GroupLayout, list[str]]:
    """The process-group layout and the notes on the header values it took."""
    if w.mode not in HYBRID_MODES:
        return GroupLayout(npus), [n for n in [npus_note] if n]
    mp, mp_note = _mp(w, mp_group)
    npus_from = "all_gpus: of the file" if npus_note else "option npus"
    mp_from = "model_parallel_NPU_group: of the file" if mp_note else "option mp_group"
    stages = mp * w.pp
    if npus % stages:
        pipeline = f" x pp: {w.pp} = {stages}" if w.pp > 1 else ""
        raise ConfigError(f"model-parallel group size {mp} ({mp_from}){pipeline} does not divide npus={npus} "
                          f"({npus_from})", w.path, _line(w))
    dp = npus // stages
    if dp % w.ep:
        raise ConfigError(f"expert-parallel group size ep: {w.ep} does not divide the data-parallel group size {dp} "
                          f"= npus {npus} ({npus_from}) / (model-parallel {mp} ({mp_from}) x pp: {w.pp})",
                          w.path, _line(w))
    notes = [n for n in [npus_note, mp_note] if n]
    if w.pp > 1:
        notes.append(f"pp={w.pp} from pp: ({_line(w)}): data-parallel groups of npus / (mp_group x pp) = {dp} "
                     "ranks, within each pipeline stage")
    return GroupLayout(npus, mp, mp_low=w.mode != "HYBRID_MODEL_DATA", ep=w.ep, pp=w.pp), notes


def _clock(w: Workload, unit: str, cycle_ns: float | None) -> tuple[float, list[str]]:
    """The clock period to use (ns per cycle) and a note when it is the default."""
    if cycle_ns is not None and unit != "cycles":
        raise ConfigError(f"option cycle_ns applies to time_unit=cycles, not time_unit={unit}", w.path)
    if cycle_ns is not None and not (math.isfinite(cycle_ns) and cycle_ns > 0):
        raise ConfigError(f"option cycle_ns must be a positive number of nanoseconds per cycle, got {cycle_ns!r}",
                          w.path)
    if unit == "cycles" and cycle_ns is None:
        return 1.0, ["time_unit=cycles of cycle_ns=1.0 (defaults: ASTRA-sim 1.0's 1 ns clock)"]
    return 1.0 if cycle_ns is None else cycle_ns, []


def _warn(w: Workload, notes: list[str]) -> None:
    """State the values the conversion took unasked (one line), and checkpoints the mode ignores."""
    if notes:
        warnings.warn(f"{w.path}: {'; '.join(notes)}", TextWarning, stacklevel=4)
    if w.initiates and w.mode != RECOMPUTE_MODE:
        warnings.warn(f"{w.path}:{_line(w)}: checkpoint_initiates: ignored: only {RECOMPUTE_MODE} recomputes "
                      f"forward passes, not {w.mode}", TextWarning, stacklevel=4)


def convert_workload(w: Workload, npus: int | None = None, passes: int = 1, time_unit: str = "cycles",
                     cycle_ns: float | None = None, mp_group: int | None = None) -> TraceSet:
    """Turn a parsed workload into a TraceSet of ``npus`` ranks (see docs/text-workloads.md).

    A value left None is taken from the file's header line (``npus`` from ``all_gpus:``,
    ``mp_group`` from ``model_parallel_NPU_group:``) or a default (``cycle_ns`` 1.0 ns, only with
    ``time_unit`` cycles); one :class:`TextWarning` line states what was taken."""
    npus, npus_note = _npus(w, npus)
    check_limit("npus", npus, "npus", w.path, error=ConfigError)
    layout, notes = _layout(w, npus, npus_note, mp_group)
    period, clock_notes = _clock(w, time_unit, cycle_ns)
    notes += clock_notes
    specs = build_graph(w, layout, passes, time_converter(time_unit, period))
    template = [_serialize(s) for s in specs]
    roles = bytes(s.role if s.type == NodeType.COMM_COLL_NODE else ALL for s in specs)
    ranks = _ranks(layout, _metadata(w, passes, time_unit, period, layout), template, roles)
    _warn(w, notes)
    return TraceSet(ranks, process_groups=layout.groups(), source=w.path)


def _metadata(w: Workload, passes: int, unit: str, period: float, layout: GroupLayout) -> GlobalMetadata:
    """What every rank's file says about its conversion."""
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.extend([
        make_attr("source", w.path), make_attr("text_mode", w.mode), make_attr("passes", passes),
        make_attr("time_unit", unit),
    ])
    if unit == "cycles":
        meta.attr.append(make_attr("cycle_ns", period))
    if w.mode in HYBRID_MODES:
        meta.attr.append(make_attr("model_parallel_group_size", layout.mp))
    if w.pp > 1:
        meta.attr.append(make_attr("pipeline_stages", w.pp))
    return meta


def _ranks(layout: GroupLayout, meta: GlobalMetadata, template: list[bytes], roles: bytes) -> list[TextRank]:
    """One rank per NPU; ranks whose groups have the same names share their ``pg_name`` suffixes."""
    suffix_cache: dict[tuple, list[bytes]] = {}
    ranks = []
    for r in range(layout.npus):
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
    return ranks


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
        "cycle_ns": Option("float", None, "nanoseconds per cycle, > 0, time_unit=cycles only "
                           "(default: 1.0, ASTRA-sim 1.0's clock)", unit="ns"),
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
        return convert_workload(w, opts.get("npus"), opts.get("passes") or 1, opts.get("time_unit") or "cycles",
                                opts.get("cycle_ns"), opts.get("mp_group"))
