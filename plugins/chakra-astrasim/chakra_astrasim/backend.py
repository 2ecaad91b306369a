"""The ``astrasim`` exporter backend: a ready-to-run ASTRA-sim 2.x directory from a trace set.

Layout of the output directory::

    workload/<prefix>.<rank>.et   one per rank of the network, each with at least one node
    system.json network.yml memory.json [groups.json]
    run.sh                        ./run.sh [unaware|aware]
    report.json                   everything changed or dropped, with counts
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from chakra_core import (
    Backend,
    ConfigError,
    EtReader,
    EtWriter,
    GlobalMetadata,
    Option,
    Result,
    TraceFormatError,
    TraceSet,
    groups_by_rank,
    output_directory,
    progress,
    with_process_groups,
)
from chakra_core.system import SYSTEM_OPTIONS, system_from_options

from .checks import OrderCheck, check_p2p
from .collectives import RULES
from .configs import (
    CUSTOM_DIR,
    CUSTOM_KEY_SPELLINGS,
    custom_collectives,
    groups_json,
    memory_json,
    missing_implementations,
    network_yml,
    system_json,
    write_text,
)
from .groups import GroupPlan, plan_groups
from .plan import Plan
from .report import ExportReport
from .reuse import Converted, RankReuse, keys_compiled
from .runscript import BINARIES, command, run_sh
from .workload import idle_node

__all__ = ["AstraSimExporter", "export_astrasim"]

_PREFIX_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: what each spelling of the custom-collective keys means to ASTRA-sim (said in the report).
_SPELLING_HINT = {"custom": " (ASTRA-sim since June 2025; for an older one export with -O custom_keys=chakra)",
                  "chakra": " (ASTRA-sim before June 2025; a newer one ignores it)"}
#: GlobalMetadata.version written in every workload file (as the Chakra tools write it).
ET_VERSION = "0.0.4"


class AstraSimExporter(Backend):
    """Export a trace set as an ASTRA-sim directory (see the module docstring)."""

    kind = "exporter"
    description = "export a ready-to-run ASTRA-sim 2.x directory (workload, configs, run.sh, report)"
    options = {
        **SYSTEM_OPTIONS,
        "prefix": Option("str", "trace", "workload file prefix: workload/<prefix>.<rank>.et"),
        "durations": Option("str", "round", "compute durations: round to whole us (ASTRA-sim reads "
                                            "duration_micros), or roofline (exact ns through num_ops)",
                            choices=("round", "roofline")),
        "duration_attr": Option("str", "duration_ns", "integer node attribute holding an exact "
                                                      "duration in ns, when a trace has one ('' = none)"),
        "cpu_ops": Option("str", "drop_zero", "CPU compute nodes: keep, drop_zero (drop 0-duration "
                                              "bookkeeping ops), drop (all)",
                          choices=("keep", "drop_zero", "drop")),
        "memory_nodes": Option("str", "auto", "MEM_LOAD/MEM_STORE: keep (needs a remote memory), drop, "
                                              "auto (keep when the memory model has one)",
                               choices=("auto", "keep", "drop")),
        "unsupported": Option("str", "rewrite", "collective kinds ASTRA-sim does not run: rewrite "
                                                "(documented rule per kind), drop, error",
                              choices=("rewrite", "drop", "error")),
        "replay_broadcast": Option("bool", None, "BROADCAST: true = keep it (ASTRA-sim replays its "
                                                 "recorded duration), false = rewrite it; default: keep "
                                                 "one that has a duration, rewrite one that has none"),
        "barrier_bytes": Option("int", 4, "size of the all-reduce a BARRIER becomes", unit="bytes",
                                minimum=1),
        "incomplete_p2p": Option("str", "drop", "send/recv without a peer or size: drop or error",
                                 choices=("drop", "error")),
        "max_idle_ranks": Option("int", 4096, "most network NPUs without a trace rank (each gets a "
                                              "workload file of one idle node); more is refused",
                                 minimum=0),
        "join_limit": Option("int", 16, "a removed node handing more kept ancestors than this to "
                                        "several dependents is kept as a 0-duration join", minimum=1),
        "custom_keys": Option("str", "custom", "spelling of the custom-collective keys in system.json: "
                                               "custom (*-implementation-custom, ASTRA-sim since June "
                                               "2025) or chakra (*-implementation-chakra, older ASTRA-sim)",
                              choices=CUSTOM_KEY_SPELLINGS),
    }

    def run(self, traces: TraceSet, options: Mapping[str, Any], output: Path | None) -> Result:
        """Write the directory under ``output``; the Result carries the report and the commands."""
        if output is None:
            raise ConfigError("backend 'astrasim' needs an output directory (-o DIR)")
        return export_astrasim(traces, Path(output), options)


def _network(sd, trace_ranks: list[int], report: ExportReport, max_idle: int):
    """The description with its network: the given one (large enough, and not more than
    ``max_idle`` NPUs beyond the trace's ranks), or a default ring."""
    needed = max(trace_ranks) + 1
    free = sd.free_dimension
    if free is not None:
        sd = sd.fit(needed)
        d = sd.dimensions[free]
        report.configs.append(f"network dimension {free} ({d.topology}, npus_count: auto) sized to {d.npus_count} "
                              "NPUs for the trace set")
    if not sd.dimensions:
        npus = max(2, needed)
        sd = sd.with_default_network(npus)
        d = sd.dimensions[0]
        report.configs.append(f"no network given: one {d.topology} of {npus} NPUs, {d.bandwidth:g} GB/s, "
                              f"{d.latency:g} ns per link")
    elif sd.npus < needed:
        raise ConfigError(f"the network has {sd.npus} NPUs but the trace set has rank {needed - 1}",
                          sd.sources.get("network"))
    idle = sd.npus - len(trace_ranks)
    if idle > max_idle:
        raise ConfigError(f"the network has {sd.npus} NPUs but the trace set has {len(trace_ranks)} ranks: "
                          f"{idle} idle ranks would each get a workload file (limit max_idle_ranks="
                          f"{max_idle}; raise it with -O max_idle_ranks=N)", sd.sources.get("network"))
    return sd


def _aware_safe(sd, report: ExportReport):
    """The description with a one-dimension Ring of 2 NPUs written as a FullyConnected pair.

    ASTRA-sim's congestion-aware Ring links 0->1 both ways and then 1->0 again, which aborts
    (``Device::connect: Assertion '!connected(id)'``); a FullyConnected pair has the same single
    link of the same bandwidth and latency, one hop either way, so both binaries and the simpy
    backend time it exactly as the Ring.
    """
    dims = sd.dimensions
    if len(dims) != 1 or dims[0].topology != "Ring" or dims[0].npus_count != 2:
        return sd
    report.configs.append("a Ring of 2 NPUs is written as FullyConnected of 2 NPUs (the same timing; "
                          "ASTRA-sim's congestion-aware Ring of 2 aborts in Device::connect)")
    return replace(sd, dimensions=(replace(dims[0], topology="FullyConnected"),))


def _plan(traces: TraceSet, opts: Mapping[str, Any], sd, report: ExportReport):
    """Decide compute timing, memory nodes and groups: returns (plan, group plan)."""
    roofline, keep_ops, peak = False, False, 1.0
    if sd.roofline_enabled:
        roofline, keep_ops, peak = True, True, sd.peak_perf
    elif opts["durations"] == "roofline":
        roofline = True
        if sd.local_mem_bw < 2:
            raise ConfigError("durations=roofline needs local-mem-bw >= 2 GB/s to keep encoded "
                              "durations compute-bound", sd.sources.get("system"))
        report.configs.append("roofline-enabled 1 with peak-perf 1 TFLOPS: each accelerator compute "
                              "node's duration is encoded as num_ops = (ns + 0.5) * 1000, tensor_size 1, "
                              "exact to the ns (durations=roofline)")
    mem_type = sd.remote_memory.memory_type
    keep_mem = opts["memory_nodes"] == "keep" or (opts["memory_nodes"] == "auto"
                                                  and mem_type != "NO_MEMORY_EXPANSION")
    if keep_mem and mem_type == "NO_MEMORY_EXPANSION":
        raise ConfigError("memory_nodes=keep: ASTRA-sim aborts on memory nodes with NO_MEMORY_EXPANSION; "
                          "give a remote memory with --memory")
    gp = plan_groups(traces.process_groups, sd.comm_groups, sd.npus, traces.ranks, report)
    plan = Plan(npus=sd.npus, ndims=len(sd.dimensions), group_map=gp.group_map, members=gp.members,
                world_pg=gp.world_pg, cpu_ops=opts["cpu_ops"], keep_memory=keep_mem,
                unsupported=opts["unsupported"], replay_broadcast=opts["replay_broadcast"],
                barrier_bytes=opts["barrier_bytes"], incomplete_p2p=opts["incomplete_p2p"],
                roofline=roofline, keep_num_ops=keep_ops, peak_perf=peak, local_mem_bw=sd.local_mem_bw,
                duration_attr=opts["duration_attr"], join_limit=opts["join_limit"],
                splits=max(1, int(sd.preferred_dataset_splits)))
    return plan, gp


def _write_workload(traces: TraceSet, plan: Plan, gp: GroupPlan, wdir: Path, prefix: str,
                    report: ExportReport) -> None:
    """Convert and write every rank of the network; cross-rank checks go to ``report``."""
    wdir.mkdir(parents=True, exist_ok=True)
    order = OrderCheck(gp.members, report)
    p2p: Counter = Counter()
    # ASTRA-sim ignores metadata attributes; ours make the workload self-describing (each rank
    # its own groups: the set's are their union)
    own = groups_by_rank(gp.written)
    present = set(traces.ranks)
    idle: Counter = Counter()  # ranks given an idle node: "padded" (no trace), "filled" (emptied)
    reuse = RankReuse(plan, report, keys_compiled(traces, sorted(present)))
    with progress("writing the workload", total=plan.npus) as bar:
        for rank in range(plan.npus):
            res = reuse.convert(rank, traces[rank]) if rank in present else None
            raw = res.raw if res is not None else []
            if not raw:
                raw = [idle_node(rank, plan).SerializeToString()]
                idle["filled" if res is not None else "padded"] += 1
            res = res if res is not None else Converted([], {}, [], [], ExportReport())
            order.add(rank, res.collectives)
            for key in res.sends:
                p2p[key] += 1
            for key in res.recvs:
                p2p[key] -= 1
            meta = with_process_groups(GlobalMetadata(version=ET_VERSION), own(rank))
            with EtWriter(wdir / f"{prefix}.{rank}.et", meta) as w:
                for b in raw:
                    w.write_raw(b)
            bar.advance()
    report.ranks = {"trace": len(present), "network": plan.npus, "padded_with_idle_node": idle["padded"],
                    "emptied_given_idle_node": idle["filled"], "converted_once_reused": reuse.reused,
                    "converted_from_template": reuse.retargeted}
    order.finish()
    check_p2p(p2p, report)


def _copy_et(src: str | Path, dst: Path) -> None:
    """Copy the ``.et`` file ``src`` to ``dst`` as ASTRA-sim reads it: as it is, or, a file
    without a GlobalMetadata message (Chakra's converters of 2023), written again with empty
    metadata before the same node bytes (ASTRA-sim would take its first node for metadata)."""
    reader = EtReader(src)
    if reader.has_metadata:
        shutil.copyfile(src, dst)
        return
    with EtWriter(dst, reader.metadata) as w:
        for data in reader.raw():
            w.write_raw(data)


def export_astrasim(traces: TraceSet, output: str | Path, options: Mapping[str, Any] | None = None) -> Result:
    """Export ``traces`` to the directory ``output``; ``options`` as the backend declares them
    (missing ones take their defaults).  Returns the Result (summary, files, notes)."""
    opts = AstraSimExporter().check_options({k: v for k, v in (options or {}).items() if v is not None})
    output = Path(output)
    prefix = opts["prefix"]
    if not _PREFIX_RE.match(prefix):
        raise ConfigError(f"prefix {prefix!r}: use letters, digits, '_', '-', '.'")
    if not len(traces):
        raise TraceFormatError("the trace set has no ranks", traces.source or None)
    report = ExportReport()
    sd = system_from_options(opts)
    report.configs += [f"system description: {w}" for w in sd.warnings]
    sample = sd.sample_settings_note()
    if sample:
        report.configs.append(sample)
    report.configs += missing_implementations(sd)
    sd = _aware_safe(_network(sd, traces.ranks, report, opts["max_idle_ranks"]), report)
    plan, gp = _plan(traces, opts, sd, report)
    # configuration files first: a description ASTRA-sim cannot run fails before any work
    has_groups = bool(gp.written)
    one_dim = len(sd.dimensions) == 1
    cfg: dict[str, str | dict] = {
        "system.json": system_json(sd, report, plan.roofline, plan.peak_perf, opts["custom_keys"]),
        "network.yml": network_yml(sd),
        "memory.json": memory_json(sd),
    }
    if has_groups:
        cfg["groups.json"] = groups_json(gp.written, plan.npus)
    custom = custom_collectives(sd, plan.npus)
    commands = {
        "congestion_unaware": command(BINARIES["unaware"], prefix, has_groups),
        "congestion_aware": command(BINARIES["aware"], prefix, has_groups) if one_dim else None,
    }
    with output_directory(output) as stage:
        _write_workload(traces, plan, gp, stage / "workload", prefix, report)
        for name, content in cfg.items():
            write_text(stage / name, content)
        for kind, sources in custom.items():
            (stage / CUSTOM_DIR).mkdir(exist_ok=True)
            for r, src in enumerate(sources):
                _copy_et(src, stage / CUSTOM_DIR / f"{kind}.{r}.et")
            report.configs.append(f"custom {kind}: {len(sources)} ET files copied to {CUSTOM_DIR}/{kind}.<rank>.et "
                                  f"(ASTRA-sim times them with the message sizes they hold), named by "
                                  f"'{kind}-implementation-{opts['custom_keys']}' in system.json"
                                  + _SPELLING_HINT[opts["custom_keys"]])
        write_text(stage / "run.sh", run_sh(prefix, has_groups, one_dim), mode=0o755)
        report_data = {"report": report.to_dict(), "commands": commands,
                       "rules": {k.name: RULES[k] for k in RULES},
                       "units": {"durations": "us in duration_micros; ASTRA-sim cycles are ns",
                                 "sizes": "bytes"}}
        write_text(stage / "report.json", report_data)
    files = ([str(output / "workload" / f"{prefix}.{r}.et") for r in range(plan.npus)]
             + [str(output / CUSTOM_DIR / f"{kind}.{r}.et") for kind in custom for r in range(plan.npus)]
             + [str(output / name) for name in (*cfg, "run.sh", "report.json")])
    run_hint = f"cd {shlex.quote(str(output))} && ./run.sh"
    summary = {
        "directory": str(output),
        "ranks": plan.npus,
        "trace_ranks": len(traces),
        "nodes_in": report.nodes_in,
        "nodes_out": report.nodes_out,
        "removed": sum(report.removed.values()),
        "rewritten_collectives": sum(report.rewritten.values()),
        "groups": len(gp.written),
        "warnings": len(report.warnings),
        "command": run_hint,
        "report": report.to_dict(),
        "commands": commands,
    }
    notes = report.notes() + [
        f"run it: {run_hint} (binary from $CHAKRA_ASTRASIM_BIN or the PATH"
        + ("; './run.sh aware' for the congestion-aware one)" if one_dim else ")")]
    return Result("astrasim", "exporter", summary, files=files, notes=notes)

