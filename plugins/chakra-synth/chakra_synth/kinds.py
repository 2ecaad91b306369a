"""The model's kind table and per-kind distributions (what a model says about node kinds)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from chakra_core import PG_INIT_NAME, CommType, NodeType

from .profile import KindTable, RankProfile
from .quantiles import granularity, kind_table

__all__ = ["kinds_json", "kind_stats", "node_label", "populations"]


def kinds_json(kinds: KindTable, keep_names: bool) -> list[dict[str, Any]]:
    """The kinds as the model stores them: type, collective type, CPU flag, and the name (with
    its digits taken out) only with ``keep_names``."""
    out = []
    for t, ct, cpu, label in kinds.keys:
        d: dict[str, Any] = {"type": NodeType(t).name if 0 <= t <= 7 else t, "cpu": cpu}
        if ct >= 0:
            d["comm_type"] = CommType(ct).name if ct in CommType._value2member_map_ else ct
        if keep_names:
            d["name"] = label
        out.append(d)
    return out


def type_number(kind: dict[str, Any]) -> int:
    """The node type of a model kind."""
    t = kind["type"]
    return int(NodeType[t]) if isinstance(t, str) else int(t)


def comm_type_number(kind: dict[str, Any]) -> int:
    """The collective type of a model kind (-1 when it has none)."""
    ct = kind.get("comm_type", -1)
    return int(CommType[ct]) if isinstance(ct, str) else int(ct)


def node_label(kinds: Sequence[dict[str, Any]], k: int) -> str:
    """The name generated nodes of kind ``k`` get: the kept name, else ``<type>_<k>`` (also for
    the process-group node's name, which readers would parse for a group table the sample does
    not carry there)."""
    kind = kinds[k]
    if "name" in kind and kind["name"] != PG_INIT_NAME:
        return str(kind["name"])
    base = str(kind["type"]).removesuffix("_NODE").lower()
    return f"{base}_{k}"


def populations(profiles: Sequence[RankProfile]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{field: (kind per value, values)}`` pooled over ``profiles`` (absent numbers dropped)."""
    kind = np.concatenate([p.kind for p in profiles])
    out = {}
    for name in ("duration", "size", "num_ops"):
        v = np.concatenate([getattr(p, name) for p in profiles])
        ok = v >= 0
        out[name] = (kind[ok], v[ok])
    return out


def kind_stats(pops: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, dict[str, Any]]:
    """Per kind id (as a string key), its fitted tables: ``duration``, ``size`` (with
    ``size_step``, the gcd of the sizes) and ``num_ops`` where it has them."""
    out: dict[str, dict[str, Any]] = {}
    for name, (kind, values) in pops.items():
        for k in np.unique(kind).tolist():
            v = values[kind == k]
            entry = out.setdefault(str(k), {})
            entry[name] = kind_table(v)
            if name == "size":
                entry["size_step"] = granularity(v)
    return out
