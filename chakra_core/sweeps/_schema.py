"""The JSON Schema of a pipeline's ``sweep:`` section: the key tables that :func:`parse_sweep`
checks, each key with the schema of its value and the help an editor shows.

:func:`full_schema` is the pipeline's schema with this section in it: what ``chakra sweep``
checks a document against, and what ``schema/pipeline.schema.json`` holds.
"""

from __future__ import annotations

from typing import Any

from chakra_core.pipeline._schema import closed, pipeline_schema

__all__ = ["PATH_PATTERN", "SWEEP_KEYS", "RANDOM_KEYS", "RANGE_KEYS", "CONSTRAINT_KEYS", "sweep_schema",
           "full_schema"]

#: a path of dotted keys as :func:`chakra_core.base._docpath.parse_path` reads it: keys separated
#: by dots, ``[i]`` for list items (written with or without a dot before it, and a key may follow
#: an index directly); no empty key.
PATH_PATTERN = r"^[^.\[\]]+(\.[^.\[\]]+|\.?\[-?[0-9]+\][^.\[\]]*)*$"


def _by_path(description: str, value: dict[str, Any]) -> dict[str, Any]:
    """A mapping from paths of the pipeline document to ``value``s."""
    return {"type": ["object", "null"], "description": description,
            "propertyNames": {"pattern": PATH_PATTERN}, "additionalProperties": value}


#: a range to draw from, ``{low, high, log, integer}``.
RANGE_KEYS: dict[str, dict[str, Any]] = {
    "low": {"type": "number", "description": "The smallest value to draw."},
    "high": {"type": "number", "description": "The largest value to draw."},
    "log": {"type": "boolean", "description": "true: uniform in the logarithm (needs low > 0)."},
    "integer": {"type": "boolean", "description": "true: whole numbers only."},
}

#: ``sweep.random``.
RANDOM_KEYS: dict[str, dict[str, Any]] = {
    "seed": {"type": "integer", "description": "The seed of the draws (default 0): the same seed, the same points."},
    "count": {"type": "integer", "minimum": 1, "description": "The number of draws, each crossed with the grid."},
    "params": _by_path(
        "The paths drawn at random and what from: a range {low, high, log, integer} or a list of values.",
        {"type": ["array", "object"], "minItems": 1, "description": "A range {low, high, log, integer}, or a "
         "list to take one of its values from.", "properties": RANGE_KEYS, "required": ["low", "high"],
         "additionalProperties": False}),
}

#: one entry of ``sweep.constraints`` written as a mapping.
CONSTRAINT_KEYS: dict[str, dict[str, Any]] = {
    "expr": {"type": "string", "description": "The expression that must hold (docs/sweeps.md)."},
    "reason": {"type": "string", "description": "What the table records for a point it excludes."},
}

#: ``sweep:``.
SWEEP_KEYS: dict[str, dict[str, Any]] = {
    "grid": _by_path("Paths of the pipeline (system.network[0].bandwidth, backends.simpy.options.streams) and "
                     "the values each takes: every combination is a point, the first path slowest.",
                     {"type": "array", "minItems": 1, "description": "The values this path takes."}),
    "random": closed("Paths drawn at random, `count` seeded draws, each crossed with the grid.", RANDOM_KEYS,
                     nullable=True),
    "derive": _by_path("Paths set from expressions over the point, in order (e.g. "
                       "system.network[0].npus_count: input.options.npus).",
                       {"type": "string", "description": "An expression over the point (docs/sweeps.md)."}),
    "constraints": {"type": ["array", "null"],
                    "description": "Conditions a point must meet; a point that fails one is kept in the table "
                                   "as skipped, with the reason.",
                    "items": {"type": ["string", "object"],
                              "description": "An expression, or {expr, reason}.", "properties": CONSTRAINT_KEYS,
                              "required": ["expr"], "additionalProperties": False}},
    "timeout_s": {"type": ["number", "null"], "exclusiveMinimum": 0,
                  "description": "Seconds a point may run before it is stopped and recorded as timeout "
                                 "(`chakra sweep --timeout S` overrides it)."},
}


def sweep_schema() -> dict[str, Any]:
    """The schema of the ``sweep:`` section."""
    return closed("A design-space sweep, run by `chakra sweep`: every point is the pipeline with the point's "
                  "values set at their paths (docs/sweeps.md).", SWEEP_KEYS)


def full_schema() -> dict[str, Any]:
    """The schema of a pipeline document with its ``sweep:`` section."""
    return pipeline_schema(sweep_schema())
