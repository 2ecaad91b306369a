"""The ``emulator`` backend: options, plans, workers, and the Result."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chakra_core import (
    TIMELINE_OPTIONS,
    Backend,
    ConfigError,
    Option,
    Result,
    TraceFormatError,
    TraceSet,
    add_span_outputs,
    check_group_ranks,
    progress,
)
from chakra_core.system import SYSTEM_OPTIONS, system_from_options

from .plan import COMP, ROOTED, Plan, load_plan

if TYPE_CHECKING:

    from .measure import Measured

__all__ = ["EmulatorBackend"]

#: the most warm-up or measured iterations of one run
MOST_ITERATIONS = 1_000_000
#: the longest timeout taken (a week): past it torch's and gloo's own timeouts overflow
MOST_SECONDS = 7 * 24 * 3600.0


class EmulatorBackend(Backend):
    """Replay a trace set on this machine: one torch.distributed worker per rank."""

    kind = "emulator"
    description = "replay a Chakra ET set on real hardware (torch.distributed: gloo on CPU, NCCL on GPUs)"
    options = {
        **SYSTEM_OPTIONS,
        **TIMELINE_OPTIONS,
        "spans": Option("bool", False, "keep the measured spans of the last repeat in the Result "
                        "(result.spans; written to spans.npz in the output directory), for chakra report and diff"),
        "backend": Option("str", "auto", "torch.distributed backend (auto: nccl with one CUDA device per rank, "
                          "else gloo)", choices=("auto", "gloo", "nccl")),
        "device": Option("str", "auto", "where compute and buffers live", choices=("auto", "cpu", "cuda")),
        "streams": Option("int", 1, "compute and communication ops in flight per rank", minimum=1),
        "compute": Option("str", "real", "real: run a node's operator when it carries one; duration: replay "
                          "every compute node's recorded duration", choices=("real", "duration")),
        "real_memory_mb": Option("int", 4096, "most memory per rank for the real operators' tensors (the "
                                 "nodes past it run as kernels or host work)", unit="MiB", minimum=0),
        "kernel_sizing": Option("str", "duration", "a calibrated kernel lasts the node's duration, or (work) "
                                "does its num_ops and moves its tensor_size", choices=("duration", "work")),
        "compose": Option("list", [], "collective kinds (ALL_TO_ALL, REDUCE_SCATTER, ...) to compose from "
                          "other primitives even where the backend has them"),
        "warmup": Option("int", 1, "iterations run before the measured ones", minimum=0, maximum=MOST_ITERATIONS),
        "repeats": Option("int", 1, "measured iterations (mean and spread reported)", minimum=1,
                          maximum=MOST_ITERATIONS),
        "seed": Option("int", 0, "seed of every tensor's contents"),
        "node_timeout": Option("float", 60.0, "a node in flight longer than this stops the run", unit="s",
                               minimum=0.1, maximum=MOST_SECONDS),
        "startup_timeout": Option("float", 300.0, "most time for a worker to start (torch import, rendezvous, "
                                  "groups, preparation)", unit="s", minimum=1.0, maximum=MOST_SECONDS),
        "threads": Option("int", 1, "torch intra-op threads per worker (torch's pools crash far past a machine's "
                          "cores)", minimum=1, maximum=1024),
        "realtime": Option("bool", False, "every thread of the workers runs SCHED_FIFO (priority 1) once the "
                           "process groups exist, so that a woken thread preempts other jobs' threads at once "
                           "(Linux; needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of 1 or more)"),
        "recalibrate": Option("bool", False, "measure the kernel calibration again instead of using the cache"),
        "expected": Option("bool", True, "compute expected_ns and error with the simpy simulator"),
        "congestion": Option("str", "unaware", "network model of the simulation behind expected_ns "
                             "(the simpy backend's option)", choices=("unaware", "aware")),
        "critical_path_nodes": Option("int", 200, "most critical-path nodes listed", minimum=0),
        "node_rows": Option("int", 100_000, "most per-node rows (measured vs trace) in the result", minimum=0),
    }

    def run(self, traces: TraceSet, options: Mapping[str, Any], output: Path | None) -> Result:
        """Replay; the Result has the simulator's shape plus expected time, error, coverage,
        real-operator share, observed collectives and per-node measured vs trace times (ns)."""
        from .launch import run_workers
        from .realtime import check_realtime
        from .select import choose_placement, probe_cuda

        nranks = len(traces)
        if nranks == 0:
            raise ConfigError("the trace set has no ranks")
        if traces.ranks[-1] != nranks - 1:
            raise TraceFormatError(f"the trace set has ranks up to {traces.ranks[-1]} but only {nranks} "
                                   "files: every rank needs its trace", traces.source or None)
        if options["realtime"]:
            check_realtime()
        system_warnings = list(system_from_options(options).warnings)
        place = choose_placement(options["backend"], options["device"], nranks,
                                 probe_cuda() if options["backend"] != "gloo" and options["device"] != "cpu" else 0)
        t0 = time.perf_counter()
        with progress("planning ranks", total=nranks) as bar:
            plans = []
            for rt in traces:
                plans.append(load_plan(rt, operators=options["compute"] == "real"))
                bar.advance()
        groups = _groups(traces, options, nranks)
        _check_roots(plans, groups, nranks)
        job = _job(options, nranks, place, groups, plans)
        plan_s = time.perf_counter() - t0
        jobdir = Path(tempfile.mkdtemp(prefix="chakra-emulate-"))
        try:
            t1 = time.perf_counter()
            results = run_workers(jobdir, plans, job)
            run_s = time.perf_counter() - t1
        finally:
            shutil.rmtree(jobdir, ignore_errors=True)
        expected, sim_notes = _expected(traces, options) if options["expected"] else (None, [])
        result = _result(self.kind, plans, results, options, place, expected,
                         {"plan": round(plan_s, 3), "run": round(run_s, 3)})
        result.notes[:0] = system_warnings
        result.notes += [f"expected_ns: {note}" for note in sim_notes]
        if result.spans is not None and output is not None:
            result.files.append(str(result.spans.save(Path(output) / "spans.npz")))
        return result


def _groups(traces: TraceSet, options: Mapping[str, Any], nranks: int) -> dict[str, list[int]]:
    """The named process groups of the set (the comm-group file's override them); "0" and ""
    are the world, and so is a group listed without ranks (as PyTorch lists one of every rank)."""
    groups = {k: sorted(v) or list(range(nranks)) for k, v in traces.process_groups.items()}
    where: dict[str, str | None] = dict.fromkeys(groups, traces[traces.ranks[0]].label)
    if options.get("comm_groups"):
        sd = system_from_options(options)
        groups.update({k: sorted(v) for k, v in sd.comm_groups.items()})
        where.update(dict.fromkeys(sd.comm_groups, sd.sources.get("comm_groups")))
    out = {}
    for name, ranks in groups.items():
        if name in ("", "0"):
            continue
        check_group_ranks(name, ranks, nranks, where[name])
        out[name] = ranks
    return out


def _check_roots(plans: list[Plan], groups: dict[str, list[int]], nranks: int) -> None:
    """A TraceFormatError naming the file and node of a rooted collective whose root (a global
    rank) is not a member of its group: replayed from another rank, it would be another call."""
    for plan in plans:
        for nid, spec in zip(plan.ids, plan.spec):
            if spec is None or spec.get("type") not in ROOTED or spec.get("root") is None:
                continue
            members = groups.get(spec["pg"]) or range(nranks)
            if spec["root"] not in members:
                group = f"group {spec['pg']!r}" if spec["pg"] else "the world"
                raise TraceFormatError(f"{spec['type']} root {spec['root']} is not a member of {group} "
                                       f"({list(members)[:16]})", plan.label, f"node {nid}")


def _unrooted(plans: list[Plan]) -> int:
    """The rooted collectives without a root (replayed from their group's first rank)."""
    return sum(1 for p in plans for spec in p.spec
               if spec is not None and spec.get("type") in ROOTED and spec.get("root") is None)


def _job(options: Mapping[str, Any], nranks: int, place: Any, groups: dict[str, list[int]],
         plans: list[Plan]) -> dict[str, Any]:
    kernels = any(k == COMP and not cpu for p in plans for k, cpu in zip(p.kind, p.cpu))
    return {"world": nranks, "backend": place.backend, "device": place.device, "groups": groups,
            "streams": options["streams"], "compute": options["compute"], "kernel_sizing": options["kernel_sizing"],
            "warmup": options["warmup"], "repeats": options["repeats"], "seed": options["seed"],
            "node_timeout_s": float(options["node_timeout"]), "startup_timeout_s": float(options["startup_timeout"]),
            "pg_timeout_s": float(options["node_timeout"]) + 60.0, "threads": options["threads"],
            "realtime": bool(options["realtime"]), "calibrate": kernels, "recalibrate": bool(options["recalibrate"]),
            "compose": _compose_kinds(options["compose"]), "real_memory_mb": options["real_memory_mb"]}


def _compose_kinds(kinds: list[Any]) -> list[str]:
    """The ``compose`` option's kinds, checked against the schema's collective kinds."""
    from chakra_core import CommType

    names = [c.name for c in CommType]
    out = []
    for k in kinds:
        name = str(k).strip().upper()
        if name not in names:
            raise ConfigError(f"backend 'emulator': option 'compose': {k!r} is not a collective kind "
                              f"({', '.join(names)})")
        out.append(name)
    return out


def _expected(traces: TraceSet, options: Mapping[str, Any]) -> tuple[int, list[str]]:
    """The trace's own time as the simpy simulator replays it (recorded compute durations), and
    the simulator's notes (the network and system it took when none was given, ...)."""
    from chakra_core import simulate

    sim_opts = {k: options[k] for k in SYSTEM_OPTIONS if options.get(k) is not None}
    sim_opts["streams"] = options["streams"]
    sim_opts["congestion"] = options["congestion"]
    sim = simulate(traces, "simpy", options=sim_opts, validate=False)
    return int(sim.summary["finish_ns"]), list(sim.notes)


def _result(kind: str, plans: list[Plan], results: list[dict[str, Any]], options: Mapping[str, Any],
            place: Any, expected: int | None, wall: dict[str, float]) -> Result:
    """The emulator's Result from the workers' ``results``: per-rank rows averaged over the
    repeats; a summary of the mean finish and its errors against ``expected`` (the simpy
    replay, ns) and the trace's own path, the run's settings, the spread over repeats, the
    collectives, the critical path and per-node rows of the last repeat; notes; and the
    timeline and spans when ``options`` ask for them."""
    from chakra_core import critical_path

    from .measure import collectives_observed, node_rows, rank_spans
    from .spans import build_spans, rank_rows

    repeats = [rank_spans(plans, results, k) for k in range(options["repeats"])]
    per_repeat = [build_spans(rep, results) for rep in repeats]
    spans = per_repeat[-1]
    rows = _mean_rows([rank_rows(sp, plans) for sp in per_repeat])
    finishes = [_finish_ns(rep) for rep in repeats]
    observed, composed = collectives_observed(plans, results)
    summary: dict[str, Any] = {
        "time_unit": "ns",
        **_errors(plans, int(statistics.fmean(finishes)), expected),
        **_coverage(plans, results, repeats[-1]),
        "ranks": len(plans),
        **_settings(place, results, options),
        "repeats": {**_spread(finishes), "start_late_ns": _start_late_ns(results, len(finishes))},
        "wall_s": wall,
        **_rank_totals(rows),
        "collectives": observed,
        "composed": composed,
        "calibration": results[0].get("calibration"),
        "host_tail_ns": [r["host_tail_ns"] for r in results],
        "realtime": [r["realtime"] for r in results],
        "critical_path": critical_path(spans).to_dict(spans, options["critical_path_nodes"]),
    }
    nodes, text = node_rows(plans, results, repeats, options["node_rows"])
    summary["measured_vs_trace"] = text
    summary["nodes"] = nodes
    result = Result("emulator", kind, summary, rows,
                    notes=_notes(plans, results, summary, expected, set(_compose_kinds(options["compose"]))))
    add_span_outputs(result, spans, options, "chakra emulator")
    return result


def _finish_ns(repeat: list[Measured]) -> int:
    """When the last rank finished one repeat (ns from its start)."""
    return max(max(m.end, default=0) for m in repeat)


def _start_late_ns(results: list[dict[str, Any]], repeats: int) -> list[int]:
    """Per repeat, how late the latest rank started it (ns)."""
    return [max(r["iterations"][k]["late_ns"] for r in results) for k in range(repeats)]


def _errors(plans: list[Plan], finish: int, expected: int | None) -> dict[str, Any]:
    """``finish_ns`` and its relative errors against the simpy replay (``expected_ns``) and
    against the trace's own longest path (``trace_ns``)."""
    trace = max(p.path_ns for p in plans)
    return {
        "finish_ns": finish,
        "expected_ns": expected,
        "error": (finish / expected - 1) if expected else None,
        "trace_ns": trace,
        "trace_error": (finish / trace - 1) if any(p.path_ns for p in plans) else None,
    }


def _coverage(plans: list[Plan], results: list[dict[str, Any]], last: list[Measured]) -> dict[str, float]:
    """``coverage``: the share of nodes measured in the last repeat; ``real_ops``: the share of
    compute nodes that ran their real operator."""
    total = sum(len(p) for p in plans)
    comp = sum(k == COMP for p in plans for k in p.kind)
    real = sum(h == "real" for r in results for h in r["how"])
    return {"coverage": (sum(len(m.order) for m in last) / total) if total else 1.0,
            "real_ops": (real / comp) if comp else 0.0}


def _settings(place: Any, results: list[dict[str, Any]], options: Mapping[str, Any]) -> dict[str, Any]:
    """Where and how the run went: torch.distributed backend, device, torch version, options."""
    return {"backend": place.backend, "device": place.device, "torch": results[0]["torch"],
            **{k: options[k] for k in ("streams", "compute", "seed", "warmup")}}


def _rank_totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the ranks' rows: mean finish, largest exposed communication, total overlap (ns)."""
    return {"mean_finish_ns": statistics.fmean(r["finish_ns"] for r in rows),
            "max_exposed_comm_ns": max(r["exposed_comm_ns"] for r in rows),
            "overlap_ns_total": sum(r["overlap_ns"] for r in rows)}


def _mean_rows(per_repeat: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per rank, each number of :func:`spans.rank_rows` averaged over the repeats (ns)."""
    rows = []
    for cols in zip(*per_repeat):
        rows.append({k: (int(statistics.fmean(c[k] for c in cols)) if k.endswith("_ns") else v)
                     for k, v in cols[0].items()})
    return rows


def _spread(values: list[int]) -> dict[str, Any]:
    return {"count": len(values), "finish_ns": values, "mean_ns": statistics.fmean(values),
            "stdev_ns": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min_ns": min(values), "max_ns": max(values)}


def _notes(plans: list[Plan], results: list[dict[str, Any]], summary: dict[str, Any],
           expected: int | None, requested: set[str]) -> list[str]:
    notes = []
    for asked, why in ((True, "as option compose asks"), (False, f"the {summary['backend']} backend lacks")):
        kinds = ", ".join(f"{k} ({n})" for k, n in sorted(summary["composed"].items()) if (k in requested) == asked)
        if kinds:
            notes.append(f"collectives composed from the backend's primitives, {why}: {kinds}")
    unrooted = _unrooted(plans)
    if unrooted:
        notes.append(f"{unrooted} rooted collective(s) without a root attribute ran with their group's first rank "
                     "as root")
    hows: dict[str, int] = {}
    for r in results:
        for h in r["how"]:
            hows[h] = hows.get(h, 0) + 1
    parts = [f"{n} {h}" for h, n in sorted(hows.items())]
    notes.append("nodes ran as: " + ", ".join(parts))
    over = sum(r.get("over_budget", 0) for r in results)
    if over:
        notes.append(f"{over} compute node(s) with an operator ran as kernels or host work: their tensors "
                     "would pass real_memory_mb")
    if expected is not None:
        notes.append("expected_ns is the simpy simulator's replay of the recorded compute durations "
                     "(its network model for collectives)")
    if os.cpu_count() and len(plans) > (os.cpu_count() or 1):
        notes.append(f"{len(plans)} ranks on {os.cpu_count()} CPU cores: ranks share cores, times stretch")
    return notes
