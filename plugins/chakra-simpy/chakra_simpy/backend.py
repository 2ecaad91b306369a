"""The ``simpy`` simulator backend: options, loading, symmetry, running, and the Result."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from chakra_core import (
    TIMELINE_OPTIONS,
    Backend,
    ConfigError,
    Option,
    Result,
    Spans,
    TraceFormatError,
    TraceSet,
    add_span_outputs,
    check_group_ranks,
    keys_compiled_worthwhile,
    progress,
    ranks_compiled_worthwhile,
)
from chakra_core.system import SYSTEM_OPTIONS, SystemDescription, system_from_options

from .actor import Actor
from .beside import both
from .chunk_phases import members_finish_apart
from .closed_runs import Undecided
from .collectives import SymmetryBroken
from .formulas import NoLocalMemBandwidth
from .loading import COMPILED_FROM, load_programs, program_of
from .member_timing import WORK_LIMIT
from .program import Program
from .replayed import replayed_rows
from .result_notes import load_notes, run_notes
from .symmetry import KEYS_COMPILED_FROM, role_classes
from .watch import watched

if TYPE_CHECKING:
    from .engine import Sim

__all__ = ["SimpyBackend", "prepare_system", "default_notes"]


def prepare_system(options: Mapping[str, Any], nranks: int) -> SystemDescription:
    """The system description from the ``system``/``network``/``memory``/``comm_groups``
    options (file paths), with a one-dimension Ring of ``nranks`` NPUs when no network is given
    and ring collectives where no implementation is given; its implementations may name any
    registered algorithm (:mod:`.algorithms`)."""
    from .algorithms import REGISTRY

    sd = system_from_options(options, algorithms=tuple(REGISTRY))
    given = sd
    sd = sd.with_default_network(nranks)
    if sd.npus != nranks:
        raise ConfigError(f"the network has {sd.npus} NPUs but the trace set has {nranks} ranks: give a network "
                          f"of {nranks} NPUs, or write 'npus_count: auto' on one of its dimensions to size it to "
                          "any set (examples/system/any_size.yaml)", sd.sources.get("network"))
    return replace(sd, warnings=[*default_notes(given, sd), *sd.warnings])


def default_notes(given: SystemDescription, sd: SystemDescription) -> list[str]:
    """What ``sd`` (ready to run) took from defaults rather than from the files ``given`` came from."""
    notes = []
    if not given.dimensions:
        d = sd.dimensions[0]
        notes.append(f"no network given: the default, one {d.topology} of {d.npus_count} NPUs, "
                     f"{d.bandwidth:g} GB/s and {d.latency:g} ns per link (choose one with --system or --network, "
                     "e.g. examples/system/any_size.yaml)")
    elif given.free_dimension is not None:
        d = sd.dimensions[given.free_dimension]
        notes.append(f"network dimension {given.free_dimension} ({d.topology}, npus_count: auto) sized to "
                     f"{d.npus_count} NPUs for the trace set")
    sample = sd.sample_settings_note()
    if sample:
        notes.append(sample)
    return notes


class SimpyBackend(Backend):
    """Simulate a trace set with SimPy on a system description (ASTRA-sim's analytical model)."""

    kind = "simulator"
    description = "built-in SimPy simulator reproducing ASTRA-sim's analytical network model"
    options = {
        **SYSTEM_OPTIONS,
        **TIMELINE_OPTIONS,
        "spans": Option("bool", False, "keep every simulated span in the Result (result.spans; written to "
                        "spans.npz in the output directory), for chakra report and diff"),
        "congestion": Option("str", "unaware", "network model", choices=("unaware", "aware")),
        "comm": Option("str", "model", "communication timing: 'model' (the network description) or 'replay' "
                       "(each communication node's recorded duration, from when its last member issued it)",
                       choices=("model", "replay")),
        "start_ns": Option("list", [], "when each rank starts (ns, in rank order; missing ones at 0), e.g. the "
                           "ranks' start times of a recording (with comm=replay, the default is each rank's recorded "
                           "start offset, metadata start_offset_ns, when the trace set has them)", unit="ns"),
        "symmetry": Option("bool", True, "simulate each class of identical ranks once"),
        "streams": Option("int", 1, "compute and communication ops in flight per rank", minimum=1),
        "critical_path_nodes": Option("int", 200, "most critical-path nodes listed", minimum=0),
        "jobs": Option("int", 0, "threads loading ranks, and taking their role keys, at once (0: one per CPU "
                       "core when the ranks' .et files hold 8 MiB or more; 1: one)", minimum=0),
        "stagger_limit": Option("int", WORK_LIMIT, "most chunk x step x member evaluations to time a "
                                "staggered collective per rank (larger ones, or 0: a barrier)", minimum=0),
    }

    def loads_compiled(self, traces: TraceSet, options: Mapping[str, Any]) -> bool:
        """Whether the run loads the core's compiled loops: with symmetry, when the ranks' files
        are enough for their role keys to be taken compiled (:data:`.symmetry.KEYS_COMPILED_FROM`);
        without, when they hold :data:`.loading.COMPILED_FROM` (the loading's rule)."""
        if options.get("symmetry", True):
            return keys_compiled_worthwhile(traces, traces.ranks, KEYS_COMPILED_FROM)
        return ranks_compiled_worthwhile(traces, traces.ranks, COMPILED_FROM)

    def algorithms(self) -> tuple[str, ...]:
        """Every registered algorithm's name (:mod:`.algorithms`): ASTRA-sim's and any added."""
        from .algorithms import REGISTRY

        return tuple(REGISTRY)

    def run(self, traces: TraceSet, options: Mapping[str, Any], output: Path | None) -> Result:
        """Simulate; the Result has per-rank times (ns), collective stats and a critical path."""
        nranks = _check_ranks(traces)
        sd = prepare_system(options, nranks)
        groups, differ = _groups(traces, sd, nranks)
        start_ns = _start_times(options["start_ns"], nranks)
        if not options["start_ns"] and options["comm"] == "replay":
            start_ns = _recorded_offsets(traces, nranks)
        trees = bool(options["symmetry"]) and members_finish_apart(sd)
        symmetry = bool(options["symmetry"]) and not trees and not any(start_ns)
        done, broken = _simulate_or_without_symmetry(traces, sd, groups, options, symmetry, start_ns)
        keep_spans = bool(options["timeline"] or options["spans"])
        spans, rows, path = _analyse(done, options["critical_path_nodes"], keep_spans)
        notes = list(sd.warnings) + load_notes(done.progs, done.classes, sd, options)
        notes += run_notes(done.sim.coll.tally, sd, options, symmetry, broken, trees, start_ns, differ)
        if any(start_ns) and not options["start_ns"]:
            notes.append(f"start times: each rank's recorded start offset (metadata {START_OFFSET_ATTR}; "
                         "-O start_ns overrides)")
        summary = _summary(done, nranks, rows, path, sd, options, symmetry and not broken)
        result = Result("simpy", self.kind, summary, rows, notes=notes)
        add_span_outputs(result, spans, options, "chakra simpy", output)
        return result


class _Simulated(NamedTuple):
    """A finished simulation: the programs simulated, the ranks each stands for, the group each
    group stands for, their actors, the engine, and the wall seconds loading and simulating took."""

    progs: list[Program]
    classes: list[list[int]]
    stands_for: dict[str, str]
    actors: list[Actor]
    sim: Sim
    load_s: float
    sim_s: float


def _check_ranks(traces: TraceSet) -> int:
    """The number of ranks; an error unless the trace set has every rank from 0 on."""
    nranks = len(traces)
    if nranks == 0:
        raise ConfigError("the trace set has no ranks")
    if traces.ranks[-1] != nranks - 1:
        have = set(traces.ranks)
        missing = [r for r in range(traces.ranks[-1] + 1) if r not in have]
        raise TraceFormatError(f"the trace set has ranks up to {traces.ranks[-1]} but no rank "
                               f"{missing[0]} ({len(missing)} missing): every NPU needs its trace "
                               "(the astrasim exporter pads missing ranks with an idle node)",
                               traces.source or None)
    return nranks


def _groups(traces: TraceSet, sd: SystemDescription, nranks: int) -> tuple[dict[str, tuple[int, ...]], list[str]]:
    """The process groups (the trace set's, overridden by the comm-group file's) and the names
    of those the file redefines."""
    groups = {k: tuple(sorted(v)) for k, v in traces.process_groups.items()}
    differ = sorted(k for k, v in sd.comm_groups.items() if k in groups and groups[k] != tuple(sorted(v)))
    groups.update({k: tuple(sorted(v)) for k, v in sd.comm_groups.items()})
    first = traces[traces.ranks[0]].label
    for name, ranks in groups.items():
        check_group_ranks(name, ranks, nranks, sd.sources.get("comm_groups") if name in sd.comm_groups else first)
    return groups, differ


def _simulate_or_without_symmetry(traces: TraceSet, sd: SystemDescription, groups: dict[str, tuple[int, ...]],
                                  options: Mapping[str, Any], symmetry: bool,
                                  start_ns: list[int]) -> tuple[_Simulated, str | None]:
    """Simulate; again without symmetry when ranks simulated as one finish a collective apart
    (then also why, else None)."""
    try:
        try:
            return _simulate(traces, sd, groups, options, symmetry, start_ns), None
        except SymmetryBroken as e:
            return _simulate(traces, sd, groups, options, False, start_ns), str(e)
    except NoLocalMemBandwidth as e:
        raise ConfigError(e.message, sd.sources.get("system"), "key 'local-mem-bw'") from None


def _analyse(done: _Simulated, critical_path_nodes: int, keep_spans: bool) -> tuple[Spans, list[dict], dict]:
    """The spans of the run, the per-rank rows and the critical path."""
    from .report import build_spans, path_summary, rank_rows

    with progress("analysing the run", total=2, unit="step") as bar:
        bar.status("spans")
        spans = build_spans(done.sim, kept=keep_spans)
        bar.advance()
        bar.status("critical path and per-rank times")
        rows, path = both(lambda: rank_rows(spans, done.actors),
                          lambda: path_summary(spans, done.sim, critical_path_nodes, keep_spans), len(spans))
        bar.advance()
    return spans, rows, path


def _summary(done: _Simulated, nranks: int, rows: list[dict], path: dict, sd: SystemDescription,
             options: Mapping[str, Any], symmetric: bool) -> dict[str, Any]:
    """The Result's summary (``symmetric``: symmetry was on and held)."""
    sim, actors, sim_s = done.sim, done.actors, done.sim_s
    # simulated events: every node completion of a simulated rank, every collective chunk phase
    events = sum(a.done for a in actors) + sim.coll.tally.phase_events
    return {
        "time_unit": "ns",
        "finish_ns": max(r["finish_ns"] for r in rows),
        "ranks": nranks,
        "congestion": options["congestion"],
        "comm": options["comm"],
        "symmetry": {"enabled": symmetric, "classes": len(actors),
                     "simulated_ranks": len(actors), "largest_class": max(len(c) for c in done.classes),
                     "by": ("identical traces" if options["congestion"] == "aware" else "role")
                     if symmetric else None},
        "events": events,
        "simpy_events": sim.simpy_events,
        "wall_s": {"load": round(done.load_s, 3), "simulate": round(sim_s, 3)},
        "events_per_s": int(events / sim_s) if sim_s > 0 else None,
        "mean_finish_ns": sum(r["finish_ns"] for r in rows) / nranks,
        "max_exposed_comm_ns": max(r["exposed_comm_ns"] for r in rows),
        "overlap_ns_total": sum(r["overlap_ns"] for r in rows),
        "collectives": _every_group([*sim.coll.stats.values(), *replayed_rows(actors)], done.stands_for),
        "critical_path": path,
        "system": {"npus": sd.npus, "dimensions": [d.__dict__ for d in sd.dimensions],
                   "sources": sd.sources},
    }


def _every_group(rows: list[dict], stands_for: dict[str, str]) -> list[dict]:
    """The rows of ``summary.collectives`` for every group of the set: a group no simulated rank
    issues on has the rows of the group its ranks' representatives issue on in its place (the
    same collectives, timed alike), so that symmetry changes no total."""
    by_group: dict[str, list[dict]] = {}
    for row in rows:
        by_group.setdefault(row["group"], []).append(row)
    out = list(rows)
    for group, simulated in stands_for.items():
        name, like = _row_group(group), _row_group(simulated)
        if name not in by_group:
            by_group[name] = [{**row, "group": name} for row in by_group.get(like, ())]
            out += by_group[name]
    return sorted(out, key=lambda s: (s["group"], s["collective"], s["replayed"]))


def _row_group(pg: str) -> str:
    """The ``group`` of a row of ``summary.collectives`` for collectives on ``pg``."""
    return "all" if pg in ("", "0") else pg


def _start_times(values: list, nranks: int) -> list[int]:
    """The ``start_ns`` option as one start time (ns) per rank."""
    if len(values) > nranks:
        raise ConfigError(f"start_ns gives {len(values)} start times for {nranks} ranks")
    out = []
    for v in values:
        t = _whole(v)
        if t is None:
            raise ConfigError(f"start_ns: {v!r} is not a whole number of ns")
        if t < 0:
            raise ConfigError(f"start_ns: {t} is negative")
        out.append(t)
    return out + [0] * (nranks - len(out))


def _whole(v: Any) -> int | None:
    """``v`` as a whole number (an int, a float without a fraction, or its decimal text); None
    for anything else (a fraction, a boolean, a word)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    digits = v.strip().removeprefix("-") if isinstance(v, str) else ""
    if digits.isascii() and digits.isdigit():
        return int(v)
    return v if type(v) is int else None


#: the global-metadata attribute in which a converter records a rank's start offset (ns)
START_OFFSET_ATTR = "start_offset_ns"


def _recorded_offsets(traces: TraceSet, nranks: int) -> list[int]:
    """Each rank's recorded start offset (metadata ``start_offset_ns``), the default start times
    of ``comm=replay``; all 0 unless every rank has one."""
    offsets = []
    for r in traces.ranks:
        found = [a for a in traces[r].metadata().attr if a.name == START_OFFSET_ATTR]
        slot = found[0].WhichOneof("value") if found else None
        offsets.append(getattr(found[0], slot) if slot in ("int64_val", "uint64_val", "int32_val") else -1)
    if len(offsets) != nranks or min(offsets, default=-1) < 0:
        return [0] * nranks
    return offsets


def _simulate(traces: TraceSet, sd: SystemDescription, groups: dict[str, tuple[int, ...]],
              options: Mapping[str, Any], symmetry: bool, start_ns: list[int]) -> _Simulated:
    """Load, build the actors and run (rank r from ``start_ns[r]``)."""
    from .engine import Sim

    t0 = time.perf_counter()
    nranks = len(traces)
    replay = options["comm"] == "replay"
    progs, classes, stands_for, compile_it = _load(traces, sd, groups, symmetry, options["congestion"] == "aware",
                                                   replay, options["jobs"])
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    for among_quiet in (True, False):  # again without it when a replay's end was left undecided
        actors = []
        rank_actor = [0] * nranks
        for k, (prog, ranks) in enumerate(zip(progs, classes)):
            actors.append(Actor(k, prog, ranks, options["streams"]))
            for r in ranks:
                rank_actor[r] = k
        timeline: list[tuple] | None = [] if options["timeline"] else None
        sim = Sim(actors, rank_actor, sd, groups, options["congestion"] == "aware", timeline,
                  1 << 62, options["stagger_limit"], replay, compile_it)
        sim.coll.closed_runs.quiet = among_quiet
        try:
            with watched(sim, nranks):
                sim.run([start_ns[a.rank] for a in actors])
        except Undecided:
            continue
        break
    return _Simulated(progs, classes, stands_for, actors, sim, load_s, time.perf_counter() - t1)


def _load(traces: TraceSet, sd: SystemDescription, groups: dict[str, tuple[int, ...]],
          symmetry: bool, aware: bool, replay: bool = False,
          jobs: int = 1) -> tuple[list[Program], list[list[int]], dict[str, str], bool]:
    """Programs of the ranks to simulate, the ranks each stands for and the group each group
    stands for (:mod:`.symmetry`), and whether the loops over them run compiled
    (:func:`chakra_core.ranks_compiled_worthwhile`); keyed and loaded by ``jobs`` threads
    (:func:`chakra_core.role_keys`, :func:`.loading.load_programs`; 0: as many as they choose).

    Members of a class whose representative has memory nodes on a shared remote memory
    (PER_NODE_MEMORY_EXPANSION, MEMORY_POOL) queue for it one by one: each is simulated.
    """
    from .planner import planner_for

    if symmetry:
        with progress("grouping ranks by role", total=len(traces)) as bar:
            classes, stands_for = role_classes(traces, planner_for(sd), groups, aware, bar, jobs)
    else:
        classes, stands_for = [[r] for r in traces.ranks], {}
    shared_mem = sd.remote_memory.memory_type in ("PER_NODE_MEMORY_EXPANSION", "MEMORY_POOL")
    progs: list[Program] = []
    out: list[list[int]] = []
    reps = [c[0] for c in classes]
    compile_it = ranks_compiled_worthwhile(traces, reps, COMPILED_FROM)
    with progress("loading ranks", total=len(classes)) as bar:
        first = load_programs(traces, reps, sd, replay, jobs, bar.advance, compile_it)
        for prog, ranks in zip(first, classes):
            if len(ranks) > 1 and shared_mem and prog.has_mem:
                progs += [prog] + [program_of(traces[r], sd, replay, compile_it) for r in ranks[1:]]
                out += [[r] for r in ranks]
            else:
                progs.append(prog)
                out.append(ranks)
    if len(out) > len(classes):  # members split off: every actor at its first rank's place, so
        # that ranks asking a shared memory at one ns are served in rank order, as without symmetry
        order = sorted(range(len(out)), key=lambda k: out[k][0])
        progs, out = [progs[k] for k in order], [out[k] for k in order]
    return progs, out, stands_for, compile_it
