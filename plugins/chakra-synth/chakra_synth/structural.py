"""The ``structural`` synthesizer: motifs, rank classes and per-kind distributions.

``fit`` learns, per trace set of the corpus (a *workload* of the model): the tile of ranks the
set repeats and its rank classes (:mod:`.layout`), per class the grammar of repeated motifs of
its node sequence (:mod:`.motifs`) whose leaves are slots with their dependency offsets, roles
and the positions of their numbers in their kind's distribution, and per kind the fitted
distributions (:mod:`.quantiles`).  ``generate`` expands the grammar with counts scaled to the
requested size, draws the numbers, and writes the ranks of every class once (:mod:`.emit`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from chakra_core import ConfigError, Option, Synthesizer, TraceSet, make_attr

from .expand import Expansion, fit_factor, scaled_counts
from .model import check_model, new_model, pick_workload, sample_metadata
from .profile import KindTable

__all__ = ["StructuralSynthesizer", "FIT_OPTIONS", "SAMPLE_OPTIONS"]

#: the options of ``fit`` every synthesizer of this plugin has
FIT_OPTIONS = {
    "keep_names": Option("bool", False, "fit: keep the node names (digits taken out) in the model"),
}
#: the options of ``generate`` every synthesizer of this plugin has
SAMPLE_OPTIONS = {
    "seed": Option("int", 0, "random seed: the same seed gives the same bytes", minimum=0),
    "ranks": Option("int", None, "ranks of the sample (a multiple of the model's tile; default: the source's)",
                    minimum=1),
    "nodes_per_rank": Option("int", None, "about this many nodes per rank (default: the source's)", minimum=1),
    "workload": Option("int", None, "which fitted trace set to sample (default: the first PATH of fit, 0; with "
                       "target, the nearest to it)", minimum=0),
}


class StructuralSynthesizer(Synthesizer):
    """Motifs found from the graph, rank classes and groups, per-kind distributions."""

    description = "motifs, rank classes and per-kind distributions learnt from ET sets"
    options = {
        **FIT_OPTIONS,
        "max_period": Option("int", 256, "fit: longest motif body searched, in nodes", minimum=1),
        **SAMPLE_OPTIONS,
        "jitter": Option("float", 1.0, "sample: spread of each draw within its stratum (0: stratum middles)",
                         minimum=0),
    }
    #: the options only ``fit`` uses (``chakra synth sample`` refuses them); the others are ``generate``'s
    fit_options = frozenset({*FIT_OPTIONS, "max_period"})

    def fit(self, corpus: Sequence[TraceSet], options: Mapping[str, Any]) -> dict[str, Any]:
        """The model of ``corpus`` (one workload per trace set)."""
        from .fit_structure import fit_workload
        from .kinds import kinds_json

        kinds = KindTable()
        workloads = [fit_workload(ts, kinds, int(options["max_period"])) for ts in corpus]
        keep = bool(options["keep_names"])
        return new_model(self.name or "structural", keep, kinds_json(kinds, keep), workloads)

    def generate(self, model: Mapping[str, Any], options: Mapping[str, Any]) -> TraceSet:
        """A new set from ``model`` (checked against the cross-rank rules before it is returned)."""
        from .emit import ClassStream, build_traceset
        from .sample_structure import class_stream, variants
        from .schema import check_schema

        check_model(model, "classes")
        check_schema(model, "structural")
        index, w = pick_workload(model, options["workload"])
        ranks = int(options["ranks"] or w["ranks"])
        tile = int(w["tile"])
        if ranks % tile:
            raise ConfigError(f"ranks={ranks}: the model repeats a tile of {tile} rank(s) (its "
                              f"data-parallel replica); give a multiple of {tile}")
        jitter = float(options["jitter"])
        if jitter > 1:
            raise ConfigError(f"jitter={jitter}: give a value from 0 to 1")
        seeds = np.random.SeedSequence(int(options["seed"])).spawn(len(w["classes"]))
        streams: list[ClassStream] = []
        first_stream: list[int] = []
        for cls, counts, seed in zip(w["classes"], _class_counts(w, options["nodes_per_rank"]), seeds):
            first_stream.append(len(streams))
            streams += [class_stream(dict(model), w, cls, counts, seed, jitter, v) for v in range(variants(cls))]
        source_ranks = int(w["ranks"])

        def stream_of(rank: int) -> int:
            cls = w["classes"][w["tile_classes"][rank % tile]]
            first = first_stream[w["tile_classes"][rank % tile]]
            return first + (cls["members"].index(rank % source_ranks) if variants(cls) > 1 else 0)
        meta = sample_metadata(model, int(options["seed"]), index, make_attr("jitter", jitter))
        positions = [first_stream[c] for c in w["tile_classes"]]
        return build_traceset(streams, positions, stream_of, ranks, meta, f"synth:{model['synthesizer']}")

    def describe(self, model: Mapping[str, Any]) -> dict[str, Any]:
        """Kinds, and per workload its tile, rank classes and motifs (counts, bodies)."""
        from .describe import describe_structural
        from .schema import check_schema

        check_model(model, "classes")  # what sample refuses is not shown either
        check_schema(model, "structural")
        return describe_structural(model)


def _class_counts(w: Mapping[str, Any], target: int | None) -> list[list[int]]:
    """Per class, the motif counts for about ``target`` nodes per rank: the class at tile
    position 0 sets the number of steps, shared by every class so that their communication
    stays in step; each class then scales its other motifs on its own."""
    classes = w["classes"]
    single = len(set(w["tile_classes"])) == 1
    if target is None:
        return [[int(m["count"]) for m in c["motifs"]] for c in classes]
    smallest = max(Expansion(c["motifs"], scaled_counts(c["motifs"], _scalable(c, single), 0.0)).length(int(c["step"]))
                   for c in classes)
    if target < smallest:
        raise ConfigError(f"nodes_per_rank={target}: the smallest sample of this workload has about {smallest} "
                          "nodes per rank (one step, each block whose count may change repeated once); give "
                          f"{smallest} or more")
    first = int(w["tile_classes"][0])
    order = [first] + [c for c in range(len(classes)) if c != first]
    out: dict[int, list[int]] = {}
    fixed: dict[int, int] | None = None
    for c in order:
        cls = classes[c]
        step = int(cls["step"])
        pinned = None if fixed is None else {step: fixed[-1]}
        factor = fit_factor(cls["motifs"], _scalable(cls, single), step, int(target), pinned)
        out[c] = scaled_counts(cls["motifs"], _scalable(cls, single), factor, pinned)
        if fixed is None:
            fixed = {-1: out[c][step]}
    return [out[c] for c in range(len(classes))]


def _scalable(cls: Mapping[str, Any], single: bool) -> list[bool]:
    """Which motifs may change their count: the step always; others without sends and receives,
    and without collectives unless every rank is of one class."""
    step = int(cls["step"])
    return [m == step or (not motif["p2p"] and (single or not motif["comm"]))
            for m, motif in enumerate(cls["motifs"])]
