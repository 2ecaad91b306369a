"""The model files' schemas, one per synthesizer, checked when a model is read.

A schema is a nested spec: ``"int"`` (an integer in the int64 range, not a bool), ``"count"``
(an integer from 0), ``"positive"`` (an integer from 1: a size step, a repetition, a dependency
offset, a number of ranks or nodes), ``"num"`` (a finite number in the int64 range), ``"amount"``
(a ``num`` from 0: a duration, size or op count), ``"prob"`` (a number from 0 to 1), ``"bool"``, ``"str"``,
``"any"``; ``List(spec)``, ``Tuple(spec, ...)``, ``Obj({key: spec}, optional=...)``, ``Map(spec)``
(an object of any keys), ``OneOf(spec, ...)``, ``Nullable(spec)``.
A mismatch is a ConfigError naming the place in the model (``workloads[0].classes[1].slots[3].kind``).
Indices a model holds (kinds, motifs, slots, segments, classes) are checked against what they index.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chakra_core import CommType, ConfigError, NodeType

from .layout import WORLD_REF

__all__ = ["check_schema", "SCHEMAS"]

_I64 = 2 ** 63


@dataclass(frozen=True)
class List:
    """A JSON array of ``item``."""

    item: Any


@dataclass(frozen=True)
class Tuple:
    """A JSON array of exactly these items."""

    items: tuple


@dataclass(frozen=True)
class Obj:
    """A JSON object with these keys (all required but ``optional``; others allowed)."""

    keys: dict
    optional: frozenset = field(default_factory=frozenset)


@dataclass(frozen=True)
class Map:
    """A JSON object of any keys, each value ``value``."""

    value: Any


@dataclass(frozen=True)
class OneOf:
    """The first spec that matches."""

    specs: tuple


@dataclass(frozen=True)
class Nullable:
    """null or ``spec``."""

    spec: Any


def _scalar_error(spec: str, v: Any) -> str | None:
    is_int = isinstance(v, int) and not isinstance(v, bool)
    is_num = is_int or (isinstance(v, float) and math.isfinite(v))
    if spec == "any":
        return None
    if spec in ("int", "count", "positive"):
        if not is_int:
            return "an integer"
        lo = {"int": -_I64, "count": 0, "positive": 1}[spec]
        return None if lo <= v < _I64 else f"an integer from {lo} to 2**63-1"
    if spec == "num":
        return None if is_num and -_I64 < v < _I64 else "a finite number below 2**63 in size"
    if spec == "amount":
        return None if is_num and 0 <= v < _I64 else ("a finite number from 0 to below 2**63 (durations, sizes "
                                                      "and op counts are not negative)")
    if spec == "prob":
        return None if is_num and 0 <= v <= 1 else "a number from 0 to 1"
    if spec == "bool":
        return None if isinstance(v, bool) else "true or false"
    if spec == "str":
        return None if isinstance(v, str) else "a string"
    raise AssertionError(spec)


def _shown(v: Any) -> str:
    text = repr(v) if not isinstance(v, (dict, list)) else type(v).__name__.replace("dict", "an object").replace(
        "list", "an array")
    return text if len(text) <= 40 else text[:37] + "..."


def _check(spec: Any, v: Any, where: str) -> None:
    if isinstance(spec, str):
        want = _scalar_error(spec, v)
        if want:
            raise ConfigError(f"model field {where or '(top)'}: wants {want}, got {_shown(v)}")
    elif isinstance(spec, Nullable):
        if v is not None:
            _check(spec.spec, v, where)
    elif isinstance(spec, OneOf):
        errors = []
        for s in spec.specs:
            try:
                _check(s, v, where)
                return
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0])
    elif isinstance(spec, (List, Tuple)):
        if not isinstance(v, list):
            raise ConfigError(f"model field {where}: wants an array, got {_shown(v)}")
        if isinstance(spec, Tuple):
            if len(v) != len(spec.items):
                raise ConfigError(f"model field {where}: wants an array of {len(spec.items)}, got {len(v)} item(s)")
            for i, (s, x) in enumerate(zip(spec.items, v)):
                _check(s, x, f"{where}[{i}]")
        else:
            for i, x in enumerate(v):
                _check(spec.item, x, f"{where}[{i}]")
    elif isinstance(spec, (Obj, Map)):
        if not isinstance(v, dict):
            raise ConfigError(f"model field {where or '(top)'}: wants an object, got {_shown(v)}")
        prefix = f"{where}." if where else ""
        if isinstance(spec, Map):
            for k, x in v.items():
                _check(spec.value, x, f"{prefix}{k}")
            return
        for k, s in spec.keys.items():
            if k not in v:
                if k not in spec.optional:
                    raise ConfigError(f"model field {prefix}{k}: missing")
                continue
            _check(s, v[k], f"{prefix}{k}")
    else:
        raise AssertionError(spec)


_TYPE = OneOf(("count", "str"))
_KIND = Obj({"type": _TYPE, "cpu": "bool", "comm_type": OneOf(("count", "str")), "name": "str"},
            optional=frozenset({"comm_type", "name"}))
_TABLE = List("amount")
_KIND_STATS = Map(Obj({"duration": _TABLE, "size": _TABLE, "num_ops": _TABLE, "size_step": "positive"},
                      optional=frozenset({"duration", "size", "num_ops", "size_step"})))
_COMM_ROLE = Tuple(("str", OneOf(("str", "int"))))
_ROLE = Nullable(_COMM_ROLE)
_MOTIF = Obj({"body": List(Tuple(("str", "count"))), "count": "positive", "comm": "bool", "p2p": "bool"})
_KNOTS = List("prob")
_HEADER = {"format": "str", "version": "int", "synthesizer": "str", "keep_names": "bool", "kinds": List(_KIND)}
_OFFSETS = List("positive")  # dependency offsets: "n nodes back", so 1 or more
_SLOT_NUMBERS = {"data": _OFFSETS, "ctrl": _OFFSETS, "root": "int", "size": _KNOTS,
                 "size_exact": List("count"), "tags": List("count")}
_STRUCT_SLOT = Obj({"kind": "count", "role": _ROLE, **_SLOT_NUMBERS, "duration": _KNOTS, "num_ops": _KNOTS,
                    "duration_by_rank": List(_KNOTS), "num_ops_by_rank": List(_KNOTS)},
                   optional=frozenset({"root", "size", "size_exact", "tags", "duration", "num_ops",
                                       "duration_by_rank", "num_ops_by_rank"}))
_LEARNED_SLOT = OneOf((
    Obj({"segment": "count", "index": "count", "data": _OFFSETS, "ctrl": _OFFSETS,
         "data_seq": List(_OFFSETS), "ctrl_seq": List(_OFFSETS)},
        optional=frozenset({"data_seq", "ctrl_seq"})),
    Obj({"kind": "count", "role": Tuple(("str", OneOf(("str", "int")))), **_SLOT_NUMBERS, "mean_us": "num",
         "mean_us_by_rank": List("amount"), "data_seq": List(_OFFSETS), "ctrl_seq": List(_OFFSETS)},
        optional=frozenset({"root", "size", "size_exact", "tags", "mean_us_by_rank", "data_seq", "ctrl_seq"}))))
_SEGMENT = Obj({"length": "positive", "mix": Map("count"), "first": "str", "next": Map(Map("count")),
                "next2": Map(Map("count")),
                "times": Map(Tuple(("num", "num"))),
                "total": "num", "cv": "num", "total_by_rank": List("amount")}, optional=frozenset({"total_by_rank"}))
_CLASS = {"ranks": "positive", "members": List("count"), "nodes": "count", "step": "count", "motifs": List(_MOTIF)}
_LAYOUT = {"ranks": "positive", "tile": "positive", "tile_classes": List("count"), "kind_stats": _KIND_STATS}
_PARAMS = Map("num")

#: one schema per synthesizer
SCHEMAS: dict[str, Any] = {
    "structural": Obj({**_HEADER, "workloads": List(Obj({**_LAYOUT, "classes": List(Obj(
        {**_CLASS, "slots": List(_STRUCT_SLOT)}))}))}),
    "learned": Obj({**_HEADER, "workloads": List(Obj({**_LAYOUT, "params": _PARAMS, "roles": "positive",
                                                      "tile_relabel": List(List(Tuple((_COMM_ROLE, _COMM_ROLE)))),
                                                      "classes": List(Obj({**_CLASS, "slots": List(_LEARNED_SLOT),
                                                                           "segments": List(_SEGMENT)}))},
                                                     optional=frozenset({"params", "roles", "tile_relabel"})))}),
    "markov": Obj({**_HEADER, "workloads": List(Obj({"ranks": "positive", "nodes": "positive", "start": Map("count"),
                                                     "transitions": Map(Map("count")), "kind_stats": _KIND_STATS}))}),
}


def _index(v: int, limit: int, where: str, what: str) -> None:
    if not 0 <= v < limit:
        raise ConfigError(f"model field {where}: {what} {v} is out of range (0..{limit - 1})")


def _kinds(model: Mapping[str, Any]) -> None:
    for i, k in enumerate(model["kinds"]):
        t = k["type"]
        if (t not in NodeType.__members__) if isinstance(t, str) else t not in NodeType._value2member_map_:
            raise ConfigError(f"model field kinds[{i}].type: {t!r} is not a node type")
        ct = k.get("comm_type", 0)
        if (ct not in CommType.__members__) if isinstance(ct, str) else ct not in CommType._value2member_map_:
            raise ConfigError(f"model field kinds[{i}].comm_type: {ct!r} is not a collective type")


def _kind_keys(stats: Mapping[str, Any], nkinds: int, where: str) -> None:
    for key in stats:
        if not key.isdigit() or int(key) >= nkinds:
            raise ConfigError(f"model field {where}.{key}: not a kind number (0..{nkinds - 1})")


_GROUP_REF = re.compile(r"[ix]:(0(?:,[1-9][0-9]*)*)")


def _role(role: Sequence[Any], tile: int, where: str) -> None:
    """Refuse a communication role that is not a group as the rank sees it (``["g", "w"]``, the
    world; ``["g", "i:0,..."]`` or ``["g", "x:0,..."]``, ascending tile offsets from the rank's own
    0) or a peer (``["send"|"recv", offset]``), every offset below ``tile``."""
    kind, ref = role
    if kind not in ("g", "send", "recv"):
        raise ConfigError(f"model field {where}[0]: wants \"g\", \"send\" or \"recv\", got {_shown(kind)}")
    if kind == "g":
        m = _GROUP_REF.fullmatch(ref) if isinstance(ref, str) else None
        offsets = [int(o) for o in m.group(1).split(",")] if m else []
        ok = ref == WORLD_REF or (bool(offsets) and offsets == sorted(set(offsets)) and offsets[-1] < tile)
        want = f"a group reference: \"w\", or \"i:\" or \"x:\" and ascending offsets from 0 below the tile of {tile}"
    else:
        ok = isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < tile
        want = f"a peer: an offset from 0 below the tile of {tile}"
    if not ok:
        raise ConfigError(f"model field {where}[1]: wants {want}, got {_shown(ref)}")


def _class_indices(c: Mapping[str, Any], nkinds: int, tile: int, where: str) -> None:
    motifs, slots = c["motifs"], c["slots"]
    _index(c["step"], len(motifs), f"{where}.step", "motif")
    for m, motif in enumerate(motifs):
        for e, (kind, v) in enumerate(motif["body"]):
            here = f"{where}.motifs[{m}].body[{e}]"
            if kind == "m":
                _index(v, m, here, "motif (a body names earlier motifs)")
            elif kind == "n":
                _index(v, len(slots), here, "slot")
            else:
                raise ConfigError(f"model field {here}[0]: wants \"n\" or \"m\", got {kind!r}")
    _expansion(c, where)
    segs = c.get("segments", [])
    for s, slot in enumerate(slots):
        if "kind" in slot:
            _index(slot["kind"], nkinds, f"{where}.slots[{s}].kind", "kind")
        if slot.get("role") is not None:
            _role(slot["role"], tile, f"{where}.slots[{s}].role")
        if len(slot.get("mean_us_by_rank", c["members"])) != len(c["members"]) or slot.get("mean_us", 0) < 0:
            raise ConfigError(f"model field {where}.slots[{s}]: wants a mean of 0 or more, one per member rank")
        if "segment" in slot:
            _index(slot["segment"], len(segs), f"{where}.slots[{s}].segment", "segment")
            _index(slot["index"], segs[slot["segment"]]["length"], f"{where}.slots[{s}].index", "index")
    for g, seg in enumerate(segs):
        here = f"{where}.segments[{g}]"
        if not seg["mix"] or seg["total"] < 0:
            raise ConfigError(f"model field {here}: wants a kind mix and a total of 0 or more")
        if any(m < 0 or sg < 0 or sg > 50 for m, sg in seg["times"].values()):
            raise ConfigError(f"model field {here}.times: wants a mean of 0 or more and a sigma from 0 to 50")
        pairs = [x for ab in seg["next2"] for x in ab.split(",")] if all(
            ab.count(",") == 1 for ab in seg["next2"]) else ["pair"]
        ops = {seg["first"], *seg["mix"], *seg["next"], *(b for r in (*seg["next"].values(),
                                                                    *seg["next2"].values()) for b in r), *pairs}
        for op in ops:
            kind, dot, magnitude = op.partition(".")
            if not (kind.isdigit() and dot and magnitude.isdigit() and int(kind) < nkinds):
                raise ConfigError(f"model field {here}: {op!r} is not an op class KIND.MAGNITUDE "
                                  f"(kinds 0..{nkinds - 1})")
            if op not in seg["times"]:
                raise ConfigError(f"model field {here}.times: no fit of op class {op!r}")
        if any(sum(r.values()) <= 0 for r in (seg["mix"], *seg["next"].values(), *seg["next2"].values())):
            raise ConfigError(f"model field {here}: a kind mix or transition row sums to 0")
        if len(seg.get("total_by_rank", c["members"])) != len(c["members"]):
            raise ConfigError(f"model field {here}.total_by_rank: wants one total per member rank")


def _expansion(c: Mapping[str, Any], where: str) -> None:
    """The motifs (bodies already checked to name earlier motifs) must expand to the class's
    ``nodes`` per rank, as fitted ones do (so a count of 2^62 is refused, not sampled)."""
    lengths: list[int] = []
    for motif in c["motifs"]:
        lengths.append(motif["count"] * sum(1 if kind == "n" else lengths[v] for kind, v in motif["body"]))
    got = lengths[c["step"]]
    if got != c["nodes"]:
        shown = got if got < 10**18 else "more than 10^18"
        raise ConfigError(f"model field {where}.motifs: they expand to {shown} nodes per rank, not the "
                          f"class's {c['nodes']}")


def _layout(w: Mapping[str, Any], where: str) -> None:
    tile, ncls = w["tile"], len(w["classes"])
    if w["ranks"] % tile or len(w["tile_classes"]) != tile:
        raise ConfigError(f"model field {where}: wants ranks a multiple of tile and one tile class per tile position")
    for p, c in enumerate(w["tile_classes"]):
        _index(c, ncls, f"{where}.tile_classes[{p}]", "class")
    if len(w.get("tile_relabel", w["tile_classes"])) != tile:
        raise ConfigError(f"model field {where}.tile_relabel: wants one renaming per tile position ({tile})")
    for p, pairs in enumerate(w.get("tile_relabel", [])):
        for i, (a, b) in enumerate(pairs):
            if a[0] != b[0]:
                raise ConfigError(f"model field {where}.tile_relabel[{p}][{i}]: wants a group renamed to a "
                                  f"group or a peer to a peer of the same direction, got {a!r} -> {b!r}")
            _role(a, tile, f"{where}.tile_relabel[{p}][{i}][0]")
            _role(b, tile, f"{where}.tile_relabel[{p}][{i}][1]")
    for i, c in enumerate(w["classes"]):
        if not c["members"] or any(m >= w["ranks"] for m in c["members"]):
            raise ConfigError(f"model field {where}.classes[{i}].members: wants source ranks (0..{w['ranks'] - 1})")
        if c["ranks"] != len(c["members"]):
            raise ConfigError(f"model field {where}.classes[{i}].ranks: wants the number of its members "
                              f"({len(c['members'])}), got {c['ranks']}")
    members = sorted(m for c in w["classes"] for m in c["members"])
    if len(members) != w["ranks"] or members != list(range(w["ranks"])):
        raise ConfigError(f"model field {where}.ranks: {w['ranks']} source ranks, but the classes' members are "
                          f"{len(members)} rank(s): each source rank is a member of one class")


def check_schema(model: Mapping[str, Any], synthesizer: str) -> None:
    """Raise ConfigError at the first place ``model`` departs from ``synthesizer``'s schema or
    holds an index out of range."""
    _check(SCHEMAS[synthesizer], model, "")
    _kinds(model)
    nkinds = len(model["kinds"])
    for i, w in enumerate(model["workloads"]):
        where = f"workloads[{i}]"
        _kind_keys(w["kind_stats"], nkinds, f"{where}.kind_stats")
        if synthesizer == "markov":
            for key in (*w["start"], *w["transitions"], *(b for r in w["transitions"].values() for b in r)):
                if not key.isdigit() or int(key) >= nkinds:
                    raise ConfigError(f"model field {where}: {key!r} is not a kind number (0..{nkinds - 1})")
            for name, row in (("start", w["start"]), *((f"transitions.{a}", r) for a, r in w["transitions"].items())):
                if sum(row.values()) <= 0:
                    raise ConfigError(f"model field {where}.{name}: the counts sum to 0")
            continue
        _layout(w, where)
        for c, cls in enumerate(w["classes"]):
            _class_indices(cls, nkinds, int(w["tile"]), f"{where}.classes[{c}]")
