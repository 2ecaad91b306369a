"""A corpus of trace sets: each set's parameters, and a workload for parameters never fitted.

A set's parameters are the numbers of its generator's ``workload`` metadata (``chakra
generate`` writes layers, hidden, heads, seq, tp, pp, dp, ...) and ``ranks``, overridden by
those the user gives (a list file's ``PATH KEY=NUMBER ...``, the ``params`` option).

For target parameters, :func:`condition` takes the fitted workload nearest to them (every
parameter but ``layers`` weighs as ``|log(target / fitted)|``, ``layers`` a hundredth as much,
so a set like the target but for its depth wins).  Where a second workload of the same shape
lies on the other side of the target in one other parameter (``hidden``, ``seq``, ...), the
segment and communication times and the collective sizes are interpolated between the two.  For
another depth, a second workload that differs from the nearest in its depth only (same blocks,
other counts) tells which blocks grow with the depth (layers, gradient buckets): their counts are
scaled in proportion, and the times and sizes are interpolated, or extrapolated, linearly in
``layers`` between the two; without such a workload, the blocks repeated ``layers / pp`` times
(the layers of a stage) get the target's count.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from chakra_core import ConfigError, TraceSet

__all__ = ["set_params", "condition"]

_LAYER_WEIGHT = 0.01


def set_params(traces: TraceSet, given: Mapping[str, Any] | None) -> dict[str, float]:
    """The parameters of ``traces`` (module docstring); numbers only."""
    out: dict[str, float] = {"ranks": len(traces)}
    if len(traces):
        for attr in traces[0].metadata().attr:
            if attr.name == "workload" and attr.WhichOneof("value") == "string_val":
                try:
                    data = json.loads(attr.string_val)
                except ValueError:
                    data = {}
                if isinstance(data, dict):
                    out.update({k: v for k, v in data.items() if _number(v)})
    for k, v in (given or {}).items():
        _check_param("params", k, v)
        out[str(k)] = v
    return out


#: how many times the depth of the nearest fitted set a target may ask for
MAX_DEPTH_FACTOR = 100


def _check_param(what: str, k: Any, v: Any) -> None:
    """A parameter of a set (a size or a count): a number above 0 below 2**63; ``layers`` whole."""
    if not _number(v) or v <= 0:
        raise ConfigError(f"{what}: {k}={v!r} is not a number above 0 and below 2**63 (parameters are sizes and "
                          "counts)")
    if k == "layers" and v != int(v):
        raise ConfigError(f"{what}: layers={v!r} is not a whole number")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < 2 ** 63


def _distance(target: Mapping[str, float], params: Mapping[str, float]) -> float:
    d = 0.0
    for k, t in target.items():
        if k not in params:
            return math.inf
        p = params[k]
        gap = abs(math.log((abs(t) + 1) / (abs(p) + 1)))
        d += gap * (_LAYER_WEIGHT if k == "layers" else 1.0)
    return d


def _shape(w: Mapping[str, Any], depth_free: bool = False) -> str:
    """What must agree for two workloads' times to be interpolated: tile, classes, bodies,
    segment lengths and (unless ``depth_free``) repetition counts."""
    counts = [] if depth_free else [[m["count"] for m in c["motifs"]] for c in w["classes"]]
    return json.dumps([w["tile"], w["tile_classes"], [[m["body"] for m in c["motifs"]] for c in w["classes"]],
                       counts, [[s["length"] for s in c["segments"]] for c in w["classes"]]], sort_keys=True)


def _lerp(a: float, b: float, f: float) -> float:
    return max(0.0, a + f * (b - a))


def _interpolate(w: dict[str, Any], other: Mapping[str, Any], f: float) -> None:
    """Times and collective sizes of ``w`` moved a fraction ``f`` of the way to ``other``'s (same
    shape; ``f`` outside 0..1 extrapolates).  A slot whose size list has another length in
    ``other`` (it repeats with the depth) keeps its sizes."""
    for c, oc in zip(w["classes"], other["classes"]):
        for seg, os_ in zip(c["segments"], oc["segments"]):
            seg["total"] = _lerp(seg["total"], os_["total"], f)
            seg.pop("total_by_rank", None)
        for slot, oslot in zip(c["slots"], oc["slots"]):
            if "mean_us" in slot and "mean_us" in oslot:
                slot["mean_us"] = _lerp(slot["mean_us"], oslot["mean_us"], f)
                slot.pop("mean_us_by_rank", None)
            a, b = slot.get("size_exact"), oslot.get("size_exact")
            if a and b and len(a) == len(b):
                slot["size_exact"] = [int(round(_lerp(x, y, f))) for x, y in zip(a, b)]


def _depth_partner(ws: Sequence[Mapping[str, Any]], base: Mapping[str, Any], layers: float
                   ) -> tuple[Mapping[str, Any], float] | None:
    """A workload like ``base`` but for its depth, on the other side of ``layers`` if one is
    (else the nearest in depth), with the interpolation fraction."""
    shape, bp = _shape(base, True), base["params"]
    like = [w for w in ws if w is not base and _shape(w, True) == shape and w["params"].get("layers") != bp["layers"]
            and all(w["params"].get(k) == v for k, v in bp.items() if k != "layers")]
    if not like:
        return None
    other = min(like, key=lambda w: ((w["params"]["layers"] - layers) * (bp["layers"] - layers) > 0,
                                     abs(w["params"]["layers"] - layers)))
    lo, hi = bp["layers"], other["params"]["layers"]
    return other, (layers - lo) / (hi - lo)


def _bracket(ws: Sequence[Mapping[str, Any]], base: Mapping[str, Any], target: Mapping[str, float]
             ) -> tuple[Mapping[str, Any], float] | None:
    """A workload of ``base``'s shape that differs from it in one parameter of ``target`` and lies
    on the other side of the target in it, with the interpolation fraction."""
    shape, bp = _shape(base), base["params"]
    for w in ws:
        p = w["params"]
        diff = [k for k in target if k != "layers" and p.get(k) != bp.get(k)]
        if w is base or len(diff) != 1 or _shape(w) != shape:
            continue
        k = diff[0]
        lo, hi = bp[k], p[k]
        if (lo - target[k]) * (hi - target[k]) < 0:
            return w, (target[k] - lo) / (hi - lo)
    return None


def _scale_layers(w: dict[str, Any], new: float, partner: Mapping[str, Any] | None) -> None:
    """Give ``w`` the depth ``new``: the blocks whose count differs in ``partner`` (a workload
    of another depth) are the ones that grow with it and are scaled in proportion; without a
    partner, the blocks repeated ``layers / pp`` times (the layers of a stage)."""
    old = float(w["params"]["layers"])
    pp = float(w["params"].get("pp", 1)) or 1.0
    scaled = 0
    for c, cls in enumerate(w["classes"]):
        other = partner["classes"][c]["motifs"] if partner is not None else None
        for m, motif in enumerate(cls["motifs"]):
            grows = (other[m]["count"] != motif["count"]) if other is not None else (
                m != int(cls["step"]) and motif["count"] == old / pp)
            if grows:
                motif["count"] = max(1, int(round(motif["count"] * new / old)))
                scaled += 1
    if not scaled:
        raise ConfigError(f"the nearest fitted set has no block repeated {old / pp:g} times (its layers per "
                          "stage), so its depth cannot be changed")
    w["params"]["layers"] = new


def condition(model: Mapping[str, Any], target: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    """A workload for the ``target`` parameters (module docstring), with the index of the
    nearest fitted set it is made from."""
    for k, v in target.items():
        _check_param("target", k, v)
    ws = [w for w in model["workloads"] if "params" in w]
    distances = [_distance(target, w.get("params", {})) for w in model["workloads"]]
    index = distances.index(min(distances))
    base = model["workloads"][index]
    if math.isinf(distances[index]):
        raise ConfigError(f"no fitted set has the parameters {sorted(target)} (fit with them in the sets' "
                          "metadata or a list file's KEY=NUMBER)")
    w = copy.deepcopy(base)
    pair = _bracket(ws, base, target)
    if pair is not None:
        _interpolate(w, pair[0], pair[1])
    if "layers" in target and "layers" in w["params"] and target["layers"] != w["params"]["layers"]:
        if target["layers"] > MAX_DEPTH_FACTOR * w["params"]["layers"]:
            raise ConfigError(f"target: layers={target['layers']:g} is over {MAX_DEPTH_FACTOR} times the depth of the "
                              f"nearest fitted set ({w['params']['layers']:g} layers): fit a deeper set")
        partner = _depth_partner(ws, base, float(target["layers"]))
        if partner is not None:
            _interpolate(w, partner[0], partner[1])
        _scale_layers(w, float(target["layers"]), partner[0] if partner is not None else None)
    w["params"].update(target)
    return index, w
