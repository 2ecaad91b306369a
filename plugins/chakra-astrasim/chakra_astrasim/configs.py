"""ASTRA-sim's configuration files written from the system description, and their pitfall checks.

Every pitfall of the spec is either fixed here (and reported) or refused with a ConfigError:
``endpoint-delay`` below 1 ns is raised to 1; ``preferred-dataset-splits``,
``scheduling-policy`` and ``collective-optimization`` are always written; implementation lists
are made exactly one entry per network dimension (a short list is extended with its last entry,
a long one cut); ``doubleBinaryTree`` outside all-reduce or on a dimension whose NPU count is not
a power of two, and unknown names, are refused;
group ids start at 1 and name only ranks of the network.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from chakra_core import ConfigError, atomic_output, custom_collective
from chakra_core.system import (
    ALGORITHMS,
    COLLECTIVE_KINDS,
    COLLECTIVE_OPTIMIZATIONS,
    MEMORY_TYPES,
    SCHEDULING_POLICIES,
    TOPOLOGIES,
    SystemDescription,
    algorithm_base,
)

from .report import ExportReport

__all__ = ["system_json", "network_yml", "memory_json", "groups_json", "write_text", "custom_collectives",
           "missing_implementations",
           "CUSTOM_DIR", "CUSTOM_KEY_SPELLINGS"]

#: directory of the export holding the custom collectives' ETs: ``custom/<kind>.<rank>.et``.
CUSTOM_DIR = "custom"
#: spellings of the custom-collective keys an export can write: ASTRA-sim's current one first.
CUSTOM_KEY_SPELLINGS = ("custom", "chakra")


def _num(x: float) -> int | float:
    """A whole number as an int (ASTRA-sim reads some keys into integer types), else the float."""
    return int(x) if float(x).is_integer() else float(x)


def missing_implementations(sd: SystemDescription) -> list[str]:
    """Notes for the collective kinds a given system file has no implementation list for, which
    the export writes as ``ring`` on every dimension (call before a default network fills them)."""
    where = sd.sources.get("system")
    if where is None:
        return []
    return [f"'{kind}-implementation' not in {where}: written as ring on every dimension (ASTRA-sim run "
            f"on that file would time {kind} on no dimension)" for kind in COLLECTIVE_KINDS
            if not sd.implementation(kind) and kind not in sd.custom_implementations]


def _implementations(sd: SystemDescription, report: ExportReport) -> dict[str, list[str]]:
    n = len(sd.dimensions)
    out = {}
    for kind in COLLECTIVE_KINDS:
        impl = list(sd.implementation(kind)) or ["ring"]
        for name in impl:
            base, _ = algorithm_base(name)
            if base not in {algorithm_base(a)[0] for a in ALGORITHMS}:
                raise ConfigError(f"unknown {kind} implementation {name!r}; known: {', '.join(ALGORITHMS)}",
                                  sd.sources.get("system"))
            if base == "doubleBinaryTree" and kind != "all-reduce":
                raise ConfigError(f"doubleBinaryTree is an all-reduce algorithm, not a {kind} one",
                                  sd.sources.get("system"))
        if len(impl) < n:
            report.configs.append(f"{kind}-implementation had {len(impl)} entries for {n} dimensions: "
                                  f"extended with {impl[-1]!r} (a short list would silently restrict "
                                  f"ASTRA-sim to the first dimensions)")
            impl += [impl[-1]] * (n - len(impl))
        elif len(impl) > n:
            report.configs.append(f"{kind}-implementation had {len(impl)} entries for {n} dimensions: "
                                  "the extra ones were left out")
            impl = impl[:n]
        for d, name in enumerate(impl):
            base, _ = algorithm_base(name)
            p = sd.dimensions[d].npus_count
            if p & (p - 1) == 0:
                continue
            if base == "doubleBinaryTree":
                raise ConfigError(f"{kind}-implementation: doubleBinaryTree on dimension {d} of {p} NPUs; "
                                  "ASTRA-sim builds trees of a power-of-two size and crashes on the other "
                                  "NPUs (use ring or direct there)", sd.sources.get("system"))
            if base == "halvingDoubling":
                report.configs.append(f"{kind}-implementation: {name} on dimension {d} of {p} NPUs (not a "
                                      "power of two): ASTRA-sim's pairing assumes one; the simpy backend "
                                      "refuses it")
        out[f"{kind}-implementation"] = impl
    return out


def system_json(sd: SystemDescription, report: ExportReport, roofline: bool, peak_perf: float,
                custom_keys: str = "custom") -> dict:
    """The ``system.json`` mapping; ``roofline``/``peak_perf`` (TFLOPS) as the export decided;
    ``custom_keys``: the spelling of the custom-collective keys, ``custom``
    (``*-implementation-custom``, ASTRA-sim since June 2025) or ``chakra`` (the older one)."""
    if sd.scheduling_policy not in SCHEDULING_POLICIES:
        raise ConfigError(f"scheduling-policy must be one of {', '.join(SCHEDULING_POLICIES)}")
    if sd.collective_optimization not in COLLECTIVE_OPTIMIZATIONS:
        raise ConfigError(f"collective-optimization must be one of {', '.join(COLLECTIVE_OPTIMIZATIONS)}")
    delay = int(sd.endpoint_delay)
    if delay < 1:
        report.configs.append(f"endpoint-delay {sd.endpoint_delay} raised to 1 ns (0 aborts ASTRA-sim)")
        delay = 1
    splits = max(1, int(sd.preferred_dataset_splits))
    chunks = max(1, int(sd.active_chunks_per_dimension))
    if sd.local_mem_bw <= 0:
        raise ConfigError(f"'local-mem-bw' is {_num(sd.local_mem_bw)} GB/s (0 where the file leaves it out, as "
                          "ASTRA-sim's default): ASTRA-sim's reductions divide by it; set it above 0 in the system "
                          "file", sd.sources.get("system"), "key 'local-mem-bw'")
    out: dict = {
        "scheduling-policy": sd.scheduling_policy,
        "endpoint-delay": delay,
        "active-chunks-per-dimension": chunks,
        "preferred-dataset-splits": splits,
        **_implementations(sd, report),
        "collective-optimization": sd.collective_optimization,
        "local-reduction-delay": max(0, int(sd.local_reduction_delay)),
        "local-mem-bw": _num(sd.local_mem_bw),
        "roofline-enabled": 1 if roofline else 0,
        "replay-only": 1 if sd.replay_only else 0,
        "trace-enabled": 1 if sd.trace_enabled else 0,
    }
    if roofline:
        out["peak-perf"] = _num(peak_perf)
    for kind in sd.custom_implementations:
        out[f"{kind}-implementation-{custom_keys}"] = [f"{CUSTOM_DIR}/{kind}"]
    return out


def custom_collectives(sd: SystemDescription, npus: int) -> dict[str, list[Path]]:
    """Per custom collective kind, its ET files for ranks 0..npus-1 (copied into the export as
    ``custom/<kind>.<rank>.et``), checked as the simulator checks them
    (:func:`chakra_core.custom_collective`: a missing file, a bad peer, a cycle, a bad
    duration, an unmatched message ... raises, naming the file and node)."""
    return {kind: [Path(rt.label) for rt in custom_collective(sd, kind, npus)]
            for kind in sd.custom_implementations}


def network_yml(sd: SystemDescription) -> str:
    """The analytical ``network.yml`` text: one list entry per dimension, dimension 0 first."""
    dims = sd.dimensions
    if not dims:
        raise ConfigError("the system description has no network")
    for i, d in enumerate(dims):
        if d.topology not in TOPOLOGIES:
            raise ConfigError(f"network dimension {i}: topology {d.topology!r} is not one of "
                              f"{', '.join(TOPOLOGIES)}", sd.sources.get("network"))
        if d.npus_count < 2:
            raise ConfigError(f"network dimension {i}: npus_count must be > 1, got {d.npus_count}",
                              sd.sources.get("network"))
        if d.bandwidth <= 0 or d.latency < 0:
            raise ConfigError(f"network dimension {i}: bandwidth must be > 0 and latency >= 0",
                              sd.sources.get("network"))

    def row(values: Iterable[object]) -> str:
        return "[ " + ", ".join(str(v) for v in values) + " ]"

    return (
        "# ASTRA-sim analytical network, dimension 0 innermost; bandwidth GB/s (2^30 bytes), latency ns\n"
        f"topology: {row(d.topology for d in dims)}\n"
        f"npus_count: {row(d.npus_count for d in dims)}\n"
        f"bandwidth: {row(_num(d.bandwidth) for d in dims)}\n"
        f"latency: {row(_num(d.latency) for d in dims)}\n"
    )


def memory_json(sd: SystemDescription) -> dict:
    """The ``memory.json`` mapping (required by ASTRA-sim even when no memory node runs)."""
    m = sd.remote_memory
    if m.memory_type not in MEMORY_TYPES:
        raise ConfigError(f"memory-type must be one of {', '.join(MEMORY_TYPES)}", sd.sources.get("memory"))
    out: dict = {"memory-type": m.memory_type}
    if m.memory_type != "NO_MEMORY_EXPANSION":
        if m.remote_mem_bw <= 0:
            raise ConfigError(f"{m.memory_type} needs remote-mem-bw > 0 GB/s", sd.sources.get("memory"))
        out["remote-mem-latency"] = _num(m.remote_mem_latency)
        out["remote-mem-bw"] = _num(m.remote_mem_bw)
    if m.memory_type == "PER_NODE_MEMORY_EXPANSION":
        if m.num_nodes < 1 or m.num_npus_per_node < 1:
            raise ConfigError("PER_NODE_MEMORY_EXPANSION needs num-nodes and num-npus-per-node >= 1",
                              sd.sources.get("memory"))
        out["num-nodes"] = m.num_nodes
        out["num-npus-per-node"] = m.num_npus_per_node
    return out


def groups_json(groups: Mapping[str, Sequence[int]], npus: int) -> dict[str, list[int]]:
    """The communicator-group mapping: decimal ids from 1, each of >= 2 distinct network ranks."""
    out = {}
    for key, ranks in groups.items():
        if not key.isdigit() or int(key) < 1:
            raise ConfigError(f"group id {key!r}: ASTRA-sim needs decimal ids from 1 ('0' crashes it)")
        ranks = list(ranks)
        if len(set(ranks)) != len(ranks) or len(ranks) < 2 or any(not 0 <= r < npus for r in ranks):
            raise ConfigError(f"group {key}: needs >= 2 distinct ranks below {npus}, got {ranks}")
        out[key] = ranks
    return out


def _json(data: dict) -> str:
    """JSON with one key per line and lists kept on one line (readable groups.json)."""
    items = [f"  {json.dumps(str(k))}: {json.dumps(v)}" for k, v in data.items()]
    return "{\n" + ",\n".join(items) + "\n}\n"


def write_text(path: Path, text: str | dict, mode: int | None = None) -> Path:
    """Write ``text`` (a mapping is written as JSON) to ``path`` atomically."""
    if not isinstance(text, str):
        text = _json(text)
    with atomic_output(path) as tmp:
        Path(tmp).write_text(text)
        if mode is not None:
            Path(tmp).chmod(mode)
    return path
