"""The ``sweep:`` section of a pipeline and its expansion into points.

::

    sweep:
      grid:                                     # every combination, first key slowest
        system.network[0].bandwidth: [25, 50, 100]
        system.all-reduce-implementation: [ring, direct]
      random:                                   # count draws (seeded), crossed with the grid
        seed: 1
        count: 8
        params:
          transforms.scale.options.compute_speedup: {low: 1, high: 4, log: true}
          backends.simpy.options.streams: [1, 2, 4]          # a list: one of its values
      derive:                                   # set from expressions, in order
        system.network[0].npus_count: input.options.npus
      constraints:                              # a point is kept when every one holds
        - "input.options.npus % 2 == 0"
        - {expr: "bandwidth >= 50 or npus <= 8", reason: "slow links only for small jobs"}
      timeout_s: 600                            # per point

Each point is the pipeline without ``sweep:`` and with the point's values set at their paths
(see :mod:`chakra_core.base._docpath`); a point whose constraint does not hold is kept in the table as
``skipped`` with the reason.
"""

from __future__ import annotations

import copy
import itertools
import math
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chakra_core.base._docpath import child, get_path, parse_path, set_path
from chakra_core.base._errors import ConfigError
from chakra_core.base._options import suggest
from chakra_core.base._yamlparse import YamlLines
from chakra_core.pipeline._document import _line
from chakra_core.sweeps._expr import evaluate
from chakra_core.sweeps._schema import CONSTRAINT_KEYS, RANDOM_KEYS, RANGE_KEYS, SWEEP_KEYS

__all__ = ["SweepSpec", "Point", "parse_sweep", "expand", "check_seconds", "MAX_SECONDS"]


@dataclass(frozen=True)
class Constraint:
    """A condition a point must meet, and the reason recorded when it does not."""

    expr: str
    reason: str


@dataclass
class SweepSpec:
    """A checked ``sweep:`` section."""

    grid: dict[str, list[Any]]
    random_params: dict[str, Any]
    seed: int
    count: int
    derive: dict[str, str]
    constraints: list[Constraint]
    timeout_s: float | None

    @property
    def size(self) -> int:
        """The number of points: the grid's combinations times the random draws (computed, not made)."""
        return math.prod(len(v) for v in self.grid.values()) * (self.count if self.random_params else 1)

    @property
    def parameters(self) -> list[str]:
        """The swept paths, grid first, in the order they were given."""
        return [*self.grid, *self.random_params]


@dataclass
class Point:
    """One design point: its number, its swept values (path -> value), the resolved pipeline
    document and, for a point a constraint excluded, the reason."""

    index: int
    params: dict[str, Any]
    document: dict[str, Any]
    skipped: str | None = None

    @property
    def label(self) -> str:
        """``point 3 (system.network[0].bandwidth=50, ...)`` for messages."""
        values = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"point {self.index} ({values})"


def _mapping(obj: Any, where: str, allowed: Collection[str] | None, source: str) -> dict:
    """``obj``, a mapping with only the keys ``allowed`` (any keys when None)."""
    if not isinstance(obj, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(obj).__name__}", source)
    unknown = [k for k in obj if k not in allowed] if allowed is not None else []
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} in {where}{suggest(str(unknown[0]), allowed or ())}; "
                          f"allowed: {', '.join(allowed or ())}", source)
    return obj


def _paths(obj: dict, where: str, source: str) -> None:
    for path in obj:
        try:
            parse_path(path)
        except ConfigError as e:
            raise ConfigError(f"{where}: {e.message}", source) from None


def parse_sweep(section: Any, source: str, lines: YamlLines | None = None) -> SweepSpec:
    """Check a pipeline's ``sweep:`` section (``lines``: where its keys are in the file); raises
    ConfigError naming the key."""
    section = _mapping(section, "sweep", SWEEP_KEYS, source)
    grid = _grid(section, source)
    params, seed, count = _random(section, source)
    if not grid and not params:
        raise ConfigError("sweep needs grid: or random.params: (the values to vary)", source)
    both = sorted(set(grid) & set(params))
    if both:
        raise ConfigError(f"sweep: {both[0]} is both in grid and in random.params", source,
                          _line(lines, ("sweep", "random", "params", both[0])))
    derive = _derive(section, source)
    swept = [p for p in derive if p in grid or p in params]
    if swept:
        raise ConfigError(f"sweep.derive: {swept[0]} is swept (in {'grid' if swept[0] in grid else 'random.params'}) "
                          "and derived: a derived value would replace the swept one; remove one of them", source,
                          _line(lines, ("sweep", "derive", swept[0])))
    return SweepSpec(grid, params, seed, count, derive, _constraints(section.get("constraints") or [], source),
                     _timeout(section, source))


def _grid(section: dict[str, Any], source: str) -> dict[str, Any]:
    """``sweep.grid``: dotted paths to non-empty lists of values."""
    grid = _mapping(section.get("grid") or {}, "sweep.grid", None, source)
    _paths(grid, "sweep.grid", source)
    for path, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"sweep.grid.{path} must be a non-empty list of values", source)
    return dict(grid)


def _random(section: dict[str, Any], source: str) -> tuple[dict[str, Any], int, int]:
    """``sweep.random``: its params (each a list or a range), seed and count of draws."""
    rnd = _mapping(section.get("random") or {}, "sweep.random", RANDOM_KEYS, source)
    params = _mapping(rnd.get("params") or {}, "sweep.random.params", None, source)
    _paths(params, "sweep.random.params", source)
    for path, spec in params.items():
        _check_random_param(path, spec, source)
    seed, count = rnd.get("seed", 0), rnd.get("count", 0 if not params else None)
    if params and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        raise ConfigError("sweep.random.count must be a number of draws >= 1", source)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError("sweep.random.seed must be an integer", source)
    return dict(params), seed, count or 0


def _derive(section: dict[str, Any], source: str) -> dict[str, str]:
    """``sweep.derive``: dotted paths to expressions."""
    derive = _mapping(section.get("derive") or {}, "sweep.derive", None, source)
    _paths(derive, "sweep.derive", source)
    if not all(isinstance(v, str) for v in derive.values()):
        raise ConfigError("sweep.derive maps paths to expressions (strings)", source)
    return dict(derive)


#: the longest time limit a sweep takes (about 31 years; past it a timer cannot be set)
MAX_SECONDS = 1e9


def check_seconds(value: Any, what: str, source: str | None = None) -> float:
    """``value`` when it is a number of seconds in (0, :data:`MAX_SECONDS`]; else a ConfigError
    naming ``what`` (NaN and infinity are refused: no timer takes them)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_SECONDS:
        raise ConfigError(f"{what} must be a number of seconds > 0 and <= {MAX_SECONDS:g}, got {value!r}", source)
    return value


def _timeout(section: dict[str, Any], source: str) -> float | None:
    """``sweep.timeout_s``: seconds > 0, or None."""
    timeout = section.get("timeout_s")
    return None if timeout is None else check_seconds(timeout, "sweep.timeout_s", source)


def _check_random_param(path: str, spec: Any, source: str) -> None:
    where = f"sweep.random.params.{path}"
    if isinstance(spec, list):
        if not spec:
            raise ConfigError(f"{where}: an empty list has no value to draw", source)
        return
    spec = _mapping(spec, where, RANGE_KEYS, source)
    low, high = spec.get("low"), spec.get("high")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (low, high)):
        raise ConfigError(f"{where} needs numbers low and high (or a list of values to choose from)", source)
    assert isinstance(low, (int, float)) and isinstance(high, (int, float))
    if low > high:
        raise ConfigError(f"{where}: low {low} is above high {high}", source)
    if spec.get("log") and low <= 0:
        raise ConfigError(f"{where}: log: true needs low > 0", source)
    if spec.get("integer") and math.ceil(low) > math.floor(high):
        raise ConfigError(f"{where}: integer: true, but no whole number lies from {low} to {high}", source)


def _constraints(items: Any, source: str) -> list[Constraint]:
    if not isinstance(items, list):
        raise ConfigError("sweep.constraints must be a list of expressions", source)
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            out.append(Constraint(item, f"constraint {item!r} does not hold"))
            continue
        item = _mapping(item, f"sweep.constraints[{i}]", CONSTRAINT_KEYS, source)
        if not isinstance(item.get("expr"), str):
            raise ConfigError(f"sweep.constraints[{i}] needs expr: (an expression)", source)
        reason = item.get("reason")
        out.append(Constraint(item["expr"], str(reason) if reason else f"constraint {item['expr']!r} does not hold"))
    return out


def _draw(rng: random.Random, spec: Any) -> Any:
    if isinstance(spec, list):
        return copy.deepcopy(spec[rng.randrange(len(spec))])
    low, high = spec["low"], spec["high"]
    if spec.get("integer"):
        least, most = math.ceil(low), math.floor(high)
        if spec.get("log"):  # each whole number k takes the share of [k, k + 1) on the log scale
            return min(most, math.floor(math.exp(rng.uniform(math.log(least), math.log(most + 1)))))
        return rng.randint(least, most)
    if spec.get("log"):
        return math.exp(rng.uniform(math.log(low), math.log(high)))
    return rng.uniform(low, high)


def _value_sets(spec: SweepSpec) -> list[dict[str, Any]]:
    """The swept values of every point: the grid's combinations, each crossed with the draws."""
    combos = [dict(zip(spec.grid, values)) for values in itertools.product(*spec.grid.values())]
    if not spec.random_params:
        return combos
    rng = random.Random(spec.seed)
    draws = [{path: _draw(rng, s) for path, s in spec.random_params.items()} for _ in range(spec.count)]
    return [{**g, **d} for g in combos for d in draws]


def _short_names(paths: Sequence[str]) -> dict[str, list[str]]:
    """Each path's last key (``-`` written ``_``) and the paths that end in it."""
    last: dict[str, list[str]] = {}
    for path in paths:
        key = [k for k in parse_path(path) if isinstance(k, str)][-1]
        last.setdefault(key.replace("-", "_"), []).append(path)
    return last


def _names(doc: Mapping[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    """Names an expression may use: the document's top-level keys and each path's last key
    (when no two paths share it)."""
    names: dict[str, Any] = {str(k): v for k, v in doc.items()}
    for key, same in _short_names(paths).items():
        if len(same) == 1 and key not in names and key.isidentifier():
            try:
                names[key] = get_path(doc, same[0])
            except ConfigError:  # a derived value not set yet
                continue
    return names


def expand(base: Mapping[str, Any], spec: SweepSpec, source: str) -> list[Point]:
    """Every point of the sweep of ``base`` (a pipeline document without ``sweep:``)."""
    points = []
    paths = [*spec.parameters, *spec.derive]
    shared = {k: same for k, same in _short_names(paths).items() if len(same) > 1}
    for index, values in enumerate(_value_sets(spec)):
        doc = copy.deepcopy(dict(base))
        point = Point(index, values, doc)
        try:
            for path, value in values.items():
                _set(doc, path, copy.deepcopy(value), base)
            for path, expr in spec.derive.items():
                _set(doc, path, evaluate(expr, _names(doc, paths), f"sweep.derive.{path}", shared), base)
            names = _names(doc, paths)
            for c in spec.constraints:
                if not evaluate(c.expr, names, "sweep.constraints", shared):
                    point.skipped = c.reason
                    break
        except ConfigError as e:
            raise ConfigError(f"{point.label}: {e.message}", source) from None
        points.append(point)
    return points


def _set(doc: dict[str, Any], path: str, value: Any, base: Mapping[str, Any]) -> None:
    """``set_path``; its error says where ``path`` first leaves ``base`` (the pipeline), with
    "did you mean", when it does."""
    try:
        set_path(doc, path, value)
    except ConfigError as e:
        raise ConfigError(e.message + _left_at(base, path)) from None


def _left_at(base: Mapping[str, Any], path: str) -> str:
    """``; the pipeline has no 'sytem' (did you mean 'system'?)`` for the first key of ``path``
    missing from a mapping of ``base``; "" when every mapping on the way has its key."""
    node: Any = base
    keys = parse_path(path)
    for i, key in enumerate(keys):
        if isinstance(node, Mapping) and isinstance(key, str) and node.get(key) is None:
            at = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys[:i + 1]).lstrip(".")
            return f"; the pipeline has no {at!r}{suggest(key, [str(k) for k in node])}"
        try:
            node = child(node, key, path)
        except ConfigError:
            return ""
    return ""
