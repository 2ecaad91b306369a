"""The ``obfuscate`` transform: hide names, schemas and (optionally) exact numbers of a set.

Per node, lazily (``TraceSet.map_nodes``):

- ``names``: ``hash`` replaces each name by ``op_`` and 16 hex digits of a salted SHA-256 (the same
  name gives the same hash everywhere in the set, and across runs given the same ``salt``);
  ``kind`` by its node type (``COMP_NODE``, ``COMM_COLL_NODE``, ...); ``keep`` leaves it.
  ``[idle]`` (a recorded idle gap) and ``## process_group:init ##`` (the process groups) keep
  their names in every mode (``KEPT_NAMES``): they say nothing of the model, and the analyses
  and validation read them.
- Attributes: only those a simulator reads are kept (``KEPT_ATTRS``; ``keep_attrs`` adds more);
  string attributes other than ``pg_name`` (schemas, scopes) and the inputs/outputs (values,
  shapes, types) are removed, but the inputs of ``## process_group:init ##`` (the groups' rank
  lists).
- ``quantize`` (a relative step ``q``): durations and sizes are rounded to the nearest point of
  the grid ``(1 + q)^k`` (in log space: at most ``sqrt(1 + q) - 1``, about ``q / 2``, relative
  error) (deterministic: equal sizes stay equal
  on every rank, so collectives and send/receive pairs keep matching).
- ``perturb`` (a bound ``p``): each duration is multiplied by a seeded factor in ``[1 - p, 1 + p]``.
- ``drop_ctrl_deps`` (a fraction): that share of the control dependencies between two compute
  nodes is removed (seeded per node id, so ranks with the same ids lose the same ones);
  communication order and every data dependency stay, so the set stays valid.

What was done, the bounds and what was kept are recorded in each rank's GlobalMetadata as the
JSON string attribute ``obfuscation`` (the other metadata attributes, such as the source's pid
and schema, are dropped; the process groups are written by the set).  ``drop_ctrl_deps`` keeps
the ids of the compute nodes of the rank being read (a set of integers).
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

from chakra_core import (
    IDLE_NAME,
    PG_INIT_NAME,
    ConfigError,
    GeneratedRank,
    GlobalMetadata,
    Node,
    NodeType,
    Option,
    RankTrace,
    TraceSet,
    Transform,
    make_attr,
)

__all__ = ["Obfuscate", "KEPT_ATTRS", "KEPT_NAMES"]

#: attributes kept by default: what the simulators, the exporter and validation read
KEPT_ATTRS = ("is_cpu_op", "comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag", "pg_name", "root",
              "tensor_size", "num_ops", "involved_dim", "stream", "idle")
#: names that say nothing of the model and that the analyses read: kept whatever ``names`` is
#: (a recorded idle gap; the node listing the process groups, whose inputs are kept too)
KEPT_NAMES = (IDLE_NAME, PG_INIT_NAME)
_SIZE_ATTRS = ("comm_size", "tensor_size")
_MASK64 = (1 << 64) - 1


class Obfuscate(Transform):
    """Replace names by salted hashes or kind labels, drop schemas, quantise/perturb numbers."""

    description = "replace names by salted hashes or kind labels, quantise/perturb numbers, perturb deps"
    options = {
        "names": Option("str", "hash", "hash: salted hashes; kind: the node type; keep: unchanged",
                        choices=("hash", "kind", "keep")),
        "salt": Option("str", None, "salt of the name hashes (default: a random one, not recorded)"),
        "keep_attrs": Option("list", [], "attribute names kept beside the default ones"),
        "quantize": Option("float", 0.0, "relative grid step for durations and sizes (0: off; at most 1, a grid of "
                           "powers of two)", minimum=0, maximum=1),
        "perturb": Option("float", 0.0, "durations times a seeded factor within 1 +- this bound (0: off)",
                          minimum=0),
        "drop_ctrl_deps": Option("float", 0.0, "share of compute-to-compute control deps removed", minimum=0),
        "seed": Option("int", 0, "seed of perturb and drop_ctrl_deps", minimum=0),
    }

    def check_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """Defaults, plus bounds: ``perturb`` below 1, ``drop_ctrl_deps`` at most 1."""
        out = super().check_options(options)
        if out["perturb"] >= 1:
            raise ConfigError(f"transform 'obfuscate': perturb={out['perturb']} must be below 1")
        if out["drop_ctrl_deps"] > 1:
            raise ConfigError(f"transform 'obfuscate': drop_ctrl_deps={out['drop_ctrl_deps']} must be at most 1")
        return out

    def apply(self, traces: TraceSet, options: Mapping[str, Any]) -> TraceSet:
        """The obfuscated set (lazy); the source set's process groups are carried over."""
        salt = options["salt"] if options["salt"] is not None else secrets.token_hex(16)
        keep = set(KEPT_ATTRS) | {str(a) for a in options["keep_attrs"]}
        rewriter = _NodeRewriter(options, salt, keep)
        record = json.dumps(_record(options, keep), sort_keys=True)

        def make(rt: RankTrace) -> RankTrace:
            def factory() -> Iterator[Node]:
                compute_ids: set[int] = set()
                for n in rt.editable_nodes():
                    yield rewriter(n, compute_ids)
            meta = GlobalMetadata(version=rt.metadata().version)
            meta.attr.append(make_attr("obfuscation", record))
            return GeneratedRank(rt.rank, meta, factory, rt.path)
        return TraceSet([make(rt) for rt in traces], traces.process_groups, traces.source)


def _record(options: Mapping[str, Any], keep: set[str]) -> dict[str, Any]:
    """What the output's metadata says was done; error bounds are relative (before rounding to
    whole microseconds and bytes)."""
    q, p = float(options["quantize"]), float(options["perturb"])
    grid = math.sqrt(1 + q) - 1
    bound = (1 + grid) * (1 + p) - 1
    return {"names": options["names"], "salted": options["names"] == "hash",
            "kept_attrs": sorted(keep), "removed": ["inputs", "outputs", "string attributes but pg_name"],
            "quantize": q, "perturb": p, "drop_ctrl_deps": float(options["drop_ctrl_deps"]),
            "duration_relative_error_bound": round(bound, 9), "size_relative_error_bound": round(grid, 9),
            "structure": "data deps and communication order kept"}


def _quantize(value: int, q: float) -> int:
    if q <= 0 or value <= 0:
        return value
    k = round(math.log(value) / math.log1p(q))
    return max(1, round((1 + q) ** k))


def _unit(seed: int, key: int, what: int) -> float:
    """A seeded number in [0, 1) for ``key`` (a node id)."""
    h = hashlib.blake2b(f"{seed}:{what}:{key}".encode(), digest_size=8).digest()
    return (int.from_bytes(h, "little") & _MASK64) / 2**64


class _NodeRewriter:
    def __init__(self, options: Mapping[str, Any], salt: str, keep: set[str]):
        self.mode = options["names"]
        self.salt = salt.encode()
        self.keep = keep
        self.q = float(options["quantize"])
        self.p = float(options["perturb"])
        self.drop = float(options["drop_ctrl_deps"])
        self.seed = int(options["seed"])
        self.names: dict[str, str] = {}

    def name(self, n: Node) -> str:
        """The name ``n`` is given (its own one in mode ``keep`` and for :data:`KEPT_NAMES`)."""
        if self.mode == "keep" or n.name in KEPT_NAMES:
            return n.name
        if self.mode == "kind":
            t = int(n.type)
            return NodeType(t).name if 0 <= t <= 7 else str(t)
        out = self.names.get(n.name)
        if out is None:
            out = self.names[n.name] = "op_" + hashlib.sha256(self.salt + n.name.encode()).hexdigest()[:16]
        return out

    def __call__(self, n: Node, compute_ids: set[int]) -> Node:
        """Rewrite ``n`` in place; ``compute_ids`` are the compute-node ids seen so far in this pass."""
        n.name = self.name(n)
        if n.name != PG_INIT_NAME:  # its inputs hold only the groups' rank lists
            n.ClearField("inputs")
        n.ClearField("outputs")
        kept = [a for a in n.attr if a.name in self.keep and
                (a.WhichOneof("value") != "string_val" or a.name == "pg_name")]
        for a in kept:
            if a.name in _SIZE_ATTRS and self.q:
                slot = a.WhichOneof("value")
                if slot is not None and isinstance(getattr(a, slot), int):
                    setattr(a, slot, _quantize(getattr(a, slot), self.q))
        del n.attr[:]
        n.attr.extend(kept)
        if n.duration_micros:
            d = _quantize(int(n.duration_micros), self.q)
            if self.p:
                d = max(1, round(d * (1 + self.p * (2 * _unit(self.seed, n.id, 0) - 1))))
            n.duration_micros = d
        if self.drop and n.type == NodeType.COMP_NODE:
            if n.ctrl_deps:
                deps = [d for k, d in enumerate(n.ctrl_deps)
                        if d not in compute_ids or _unit(self.seed, n.id * 1_000_003 + k, 1) >= self.drop]
                del n.ctrl_deps[:]
                n.ctrl_deps.extend(deps)
            compute_ids.add(n.id)
        return n
