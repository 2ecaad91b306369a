"""Parse each part of a system description from plain data (already read from a file).

The same keys serve ASTRA-sim's files and our YAML (``-`` or ``_`` both accepted in ours);
what differs is the defaults: ASTRA-sim's ``system.json`` has no default for
``preferred-dataset-splits`` (it divides by zero), none for ``scheduling-policy`` and
``collective-optimization`` (uninitialized), and 0 for ``local-mem-bw``; our YAML defaults to
the values of ASTRA-sim's sample configuration.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from typing import Any

from chakra_core.base._errors import ConfigError
from chakra_core.base._limits import INT32_MAX, check_limit
from chakra_core.system._keys import ASTRA_UNMODELLED_KEYS, CUSTOM_SPELLINGS
from chakra_core.system._model import (
    ALGORITHMS,
    COLLECTIVE_KINDS,
    COLLECTIVE_OPTIMIZATIONS,
    MEMORY_TYPES,
    SCHEDULING_POLICIES,
    TOPOLOGIES,
    Dimension,
    RemoteMemory,
    algorithm_base,
)
from chakra_core.system._paths import resolve_prefix
from chakra_core.system._values import Reader

#: the simulators' clock: int64 nanoseconds
_CLOCK_NS = (1 << 63) - 1

__all__ = [
    "parse_system",
    "parse_network",
    "parse_memory",
    "parse_comm_groups",
]

def _implementation(r: Reader, kind: str, astra: bool, algorithms: Collection[str]) -> tuple[str, ...]:
    key = f"{kind}-implementation"
    k = r.key(key)
    if k is None:
        return ()
    v = r.data[k]
    if isinstance(v, str) and not astra:
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise r.fail(k, f"wants a list of algorithm names (one per dimension), got {v!r}")
    if not v and not astra:  # our YAML's default is the key left out (ring everywhere)
        raise r.fail(k, "an empty list: give one algorithm name per dimension, or leave the key out for ring")
    if not v:  # ASTRA-sim runs a collective on as many dimensions as the list names: none
        raise r.fail(k, "an empty list: ASTRA-sim would run the collective on no dimension; give one "
                     "algorithm name per dimension")
    for name in v:
        base, window = algorithm_base(name)
        if window is not None and window > INT32_MAX:
            raise r.fail(k, f"the window of {name!r} is past {INT32_MAX} (ASTRA-sim reads it as an int)")
        if base in algorithms and base not in ALGORITHMS:
            continue
        if base not in ALGORITHMS or (name.startswith("one") and base == "doubleBinaryTree"):
            accepted = ", ".join([*ALGORITHMS, *sorted(set(algorithms) - set(ALGORITHMS))])
            raise r.fail(k, f"unknown implementation {name!r}; accepted: {accepted}, directN")
        if base == "doubleBinaryTree" and kind != "all-reduce":
            raise r.fail(k, "doubleBinaryTree exists for all-reduce only in ASTRA-sim")
    return tuple(v)


def _custom(r: Reader, kind: str, astra: bool, warnings: list[str]) -> str | None:
    """The ET prefix of a custom ``kind`` (``PREFIX.<rank>.et`` per rank) from either spelling of
    its key; a relative prefix is taken from the working directory, then from the file's folder
    (:func:`resolve_prefix`); rank 0's file must exist."""
    found = [k for k in (r.key(f"{kind}-implementation-{s}") for s in CUSTOM_SPELLINGS) if k is not None]
    if not found:
        return None
    k = found[0]
    values = [r.data[x] for x in found]
    if len(found) == 2 and values[0] != values[1]:
        raise r.fail(found[1], f"names another ET than {found[0]!r}: give one of the two spellings, "
                               "or both with the same prefix")
    v = values[0]
    if isinstance(v, list) and len(v) == 1:
        v = v[0]
    if not isinstance(v, str) or not v:
        raise r.fail(k, f"wants one ET path prefix (the list takes exactly one: the ET holds every "
                        f"dimension), got {v!r}")
    if astra and found == [r.key(f"{kind}-implementation-chakra")]:
        warnings.append(f"{r.where}: {k!r} is the key's spelling before June 2025: ASTRA-sim since then "
                        f"reads '{kind}-implementation-custom' and runs its built-in {kind} otherwise")
    return resolve_prefix(v, ".0.et", r.where, r.loc(k),
                          f"the custom {kind} needs one Chakra ET per rank, PREFIX.<rank>.et")


def parse_system(data: Any, where: str, astra: bool,
                 algorithms: Collection[str] = ()) -> tuple[dict[str, Any], list[str]]:
    """Fields of :class:`SystemDescription` from system keys, and warnings.

    ``astra``: the data is ASTRA-sim's ``system.json`` (its defaults and pitfalls apply);
    otherwise our YAML (whose own extra keys the caller removes first).  ``algorithms``: names of
    collective algorithms accepted besides ASTRA-sim's (:data:`ALGORITHMS`), those a backend models.
    """
    r = Reader(data, where)
    warnings: list[str] = []
    f: dict[str, Any] = {}
    if astra:
        if not r.has("preferred-dataset-splits"):
            raise ConfigError("'preferred-dataset-splits' is missing: ASTRA-sim has no default and "
                              "divides by zero (crash); set it, e.g. 4", where, "key 'preferred-dataset-splits'")
        for key, default in (("scheduling-policy", "LIFO"), ("collective-optimization", "baseline")):
            if not r.has(key):
                warnings.append(f"{where}: {key!r} not set; ASTRA-sim leaves it uninitialized "
                                f"(always set it); assuming {default}")
    f["scheduling_policy"] = r.choice("scheduling-policy", "LIFO", SCHEDULING_POLICIES)
    f["collective_optimization"] = r.choice(
        "collective-optimization", "baseline" if astra else "localBWAware", COLLECTIVE_OPTIMIZATIONS)
    f["endpoint_delay"] = r.number("endpoint-delay", 10, 1, integer=True,
                                   why="ASTRA-sim aborts on an endpoint delay of 0", maximum=INT32_MAX)
    f["local_reduction_delay"] = r.number("local-reduction-delay", 1, 0, integer=True, maximum=INT32_MAX)
    f["active_chunks_per_dimension"] = r.number("active-chunks-per-dimension", 1, 1, integer=True,
                                                maximum=INT32_MAX)
    f["preferred_dataset_splits"] = r.number("preferred-dataset-splits", 4, 1, integer=True,
                                             why="chunk size is size / splits", maximum=INT32_MAX)
    f["local_mem_bw"] = _bandwidth(r, "local-mem-bw", 0.0 if astra else 50.0, 1e9)
    if astra and not r.has("local-mem-bw"):
        warnings.append(f"{where}: 'local-mem-bw' not set; ASTRA-sim takes 0 GB/s, so any "
                        "reduction or roofline timing divides by zero")
    f["roofline_enabled"] = r.flag("roofline-enabled", False)
    f["peak_perf"] = float(r.number("peak-perf", 0.0, 0))
    f["replay_only"] = r.flag("replay-only", False)
    f["trace_enabled"] = r.flag("trace-enabled", False)
    custom = {}
    for kind in COLLECTIVE_KINDS:
        f[kind.replace("-", "_") + "_implementation"] = _implementation(r, kind, astra, algorithms)
        prefix = _custom(r, kind, astra, warnings)
        if prefix is not None:
            custom[kind] = prefix
    if custom:
        f["custom_implementations"] = custom
    if f["roofline_enabled"]:
        if f["peak_perf"] <= 0:
            raise r.fail("peak-perf", "roofline-enabled needs 'peak-perf' > 0 (TFLOPS)")
        if f["local_mem_bw"] <= 0:
            raise r.fail("local-mem-bw", "roofline-enabled needs 'local-mem-bw' > 0 (GB/s)")
    for key in ASTRA_UNMODELLED_KEYS:
        if r.has(key):
            warnings.append(f"{where}: {key!r} ({r.raw(key)!r}) is not modelled: ASTRA-sim runs the "
                            "collectives that file lists by their own ETs; here they run as the others do")
    return f, warnings


def _dims_from_lists(r: Reader) -> list[dict[str, Any]]:
    keys = ("topology", "npus_count", "bandwidth", "latency")
    lists = {}
    for k in keys:
        kk = r.key(k)
        if kk is None:
            close = difflib.get_close_matches(k, [str(x) for x in r.unknown(keys)], n=1, cutoff=0.6)
            hint = f" (the file has {close[0]!r}: misspelt?)" if close else ""
            raise ConfigError(f"network key {k!r} is missing (one entry per dimension){hint}", r.where,
                              r.loc(k))
        v = r.data[kk]
        if not isinstance(v, list) or not v:
            raise r.fail(kk, f"wants a list with one entry per dimension, got {v!r}")
        lists[k] = v
    n = len(lists["topology"])
    for k in keys:
        if len(lists[k]) != n:
            raise r.fail(k, f"has {len(lists[k])} entries but 'topology' has {n}: "
                            "every network list needs one entry per dimension")
    return [{k: lists[k][i] for k in keys} for i in range(n)]


def _bandwidth(r: Reader, key: str, default: float, gigabyte: float) -> float:
    """``key`` in GB/s (of ``gigabyte`` bytes), 0 or more; a positive one so low that one byte
    takes past 2**63-1 ns (the simulators' clock) is refused naming the file and the key."""
    bw = float(r.number(key, default, 0))
    if 0 < bw and bw * gigabyte * _CLOCK_NS < 1e9:
        raise r.fail(r.key(key) or key, f"{bw!r} GB/s is too low: one byte would take past 2**63-1 ns, "
                     f"the simulated clock's range; give at least {1e9 / (gigabyte * _CLOCK_NS):.2g} GB/s")
    return bw


def _latency(r: Reader, key: str, default: float) -> float:
    """``key`` in ns, 0 or more and within the simulators' clock (2**63-1 ns), else refused
    naming the file and the key."""
    lat = float(r.number(key, default, 0))
    if lat > _CLOCK_NS:
        raise r.fail(r.key(key) or key, f"{lat!r} ns is past 2**63-1 ns, the simulated clock's range")
    return lat


def parse_network(data: Any, where: str, astra: bool) -> tuple[Dimension, ...]:
    """Network dimensions from ASTRA-sim's ``network.yml`` lists, or (ours) a list of
    ``{topology, npus_count (or npus), bandwidth, latency}`` mappings."""
    if isinstance(data, list) and not astra:
        if not data:
            raise ConfigError("an empty list: give one {topology, npus_count, bandwidth, latency} mapping per "
                              "dimension, or leave 'network' out for the default", where, "key 'network'")
        items, prefix = data, "network"
    else:
        r = Reader(data, where)
        items, prefix = _dims_from_lists(r), ""
    dims = []
    for i, item in enumerate(items):
        ir = Reader(item, where, f"{prefix or 'network'}[{i}].")
        if "npus" in item and "npus_count" not in item:
            item = dict(item, npus_count=item["npus"])
            ir = Reader(item, where, ir.prefix)
        for k in ("topology", "npus_count", "bandwidth", "latency"):
            if not ir.has(k):
                raise ConfigError(f"dimension {i}: {k!r} is missing", where, ir.loc(k))
        topo = ir.choice("topology", "Ring", TOPOLOGIES)
        npus = ir.number("npus_count", 0, 2 if astra else 1, integer=True,
                         why="ASTRA-sim needs more than one NPU per dimension")
        check_limit("npus", npus, "npus_count", where, ir.loc("npus_count"), ConfigError)
        bw = _bandwidth(ir, "bandwidth", 0, 2**30)
        if bw <= 0:
            raise ir.fail("bandwidth", f"must be > 0 GB/s, got {bw!r}")
        lat = _latency(ir, "latency", 0)
        if not astra:
            extra = ir.unknown(("topology", "npus_count", "npus", "bandwidth", "latency"))
            if extra:
                raise ir.fail(extra[0], "unknown dimension key; accepted: topology, npus_count, "
                                        "bandwidth (GB/s), latency (ns)")
        dims.append(Dimension(topo, npus, bw, lat))
    return tuple(dims)


def parse_memory(data: Any, where: str) -> RemoteMemory:
    """The remote-memory model from ``memory.json`` keys."""
    r = Reader(data, where)
    mtype = r.choice("memory-type", "NO_MEMORY_EXPANSION", MEMORY_TYPES)
    lat = _latency(r, "remote-mem-latency", 0.0)
    bw = _bandwidth(r, "remote-mem-bw", 0.0, 1e9)
    nodes = r.number("num-nodes", 0, 0, integer=True, maximum=INT32_MAX)
    per_node = r.number("num-npus-per-node", 0, 0, integer=True, maximum=INT32_MAX)
    if mtype != "NO_MEMORY_EXPANSION" and bw <= 0:
        raise r.fail("remote-mem-bw", f"{mtype} needs 'remote-mem-bw' > 0 (GB/s)")
    if mtype == "PER_NODE_MEMORY_EXPANSION" and (nodes < 1 or per_node < 1):
        raise r.fail("num-nodes", "PER_NODE_MEMORY_EXPANSION needs 'num-nodes' and "
                                  "'num-npus-per-node' >= 1")
    return RemoteMemory(mtype, lat, bw, nodes, per_node)


def parse_comm_groups(data: Any, where: str) -> dict[str, tuple[int, ...]]:
    """Communicator groups ``{"1": [ranks], ...}`` (also ``{"1": {"ranks": [...]}}``)."""
    r = Reader(data, where)
    out: dict[str, tuple[int, ...]] = {}
    for key, value in r.data.items():
        name = str(key)
        if not name.isdigit() or not name.isascii():
            raise r.fail(name, f"group key {name!r} must be a whole number (ASTRA-sim numbers groups from 1)")
        if name == "0":
            raise r.fail(name, "group key '0' crashes ASTRA-sim ('0' means all ranks); "
                               "number groups from 1")
        if isinstance(value, dict) and "ranks" in value:
            value = value["ranks"]
        if not isinstance(value, list) or not value or not all(
                isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in value):
            raise r.fail(name, f"wants a non-empty list of rank numbers, got {value!r}")
        if len(set(value)) != len(value):
            raise r.fail(name, "lists a rank twice")
        check_limit("rank", max(value), "rank", where, r.loc(name), ConfigError)
        out[name] = tuple(value)
    return out
