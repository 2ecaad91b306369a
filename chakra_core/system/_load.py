"""Read system-description files of either format, tell them apart, merge and check them."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from chakra_core.base._docparse import decode_text, parse_json
from chakra_core.base._errors import ConfigError
from chakra_core.base._inputguard import note_inputs
from chakra_core.base._limits import check_limit
from chakra_core.base._options import suggest
from chakra_core.system._keys import (
    ASTRA_IGNORED_KEYS,
    ASTRA_UNMODELLED_KEYS,
    MEMORY_KEYS,
    NETWORK_KEYS,
    SYSTEM_KEYS,
    check_keys,
    strict_default,
)
from chakra_core.system._model import COLLECTIVE_KINDS, SystemDescription
from chakra_core.system._parse import parse_comm_groups, parse_memory, parse_network, parse_system
from chakra_core.system._values import Reader

__all__ = ["load_system", "read_config", "sniff", "check_system", "OUR_KEYS"]

#: keys of our YAML beyond ASTRA-sim's system.json keys.
OUR_KEYS = ("network", "compute", "remote-memory", "memory", "comm-groups")
_KINDS = ("ours", "astra-system", "astra-network", "astra-memory", "comm-groups")

Source = str | os.PathLike | Mapping[str, Any] | None


def read_config(source: str | os.PathLike | Mapping[str, Any]) -> tuple[Any, str, bool]:
    """Parse one file (JSON or YAML) or take a mapping as is.

    Returns ``(data, where, is_json)``; ``where`` names the file (``<mapping>`` for data).
    Raises ConfigError naming the file and line on a syntax error or a missing file.
    """
    if isinstance(source, Mapping):
        return dict(source), "<mapping>", False
    where = str(source)
    note_inputs([where])
    try:
        data = Path(where).read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read ({e.strerror or e})", where) from None
    text = decode_text(data, where)
    is_json = where.endswith(".json") or text.lstrip().startswith("{")
    if is_json:
        try:
            return parse_json(text, where), where, True
        except ConfigError:
            if where.endswith(".json"):
                raise
    from chakra_core.base._yamlparse import parse_yaml  # PyYAML only for a YAML file

    return parse_yaml(text, where), where, False


def sniff(data: Any, where: str, is_json: bool) -> str:
    """Which kind of file this is: ``ours``, ``astra-system``, ``astra-network``,
    ``astra-memory`` or ``comm-groups`` (by its keys, then by its extension)."""
    if isinstance(data, list) and data:  # our network's list of dimensions alone
        return "ours"
    if not isinstance(data, dict) or not data:
        raise ConfigError("empty or not a mapping of keys", where)
    keys = {str(k).replace("_", "-") for k in data}
    if keys & {k.replace("_", "-") for k in NETWORK_KEYS} and not keys & {"network", *SYSTEM_KEYS}:
        return "astra-network"
    if "memory-type" in keys and not keys & set(SYSTEM_KEYS):
        return "astra-memory"
    if all(str(k).isdigit() for k in data) or (not keys & {*OUR_KEYS, *SYSTEM_KEYS} and all(
            isinstance(v, list) or (isinstance(v, dict) and "ranks" in v) for v in data.values())):
        return "comm-groups"  # every value a list of ranks: a group file, whose keys are then checked
    if keys & set(OUR_KEYS):
        return "ours"
    if is_json and any("-" in str(k) for k in data) and keys & set(SYSTEM_KEYS):
        return "astra-system"
    if keys & set(SYSTEM_KEYS) or not is_json:
        return "ours"
    first = sorted(map(str, data))[0]
    every = (*SYSTEM_KEYS, *ASTRA_IGNORED_KEYS, *NETWORK_KEYS, *MEMORY_KEYS)
    raise ConfigError(f"not a system description: unknown keys {sorted(map(str, data))[:5]}"
                      f"{suggest(first, every)}", where)


def _refuse_unknown_memory_keys(mem: dict[str, Any], where: str) -> None:
    """A ConfigError for the first key of our YAML's ``remote-memory`` that is not a memory key."""
    extra_keys = Reader(mem, where).unknown(MEMORY_KEYS)
    if extra_keys:
        k = str(extra_keys[0]).replace("_", "-")
        raise ConfigError(f"unknown remote-memory key{suggest(k, MEMORY_KEYS)}; accepted: "
                          f"{', '.join(MEMORY_KEYS)}", where, f"key 'remote-memory.{extra_keys[0]}'")


def _ours(data: Any, where: str, algorithms: Collection[str]) -> tuple[dict[str, Any], list[str]]:
    if isinstance(data, list):
        data = {"network": data}
    data = dict(data)
    extra = {}
    for k in list(data):
        if str(k).replace("_", "-") in OUR_KEYS:
            extra[str(k).replace("_", "-")] = data.pop(k)
    known = set(SYSTEM_KEYS) | set(OUR_KEYS)
    for k in data:
        if str(k).replace("_", "-") not in known:
            raise ConfigError(f"unknown key{suggest(str(k).replace('_', '-'), sorted(known))}; "
                              f"accepted: {', '.join(sorted(known))}", where, f"key {k!r}")
    compute = extra.pop("compute", None)
    if compute is not None:
        if isinstance(compute, str):
            compute = {"model": compute}
        if not isinstance(compute, dict) or compute.get("model", "replay") not in ("replay", "roofline"):
            raise ConfigError("wants 'replay', 'roofline' or {model, peak-perf, local-mem-bw}",
                              where, "key 'compute'")
        for k, v in compute.items():
            kk = str(k).replace("_", "-")
            if kk == "model":
                data["roofline-enabled"] = v == "roofline"
            elif kk in ("peak-perf", "local-mem-bw"):
                data[kk] = v
            else:
                raise ConfigError("unknown compute key; accepted: model, peak-perf (TFLOPS), "
                                  "local-mem-bw (GB/s)", where, f"key 'compute.{k}'")
    has_system = bool(data) or compute is not None
    fields, warnings = parse_system(data, where, False, algorithms) if has_system else ({}, [])
    fields["_has_system"] = has_system
    # one name for an implementation means the same on every dimension (expanded in load_system)
    fields["_every_dim"] = {kind for kind in COLLECTIVE_KINDS
                            if isinstance(data.get(f"{kind}-implementation",
                                                   data.get(f"{kind.replace('-', '_')}_implementation")), str)}
    if "network" in extra:
        network, free = _free_dimension(extra["network"], where)
        dims = parse_network(network, where, astra=False)
        fields["dimensions"] = tuple(replace(d, npus_count=0) if i == free else d for i, d in enumerate(dims))
    mem = extra.get("remote-memory", extra.get("memory"))
    if mem is not None:
        if isinstance(mem, dict):
            _refuse_unknown_memory_keys(mem, where)
        fields["remote_memory"] = parse_memory(mem, where)
    if "comm-groups" in extra:
        fields["comm_groups"] = parse_comm_groups(extra["comm-groups"], where)
    return fields, warnings


def _astra_keys(kind: str, data: Any, where: str, strict: bool) -> list[str]:
    """:func:`check_keys` of an ASTRA-sim file of ``kind`` against the keys ASTRA-sim reads."""
    known = {"astra-system": (*SYSTEM_KEYS, *ASTRA_IGNORED_KEYS, *ASTRA_UNMODELLED_KEYS),
             "astra-network": NETWORK_KEYS, "astra-memory": MEMORY_KEYS}[kind]
    return check_keys(data, where, known, kind.removeprefix("astra-"), strict)


def _free_dimension(network: Any, where: str) -> tuple[Any, int | None]:
    """Our network list with its one ``npus_count: auto`` (or ``npus: auto``) dimension given a
    provisional count, and that dimension's index (None: no free dimension)."""
    if not isinstance(network, list):
        return network, None
    free = [i for i, item in enumerate(network) if isinstance(item, Mapping)
            and "auto" in (item.get("npus_count"), item.get("npus"))]
    if len(free) > 1:
        raise ConfigError("only one dimension may be sized to the trace set (npus_count: auto)", where,
                          f"network[{free[1]}]")
    if not free:
        return network, None
    item = {k: v for k, v in network[free[0]].items() if k != "npus"}
    return [*network[:free[0]], {**item, "npus_count": 1}, *network[free[0] + 1:]], free[0]


def load_system(system: Source = None, network: Source = None, memory: Source = None,
                comm_groups: Source = None, algorithms: Collection[str] = (),
                strict: bool | None = None) -> SystemDescription:
    """Build a :class:`SystemDescription` from files of either format.

    Each argument is a path, a parsed mapping, or None.  Every file is recognised by its
    content, so the argument it is passed as only has to be one of them: our YAML (any subset
    of the description), ASTRA-sim's ``system.json``, ``network.yml``, ``memory.json`` or a
    comm-group JSON.  Two files describing the same part (system, network, memory, groups) are
    an error.  In our YAML one implementation name (not a list) means every dimension.  With no network the result has
    no dimensions (see :meth:`SystemDescription.with_default_network`).  Raises ConfigError
    naming the file and the key for bad values and for ASTRA-sim's pitfalls.  ``algorithms``
    names collective algorithms the ``*-implementation`` keys may name besides ASTRA-sim's
    (:data:`ALGORITHMS`): those the backend that will run the description models
    (:attr:`chakra_core.Backend.algorithms`).  A key of an ASTRA-sim file that ASTRA-sim does not
    read is a warning naming the closest known key, or with ``strict`` (default: the
    environment variable ``CHAKRA_STRICT_KEYS``) a ConfigError; in our YAML it is always an error.
    """
    strict = strict_default() if strict is None else strict
    fields: dict[str, Any] = {}
    warnings: list[str] = []
    sources: dict[str, str] = {}
    seen: dict[str, str] = {}
    every_dim: set[str] = set()
    for source in (system, network, memory, comm_groups):
        if source is None:
            continue
        data, where, is_json = read_config(source)
        if source is comm_groups and isinstance(data, list):  # our network list otherwise
            raise ConfigError("a comm-group file wants an object of group names and their ranks "
                              '({"1": [0, 1]}), not a list', where)
        kind = sniff(data, where, is_json)
        if kind.startswith("astra-"):
            warnings += _astra_keys(kind, data, where, strict)
        if kind == "ours":
            f, w = _ours(data, where, algorithms)
            parts = [p for p, present in (("system", f.pop("_has_system")), ("network", "dimensions" in f),
                                          ("memory", "remote_memory" in f),
                                          ("comm_groups", "comm_groups" in f)) if present]
        else:
            parts = [{"astra-system": "system", "astra-network": "network", "astra-memory": "memory",
                      "comm-groups": "comm_groups"}[kind]]
        for part in parts:
            if part in seen:
                raise ConfigError(f"two {part.replace('_', '-')} descriptions given ({seen[part]} and {where})",
                                  where)
            seen[part] = where
        if kind == "ours":
            every_dim |= f.pop("_every_dim")
            if "system" in parts:
                # our YAML defaults every implementation it does not name to ring everywhere
                for k in COLLECTIVE_KINDS:
                    key = k.replace("-", "_") + "_implementation"
                    if not f.get(key):
                        f[key] = ("ring",)
                        every_dim.add(k)
            fields.update(f)
            warnings += w
            for part in parts:
                sources[part] = where
        elif kind == "astra-system":
            f, w = parse_system(data, where, True, algorithms)
            fields.update(f)
            warnings += w
            sources["system"] = where
        elif kind == "astra-network":
            fields["dimensions"] = parse_network(data, where, astra=True)
            sources["network"] = where
        elif kind == "astra-memory":
            fields["remote_memory"] = parse_memory(data, where)
            sources["memory"] = where
        else:
            fields["comm_groups"] = parse_comm_groups(data, where)
            sources["comm_groups"] = where
    ndims = len(fields.get("dimensions", ()))
    for kind in every_dim:
        key = kind.replace("-", "_") + "_implementation"
        fields[key] = fields[key] * max(ndims, 1)
    sd = SystemDescription(**fields, sources=sources)
    sd.warnings.extend(warnings)
    return check_system(sd)


def check_system(sd: SystemDescription) -> SystemDescription:
    """Cross-checks between parts (implementation lists vs dimensions, groups vs NPUs).

    Returns ``sd`` with warnings added; raises ConfigError for what ASTRA-sim cannot run.
    """
    n = len(sd.dimensions)
    warnings = list(sd.warnings)
    if n:
        where = sd.sources.get("system", "<defaults>")
        for kind in COLLECTIVE_KINDS:
            impl = sd.implementation(kind)
            if ("system" not in sd.sources and not impl) or kind in sd.custom_implementations:
                continue
            if len(impl) < n:
                warnings.append(
                    f"{where}: '{kind}-implementation' lists {len(impl)} of {n} dimensions; ASTRA-sim "
                    f"silently runs {kind} on the first {len(impl)} dimension(s) only")
            elif len(impl) > n:
                warnings.append(f"{where}: '{kind}-implementation' lists {len(impl)} entries for "
                                f"{n} dimensions; ASTRA-sim asserts on this (debug builds) or ignores "
                                "the extra ones")
        npus = check_limit("npus", sd.npus, "NPU count (the product of npus_count)",
                           sd.sources.get("network"), error=ConfigError)
        gwhere = sd.sources.get("comm_groups", "<comm groups>")
        for name, ranks in sd.comm_groups.items() if sd.free_dimension is None else ():
            bad = [r for r in ranks if r >= npus]
            if bad:
                raise ConfigError(f"group {name!r} names rank {bad[0]} but the network has {npus} NPUs",
                                  gwhere, f"key {name!r}")
        mem = sd.remote_memory
        if mem.memory_type == "PER_NODE_MEMORY_EXPANSION" and mem.num_nodes * mem.num_npus_per_node < npus:
            warnings.append(f"{sd.sources.get('memory', '<memory>')}: PER_NODE_MEMORY_EXPANSION covers "
                            f"{mem.num_nodes} x {mem.num_npus_per_node} NPUs of {npus}")
    if sd.roofline_enabled and (sd.peak_perf <= 0 or sd.local_mem_bw <= 0):
        raise ConfigError("roofline compute needs 'peak-perf' (TFLOPS) and 'local-mem-bw' (GB/s) > 0",
                          sd.sources.get("system"), "key 'roofline-enabled'")
    return replace(sd, warnings=warnings)
