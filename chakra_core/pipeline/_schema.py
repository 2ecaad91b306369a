"""The JSON Schema (draft 2020-12) of a pipeline document, assembled from the loader's key tables.

Each table maps a key that the loader reads to the schema of its value, with the help an editor
shows for it; a table is closed (an unknown key is an error) except the inline ``system:``, whose
keys :func:`chakra_core.system.load_system` checks with its own located messages.  The
``sweep:`` section's schema comes from the sweeps layer (:mod:`chakra_core.sweeps._schema`);
without it, ``sweep:`` is any mapping.  ``schema/pipeline.schema.json`` is the whole schema,
written for editors by ``schema/pipeline_schema.py``; a test keeps the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chakra_core.system._keys import SYSTEM_KEYS
from chakra_core.system._load import OUR_KEYS
from chakra_core.system._model import COLLECTIVE_KINDS

__all__ = ["TOP_KEYS", "INPUT_KEYS", "STAGE_KEYS", "BACKEND_KEYS", "SYSTEM_HELP", "SYSTEM", "closed", "pipeline_schema"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def closed(description: str, keys: Mapping[str, dict[str, Any]], *, nullable: bool = False,
           **more: Any) -> dict[str, Any]:
    """The schema of a mapping that holds only ``keys`` (each key's value schema); ``nullable``:
    an empty value (YAML's ``key:``) means the empty mapping."""
    return {"type": ["object", "null"] if nullable else "object", "description": description,
            "properties": dict(keys), "additionalProperties": False, **more}


def _options(whose: str) -> dict[str, Any]:
    return {"type": ["object", "null"],
            "description": f"The {whose} options, name: value; `chakra plugins --options NAME` lists them "
                           "(type, default, unit). Options of type path are taken relative to the pipeline file."}


def _name(kind: str) -> dict[str, Any]:
    return {"type": "string",
            "description": f"A registered {kind}: a bare name (`chakra plugins` lists them) or one qualified "
                           "with its distribution, `distribution:name`."}


#: ``input:``: files read by a format, or a generator's output.
INPUT_KEYS: dict[str, dict[str, Any]] = {
    "format": {"type": ["string", "null"],
               "description": "The registered input format that reads `paths` (e.g. et, json, text, pytorch); "
                              "detected from the files when omitted."},
    "paths": {"type": ["string", "array"], "items": {"type": "string"}, "minItems": 1,
              "description": "The trace files: a path, directory, prefix or glob, or a list of them; "
                             "relative to the pipeline file."},
    "options": _options("input format's (or generator's)"),
    "generator": {"type": "string",
                  "description": "A registered generator that makes the trace set instead of reading files "
                                 "(e.g. transformer); then neither `format` nor `paths`."},
}

#: one entry of ``transforms:``.
STAGE_KEYS: dict[str, dict[str, Any]] = {"name": _name("transform"), "options": _options("transform's")}

#: one entry of ``backends:``.
BACKEND_KEYS: dict[str, dict[str, Any]] = {
    "name": _name("backend"),
    "options": _options("backend's"),
    "output": {"type": "string",
               "description": "The directory of the backend's files and result.json, replaced as a whole; "
                              "default out/NAME (out/NAME-2 for a second one); relative to the pipeline file."},
    "validate": {"type": "boolean",
                 "description": "false: this backend runs even on a trace set with validation errors "
                                "(default: the pipeline's `validate`)."},
}

#: the keys of an inline system description (docs/system.md), each also spelled with ``_``.
SYSTEM_HELP: dict[str, str] = {
    "network": "The network: a list of dimensions {topology: Ring|FullyConnected|Switch, npus_count, "
               "bandwidth (GB/s per link and direction, GB = 2^30 bytes), latency (ns per link)}, dimension 0 "
               "innermost; or the lists of ASTRA-sim's network.yml.",
    "compute": "The compute model: replay (the traces' durations), roofline, or {model, peak-perf, local-mem-bw}.",
    "remote-memory": "The remote-memory model: the keys of ASTRA-sim's memory.json (memory-type, "
                     "remote-mem-latency in ns, remote-mem-bw in GB/s, num-nodes, num-npus-per-node).",
    "memory": "Another name of remote-memory.",
    "comm-groups": "Communicator groups, added to the trace's process groups: {\"1\": [0, 1, 2, 3], ...}, "
                   "numbered from 1.",
    "scheduling-policy": "The order of ready collectives: LIFO (default), FIFO or EXPLICIT.",
    "collective-optimization": "baseline or localBWAware (default).",
    "endpoint-delay": "Delay at each endpoint of a message, ns (>= 1; default 10).",
    "local-reduction-delay": "Delay of a local reduction step, ns (default 1).",
    "active-chunks-per-dimension": "Chunks in flight per dimension (default 1).",
    "preferred-dataset-splits": "Chunks per collective (default 4).",
    "local-mem-bw": "Local memory bandwidth, GB/s with GB = 1e9 bytes (default 50).",
    "roofline-enabled": "1 or true: compute nodes take their roofline time (needs peak-perf and local-mem-bw).",
    "peak-perf": "Peak compute of an NPU for the roofline, TFLOPS.",
    "replay-only": "ASTRA-sim's replay-only switch (0 or 1).",
    "trace-enabled": "ASTRA-sim's trace-enabled switch (0 or 1).",
    **{f"{kind}-implementation": f"The {kind} algorithm per network dimension: ring, direct, directN, "
                                 "halvingDoubling, doubleBinaryTree (all-reduce only), oneRing, oneDirect, "
                                 "oneHalvingDoubling; one name means every dimension (default ring)."
       for kind in COLLECTIVE_KINDS},
    **{f"{kind}-implementation-custom": f"A custom {kind}: the path prefix of one Chakra ET per rank "
                                        "(PREFIX.<rank>.et); a relative prefix is taken from the working directory, "
                                        "then from the system file's folder."
       for kind in COLLECTIVE_KINDS},
    **{f"{kind}-implementation-chakra": f"The spelling of {kind}-implementation-custom before June 2025."
       for kind in COLLECTIVE_KINDS},
}


#: ``system:``: open, for the system loader checks its keys (in either spelling) with located messages.
SYSTEM: dict[str, Any] = {
    "type": "object",
    "description": "The system description inline, as in a system YAML file (docs/system.md; keys written "
                   "with - or _): used by every stage that takes one and names no file of its own.",
    "properties": {k: {"description": SYSTEM_HELP[k]} for k in (*OUR_KEYS, *SYSTEM_KEYS)},
}


#: the top level of a pipeline.
TOP_KEYS: dict[str, dict[str, Any]] = {
    "requires": {"type": "array", "items": {"type": "string"},
                 "description": "Distributions the pipeline needs, as pip writes them "
                                "([\"chakra-text>=0.1\"]); checked against the installed ones first."},
    "prefer": {"type": ["object", "null"], "additionalProperties": {"type": "string"},
               "description": "The distribution that a bare plugin name means when two register it: "
                              "{simpy: chakra-simpy}."},
    "input": closed("The trace set: files read by a format (`format`, `paths`) or a generator's output "
                    "(`generator`), with `options`.", INPUT_KEYS),
    "transforms": {"type": ["array", "null"],
                   "items": closed("A transform: its registered `name` and `options`.", STAGE_KEYS,
                                   required=["name"]),
                   "description": "Transforms applied to the input in order (scale, resize_dp, straggler, ...)."},
    "backends": {"type": "array", "minItems": 1,
                 "items": closed("A backend: its registered `name`, `options`, `output` directory and "
                                 "`validate`.", BACKEND_KEYS, required=["name"]),
                 "description": "The backends that run on the set (simulators, exporters, emulators): one or more."},
    "validate": {"type": "boolean",
                 "description": "Refuse a trace set with validation errors before any backend runs "
                                "(default true; `chakra run --no-validate` sets false)."},
    "system": SYSTEM,
    "sweep": {"type": "object", "description": "A design-space sweep, run by `chakra sweep` (docs/sweeps.md)."},
}


def pipeline_schema(sweep: dict[str, Any] | None = None) -> dict[str, Any]:
    """The schema of a whole pipeline document; ``sweep``: the schema of its ``sweep:`` section
    (any mapping when None)."""
    keys = {**TOP_KEYS, **({"sweep": sweep} if sweep is not None else {})}
    return {"$schema": DIALECT, "title": "Chakra pipeline",
            **closed("A Chakra pipeline: input -> transforms -> backends (docs/pipelines.md), optionally with "
                     "an inline system and a sweep.", keys, required=["input", "backends"])}

