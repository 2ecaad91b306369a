"""The ``learned`` synthesizer: a hierarchical model that samples new graphs, not the source's.

``fit`` learns per trace set (a *workload*) the tile of ranks and rank classes (:mod:`.layout`),
per class the grammar of repeated blocks with their communication anchors, and per block the
distributions of its computation segments (:mod:`.fit_learned`); per kind quantile tables.
``generate`` expands the blocks with the requested counts and draws every segment anew
(:mod:`.sample_learned`), at the privacy ``level`` asked for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from chakra_core import ConfigError, Option, Synthesizer, TraceSet, make_attr

from .model import check_model, new_model, pick_workload, sample_metadata
from .profile import KindTable
from .structural import FIT_OPTIONS, SAMPLE_OPTIONS, _class_counts

__all__ = ["LearnedSynthesizer"]


class LearnedSynthesizer(Synthesizer):
    """Blocks found by period detection, segments drawn from fitted distributions."""

    description = "hierarchical model: repeated blocks, communication anchors, per-segment op count, mix and time"
    options = {
        **FIT_OPTIONS,
        "max_period": Option("int", 256, "fit: longest block body searched, in nodes", minimum=1),
        "params": Option("list", None, "fit: per trace set, its parameters (KEY: number), over those of "
                         "its metadata (a list file's KEY=NUMBER give them)"),
        **SAMPLE_OPTIONS,
        "target": Option("dict", None, "sample: parameters (KEY: number, e.g. {\"layers\": 40}) to sample "
                         "for, from the nearest fitted set (docs/synth.md, Corpus)"),
        "level": Option("float", 0.5, "sample: privacy level, 0 to 1 (more: further from the source, "
                        "less faithful)", minimum=0),
    }
    #: the options only ``fit`` uses (``chakra synth sample`` refuses them); the others are ``generate``'s
    fit_options = frozenset({*FIT_OPTIONS, "max_period", "params"})

    def fit(self, corpus: Sequence[TraceSet], options: Mapping[str, Any]) -> dict[str, Any]:
        """The model of ``corpus`` (one workload per trace set)."""
        from .corpus import set_params
        from .fit_learned import fit_learned_workload
        from .kinds import kinds_json

        given = options["params"] or [{}] * len(corpus)
        if len(given) != len(corpus) or not all(isinstance(g, dict) for g in given):
            raise ConfigError(f"params: wants one mapping per trace set ({len(corpus)}), got {len(given)}")
        kinds = KindTable()
        workloads = []
        for ts, g in zip(corpus, given):
            workloads.append({**fit_learned_workload(ts, kinds, int(options["max_period"])),
                              "params": set_params(ts, g)})
        keep = bool(options["keep_names"])
        return new_model(self.name or "learned", keep, kinds_json(kinds, keep), workloads)

    def generate(self, model: Mapping[str, Any], options: Mapping[str, Any]) -> TraceSet:
        """A new set from ``model`` (checked against the cross-rank rules before it is returned)."""
        from .emit import ClassStream, build_traceset
        from .sample_learned import Noise, learned_stream, learned_variants
        from .schema import check_schema

        check_model(model, "classes")
        check_schema(model, "learned")
        index, w = _workload(model, options)
        ranks = int(options["ranks"] or w["ranks"])
        tile = int(w["tile"])
        if ranks % tile:
            raise ConfigError(f"ranks={ranks}: the model repeats a tile of {tile} rank(s); give a multiple of {tile}")
        level = float(options["level"])
        if level > 1:
            raise ConfigError(f"level={level}: give a value from 0 to 1")
        noise = Noise(level)
        seeds = np.random.SeedSequence(int(options["seed"])).spawn(len(w["classes"]))
        counts = _counts(w, options["nodes_per_rank"])
        source_ranks = int(w["ranks"])
        groups = _position_groups(w)
        streams: list[ClassStream] = []
        first_stream: list[int] = []
        variants_of: list[list[int]] = []
        for c, nth, held, pairs in groups:
            cls = _renamed(w["classes"][c], pairs)
            own = [v for v, r in enumerate(cls["members"]) if r % tile in held]
            variants_of.append(own if learned_variants(cls) > 1 else [0])
            first_stream.append(len(streams))
            streams += [learned_stream(dict(model), w, cls, counts[c], seeds[c], noise, v, nth)
                        for v in variants_of[-1]]
        group_of = {p: g for g, (_c, _nth, held, _pairs) in enumerate(groups) for p in held}

        def stream_of(rank: int) -> int:
            g = group_of[rank % tile]
            cls = w["classes"][groups[g][0]]
            if len(variants_of[g]) == 1:
                return first_stream[g]
            return first_stream[g] + variants_of[g].index(cls["members"].index(rank % source_ranks))
        target = [make_attr("target", json.dumps(options["target"], sort_keys=True))] if options["target"] else []
        meta = sample_metadata(model, int(options["seed"]), index, make_attr("privacy_level", level), *target)
        positions = [first_stream[group_of[p]] for p in range(tile)]
        return build_traceset(streams, positions, stream_of, ranks, meta, f"synth:{model['synthesizer']}")

    def describe(self, model: Mapping[str, Any]) -> dict[str, Any]:
        """Kinds, and per workload its parameters, roles, tile, rank classes, blocks and segments."""
        from .describe import describe_structural
        from .schema import check_schema

        check_model(model, "classes")  # what sample refuses is not shown either
        check_schema(model, "learned")
        out = describe_structural(model)
        for wd, w in zip(out["workloads"], model["workloads"]):
            wd["roles"] = w.get("roles")
            wd["params"] = w.get("params", {})
            for cd, c in zip(wd["rank_classes"], w["classes"]):
                cd["segments"] = len(c["segments"])
                cd["segment_ops"] = sum(int(s["length"]) for s in c["segments"])
        return out


def _workload(model: Mapping[str, Any], options: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    """The workload to sample and the index of the fitted one it comes from: ``workload``, or for a
    ``target`` the nearest fitted set conditioned on it (both given is an error)."""
    if not options["target"]:
        return pick_workload(model, options["workload"])
    if options["workload"] is not None:
        raise ConfigError(f"workload={options['workload']} and target both pick the fitted set to sample: give one "
                          "(with target, the set nearest to it is taken)")
    from .corpus import condition

    return condition(model, options["target"])


def _position_groups(w: Mapping[str, Any]) -> list[tuple[int, int, set[int], list[Any]]]:
    """The tile positions that sample alike: ``(class, how many groups of the class come
    before, positions, renaming of the class's groups and peers)`` per group."""
    relabel = w.get("tile_relabel") or [[] for _ in w["tile_classes"]]
    out: list[tuple[int, int, set[int], list[Any]]] = []
    index: dict[tuple[int, str], int] = {}
    for p, (c, pairs) in enumerate(zip(w["tile_classes"], relabel)):
        key = (int(c), repr(pairs))
        if key not in index:
            index[key] = len(out)
            out.append((int(c), sum(1 for g in out if g[0] == c), set(), pairs))
        out[index[key]][2].add(p)
    return out


def _renamed(cls: Mapping[str, Any], pairs: list[Any]) -> dict[str, Any]:
    """``cls`` with its communication slots' roles renamed by ``pairs`` (``[[from, to], ...]``)."""
    if not pairs:
        return dict(cls)
    to = {repr(list(a)): list(b) for a, b in pairs}
    slots = [{**s, "role": to.get(repr(list(s["role"])), s["role"])} if "role" in s else s for s in cls["slots"]]
    return {**cls, "slots": slots}


def _counts(w: Mapping[str, Any], target: int | None) -> list[list[int]]:
    """Per class, the block counts for about ``target`` nodes per rank: at or above the source's
    size only the number of steps grows (the op mix of a step is kept), below it the
    structural synthesizer's scaling applies."""
    nodes = int(w["classes"][int(w["tile_classes"][0])]["nodes"])
    if target is None or target < nodes:
        return _class_counts(w, target)
    steps = max(1, round(target / max(nodes, 1)))
    out = []
    for c in w["classes"]:
        counts = [int(m["count"]) for m in c["motifs"]]
        counts[int(c["step"])] = steps
        out.append(counts)
    return out
