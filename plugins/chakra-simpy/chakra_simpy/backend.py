"""The ``simpy`` simulator backend: options, loading, symmetry, running, and the Result."""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from chakra_core import (
    TIMELINE_OPTIONS,
    Backend,
    ConfigError,
    Option,
    Result,
    TraceFormatError,
    TraceSet,
    progress,
    write_timeline_from_options,
)
from chakra_core.system import SYSTEM_OPTIONS, SystemDescription, system_from_options

from .actor import Actor
from .collectives import SymmetryBroken
from .loading import load_programs
from .plans import uses_dbt
from .program import Program, load_program
from .stagger import WORK_LIMIT
from .symmetry import role_classes
from .timing import NoLocalMemBandwidth

__all__ = ["SimpyBackend", "prepare_system"]


def prepare_system(options: Mapping[str, Any], nranks: int) -> SystemDescription:
    """The system description from the ``system``/``network``/``memory``/``comm_groups``
    options (file paths), with a one-dimension Ring of ``nranks`` NPUs when no network is given
    and ring collectives where no implementation is given."""
    sd = system_from_options(options)
    sd = sd.with_default_network(nranks)
    if sd.npus != nranks:
        raise ConfigError(f"the network has {sd.npus} NPUs but the trace set has {nranks} ranks",
                          sd.sources.get("network"))
    return sd


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
                           "ranks' start times of a recording", unit="ns"),
        "symmetry": Option("bool", True, "simulate each class of identical ranks once"),
        "streams": Option("int", 1, "compute and communication ops in flight per rank", minimum=1),
        "critical_path_nodes": Option("int", 200, "most critical-path nodes listed", minimum=0),
        "jobs": Option("int", 0, "threads loading ranks at once (0: one per CPU core when the ranks' .et files "
                       "hold 8 MiB or more; 1: one)", minimum=0),
        "stagger_limit": Option("int", WORK_LIMIT, "most chunk x step x member evaluations to time a "
                                "staggered collective per rank (larger ones, or 0: a barrier)", minimum=0),
    }

    def run(self, traces: TraceSet, options: Mapping[str, Any], output: Path | None) -> Result:
        """Simulate; the Result has per-rank times (ns), collective stats and a critical path."""
        from .report import build_spans, path_summary, rank_rows

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
        sd = prepare_system(options, nranks)
        groups = {k: tuple(sorted(v)) for k, v in traces.process_groups.items()}
        differ = sorted(k for k, v in sd.comm_groups.items() if k in groups and groups[k] != tuple(sorted(v)))
        groups.update({k: tuple(sorted(v)) for k, v in sd.comm_groups.items()})
        for name, ranks in groups.items():
            if ranks and ranks[-1] >= nranks:
                raise ConfigError(f"group {name!r} names rank {ranks[-1]} but there are {nranks} ranks")
        start_ns = _start_times(options["start_ns"], nranks)
        trees = bool(options["symmetry"]) and uses_dbt(sd)
        symmetry = bool(options["symmetry"]) and not trees and not any(start_ns)
        try:
            try:
                progs, classes, actors, sim, (load_s, sim_s) = _simulate(traces, sd, groups, options, symmetry,
                                                                         start_ns)
                broken = None
            except SymmetryBroken as e:
                broken = str(e)
                progs, classes, actors, sim, (load_s, sim_s) = _simulate(traces, sd, groups, options, False,
                                                                         start_ns)
        except NoLocalMemBandwidth as e:
            raise ConfigError(e.message, sd.sources.get("system"), "key 'local-mem-bw'") from None
        keep_spans = bool(options["timeline"] or options["spans"])
        spans = build_spans(sim, names=keep_spans)
        with ThreadPoolExecutor(1) as pool:  # mostly numpy, which runs outside the GIL
            rows_of = pool.submit(rank_rows, spans, actors)
            path = path_summary(spans, sim, options["critical_path_nodes"], keep_spans)
            rows = rows_of.result()
        # simulated events: every node completion of a simulated rank, every collective chunk phase
        events = sum(a.done for a in actors) + sim.coll.phase_events
        finish = max(r["finish_ns"] for r in rows)
        notes = list(sd.warnings)
        notes += _notes(progs, classes, sd, options)
        if broken:
            notes.append(f"symmetry turned off: {broken}")
        if any(start_ns):
            notes.append("ranks started at their start_ns times (each simulated on its own)")
        if symmetry and not broken and options["congestion"] == "aware":
            notes.append("symmetry by identical traces only: congestion-aware links are shared per rank, "
                         "so ranks that differ in their groups or peers are simulated each")
        if trees:
            notes.append("symmetry turned off: doubleBinaryTree all-reduces finish at different times "
                         "on the ranks (leaf, intermediate, root)")
        if sim.coll.per_rank:
            notes.append(f"{sim.coll.per_rank} collective(s) whose members did not move in lockstep "
                         "were timed per rank (no barrier, as ASTRA-sim)")
        if sim.coll.approximated:
            notes.append(f"{sim.coll.approximated} collective(s) whose members did not move in lockstep, "
                         "too large for stagger_limit, were timed from the last member's start (barrier)")
        if sim.coll.by_message:
            notes.append(f"{sim.coll.by_message} collective(s) ran message by message on the shared links")
        if sim.coll.unshared:
            notes.append(f"{sim.coll.unshared} collective(s) (one* on several dimensions, custom over all "
                         "ranks) were timed as in the congestion-unaware mode: their messages do not take "
                         "the shared links")
        if sim.coll.custom_runs:
            notes.append(f"{sim.coll.custom_runs} collective(s) over all ranks ran their custom implementation "
                         f"({', '.join(f'{k}: {v}' for k, v in sd.custom_implementations.items())}): its ET's "
                         "messages, not the collective's comm_size, set the time")
        if differ:
            notes.append(f"the comm-group file redefines group(s) {', '.join(differ)} of the trace set; "
                         "the file wins")
        summary = {
            "time_unit": "ns",
            "finish_ns": finish,
            "ranks": nranks,
            "congestion": options["congestion"],
            "comm": options["comm"],
            "symmetry": {"enabled": symmetry and not broken, "classes": len(actors),
                         "simulated_ranks": len(actors), "largest_class": max(len(c) for c in classes),
                         "by": ("identical traces" if options["congestion"] == "aware" else "role")
                         if symmetry and not broken else None},
            "events": events,
            "simpy_events": sim.events,
            "wall_s": {"load": round(load_s, 3), "simulate": round(sim_s, 3)},
            "events_per_s": int(events / sim_s) if sim_s > 0 else None,
            "mean_finish_ns": sum(r["finish_ns"] for r in rows) / nranks,
            "max_exposed_comm_ns": max(r["exposed_comm_ns"] for r in rows),
            "overlap_ns_total": sum(r["overlap_ns"] for r in rows),
            "collectives": sorted(sim.coll.stats.values(), key=lambda s: (s["group"], s["collective"])),
            "critical_path": path,
            "system": {"npus": sd.npus, "dimensions": [d.__dict__ for d in sd.dimensions],
                       "sources": sd.sources},
        }
        result = Result("simpy", self.kind, summary, rows, notes=notes)
        if options["timeline"]:
            written = write_timeline_from_options(spans, options, "chakra simpy")
            result.timeline = str(options["timeline"])
            result.files.append(str(options["timeline"]))
            result.notes += [f"timeline {n}" for n in written["notes"]]
        if options["spans"]:
            result.spans = spans
            if output is not None:
                result.files.append(str(spans.save(Path(output) / "spans.npz")))
        return result


def _start_times(values: list, nranks: int) -> list[int]:
    """The ``start_ns`` option as one start time (ns) per rank."""
    if len(values) > nranks:
        raise ConfigError(f"start_ns gives {len(values)} start times for {nranks} ranks")
    out = []
    for v in values:
        try:
            t = int(v)
        except (TypeError, ValueError):
            raise ConfigError(f"start_ns: {v!r} is not a whole number of ns") from None
        if t < 0:
            raise ConfigError(f"start_ns: {t} is negative")
        out.append(t)
    return out + [0] * (nranks - len(out))


def _simulate(traces: TraceSet, sd: SystemDescription, groups: dict[str, tuple[int, ...]],
              options: Mapping[str, Any], symmetry: bool, start_ns: list[int]):
    """Load, build the actors and run (rank r from ``start_ns[r]``); returns programs, classes,
    actors, the Sim and ``(load wall s, simulate wall s)``."""
    from .engine import Sim

    t0 = time.perf_counter()
    nranks = len(traces)
    replay = options["comm"] == "replay"
    progs, classes = _load(traces, sd, groups, symmetry, options["congestion"] == "aware", replay,
                           options["jobs"])
    load_s = time.perf_counter() - t0
    actors = []
    rank_actor = [0] * nranks
    for k, (prog, ranks) in enumerate(zip(progs, classes)):
        actors.append(Actor(k, prog, ranks, options["streams"]))
        for r in ranks:
            rank_actor[r] = k
    timeline: list[tuple] | None = [] if options["timeline"] else None
    sim = Sim(actors, rank_actor, sd, groups, options["congestion"] == "aware", timeline,
              1 << 62, options["stagger_limit"], replay)
    t1 = time.perf_counter()
    sim.run([start_ns[a.rank] for a in actors])
    return progs, classes, actors, sim, (load_s, time.perf_counter() - t1)


def _load(traces: TraceSet, sd: SystemDescription, groups: dict[str, tuple[int, ...]],
          symmetry: bool, aware: bool, replay: bool = False, jobs: int = 1) -> tuple[list[Program], list[list[int]]]:
    """Programs of the ranks to simulate and the ranks each stands for (:mod:`.symmetry`),
    loaded by ``jobs`` threads (:func:`.loading.load_programs`).

    Members of a class whose representative has memory nodes on a shared remote memory
    (PER_NODE_MEMORY_EXPANSION, MEMORY_POOL) queue for it one by one: each is simulated.
    """
    from .plans import Planner

    if symmetry:
        with progress("grouping ranks by role", total=len(traces)) as bar:
            classes = role_classes(traces, Planner(sd), groups, aware, bar)
    else:
        classes = [[r] for r in traces.ranks]
    shared_mem = sd.remote_memory.memory_type in ("PER_NODE_MEMORY_EXPANSION", "MEMORY_POOL")
    progs: list[Program] = []
    out: list[list[int]] = []
    with progress("loading ranks", total=len(classes)) as bar:
        first = load_programs(traces, [c[0] for c in classes], sd, replay, jobs, bar.advance)
        for prog, ranks in zip(first, classes):
            if len(ranks) > 1 and shared_mem and prog.has_mem:
                progs += [prog] + [load_program(traces[r], sd, replay) for r in ranks[1:]]
                out += [[r] for r in ranks]
            else:
                progs.append(prog)
                out.append(ranks)
    return progs, out


def _notes(progs: list[Program], classes: list[list[int]], sd: SystemDescription,
           options: Mapping[str, Any]) -> list[str]:
    notes = []
    fallbacks = sum(p.roofline_fallbacks * len(c) for p, c in zip(progs, classes))
    if fallbacks:
        notes.append(f"{fallbacks} accelerator compute node(s) without an integer num_ops replayed "
                     "their duration instead of the roofline")
    unmodelled = sorted(set().union(*(p.unmodelled for p in progs)))
    if unmodelled:
        notes.append(f"collectives ASTRA-sim does not model ({', '.join(unmodelled)}) were timed by "
                     "the documented mappings (docs/simulator.md)")
    unknown = sorted(set().union(*(p.unknown_types for p in progs)))
    if unknown:
        notes.append(f"node types this schema does not know ({', '.join(map(str, unknown))}) were "
                     "skipped (no time; their dependencies pass through)")
    if any(p.has_mem for p in progs) and sd.remote_memory.memory_type == "NO_MEMORY_EXPANSION":
        notes.append("memory nodes replayed their duration (memory-type NO_MEMORY_EXPANSION; "
                     "ASTRA-sim aborts on them)")
    if options["comm"] == "replay":
        notes.append("comm=replay: communication lasted its recorded durations (a collective or a "
                     "send/receive pair the shortest of its members', from when the last member issued "
                     "it); the network description timed no communication")
    if options["congestion"] == "aware":
        notes.append("congestion-aware: every message crosses the links of its route first come first "
                     "served, latency plus serialization on each (ASTRA-sim's congestion-aware network)")
    return notes
