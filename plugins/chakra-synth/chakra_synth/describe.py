"""``chakra synth show``: what a model holds, without its numbers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = ["describe_kinds", "describe_structural"]

#: what every model of this plugin holds, in words
HOLDS = ("node kinds (node type, collective type, CPU flag; names only with keep_names), per-kind "
         "quantile tables of durations (us), sizes (bytes) and num_ops; no schemas, shapes, file paths, "
         "process-group names or ranks of the source")


def describe_kinds(model: Mapping[str, Any]) -> dict[str, Any]:
    """The header and the kinds of a model."""
    kinds = model["kinds"]
    return {"synthesizer": model["synthesizer"], "format": model["format"], "version": model["version"],
            "names_kept": bool(model.get("keep_names")), "holds": HOLDS,
            "kinds": {"count": len(kinds), "by_type": dict(sorted(Counter(str(k["type"]) for k in kinds).items()))}}


def describe_structural(model: Mapping[str, Any]) -> dict[str, Any]:
    """Kinds, and per workload its tile, rank classes and their motifs."""
    out = describe_kinds(model)
    out["workloads"] = []
    for w in model["workloads"]:
        classes = []
        for c in w["classes"]:
            motifs = [{"motif": i, "count": m["count"], "body": len(m["body"]),
                       "motifs_inside": sorted({v for kind, v in m["body"] if kind == "m"}),
                       "communication": m["comm"]} for i, m in enumerate(c["motifs"])]
            classes.append({"ranks": c["ranks"], "nodes_per_rank": c["nodes"], "slots": len(c["slots"]),
                            "step_motif": c["step"], "motifs": motifs})
        out["workloads"].append({"ranks": w["ranks"], "tile": w["tile"], "tile_classes": w["tile_classes"],
                                 "rank_classes": classes})
    return out
