"""The ``markov`` baseline: a first-order Markov chain of node kinds with per-kind distributions.

``fit`` counts, per trace set, the transitions between consecutive kinds of every rank (in
topological order; sends and receives left out) and fits the same per-kind tables as the
structural synthesizer.  ``generate`` walks the chain for the requested number of nodes, draws
every number independently from its kind's table, chains each node to the one before, and
gives every rank the same nodes with every collective on the world group, so the set is valid.
It keeps no motifs, no dependency pattern and no rank classes: what the fidelity report shows it
losing is what the structural model adds.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from chakra_core import ConfigError, NodeType, Synthesizer, TraceSet

from .emit import ClassStream, NodeBatch, Role, build_traceset, static_bytes
from .kinds import comm_type_number, kind_stats, kinds_json, node_label, populations, type_number
from .layout import WORLD_REF
from .model import check_model, new_model, pick_workload, sample_metadata
from .profile import KindTable, read_profiles
from .quantiles import ppf
from .structural import FIT_OPTIONS, SAMPLE_OPTIONS
from .tables import stat_rows

__all__ = ["MarkovSynthesizer"]

_P2P = (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
_BATCH = 8192


class MarkovSynthesizer(Synthesizer):
    """Baseline: kinds from a first-order Markov chain, numbers drawn per kind, a chain of deps."""

    description = "baseline: a first-order Markov chain of node kinds, per-kind distributions"
    options = {**FIT_OPTIONS, **SAMPLE_OPTIONS}
    #: the options only ``fit`` uses (``chakra synth sample`` refuses them); the others are ``generate``'s
    fit_options = frozenset(FIT_OPTIONS)

    def fit(self, corpus: Sequence[TraceSet], options: Mapping[str, Any]) -> dict[str, Any]:
        """Transition counts and per-kind tables of each set of ``corpus``."""
        kinds = KindTable()
        workloads = []
        for ts in corpus:
            profiles = read_profiles(ts, kinds)
            p2p = {k for k, key in enumerate(kinds.keys) if key[0] in _P2P}
            trans: dict[str, dict[str, int]] = {}
            starts: dict[str, int] = {}
            for p in profiles:
                seq = [k for k in p.kind.tolist() if k not in p2p]
                if seq:
                    starts[str(seq[0])] = starts.get(str(seq[0]), 0) + 1
                for a, b in zip(seq, seq[1:]):
                    row = trans.setdefault(str(a), {})
                    row[str(b)] = row.get(str(b), 0) + 1
            nodes = round(sum(len(p) for p in profiles) / max(len(profiles), 1))
            workloads.append({"ranks": len(profiles), "nodes": nodes, "start": starts, "transitions": trans,
                              "kind_stats": kind_stats(populations(profiles))})
        keep = bool(options["keep_names"])
        return new_model(self.name or "markov", keep, kinds_json(kinds, keep), workloads)

    def generate(self, model: Mapping[str, Any], options: Mapping[str, Any]) -> TraceSet:
        """Every rank the same walk of the chain (seeded), collectives on the world group."""
        from .schema import check_schema

        check_model(model, "transitions")
        check_schema(model, "markov")
        index, w = pick_workload(model, options["workload"])
        if not w["start"]:
            raise ConfigError("the model's workload has no nodes to sample")
        ranks = int(options["ranks"] or w["ranks"])
        nodes = int(options["nodes_per_rank"] or w["nodes"])
        kinds = model["kinds"]
        statics = [static_bytes(node_label(kinds, k), type_number(kinds[k]), bool(kinds[k]["cpu"]),
                                comm_type_number(kinds[k]), -1) for k in range(len(kinds))]
        types = [type_number(k) for k in kinds]
        roles: list[Role] = [("", None), ("g", WORLD_REF)]
        role_of = np.array([1 if t == NodeType.COMM_COLL_NODE else 0 for t in types], dtype=np.uint16)
        seed = int(options["seed"])

        def batches() -> Iterator[NodeBatch]:
            return _walk(w, len(kinds), nodes, np.random.default_rng(seed), role_of)
        stream = ClassStream(statics, types, [comm_type_number(k) for k in kinds], roles, batches)
        meta = sample_metadata(model, seed, index)
        return build_traceset([stream], [0], lambda _rank: 0, ranks, meta, f"synth:{model['synthesizer']}")

    def describe(self, model: Mapping[str, Any]) -> dict[str, Any]:
        """Kinds, and per workload its ranks, nodes and transition counts."""
        from .describe import describe_kinds
        from .schema import check_schema

        check_model(model, "transitions")  # what sample refuses is not shown either
        check_schema(model, "markov")
        return {**describe_kinds(model), "workloads": [
            {"ranks": w["ranks"], "nodes_per_rank": w["nodes"], "kinds_with_transitions": len(w["transitions"]),
             "transitions": sum(len(r) for r in w["transitions"].values())} for w in model["workloads"]]}


def _chain(w: Mapping[str, Any], nkinds: int) -> tuple[list[list[float]], list[list[int]], list[float], list[int]]:
    """Cumulative transition rows and the start distribution, for bisection."""
    cum: list[list[float]] = [[] for _ in range(nkinds)]
    nxt: list[list[int]] = [[] for _ in range(nkinds)]
    for a, row in w["transitions"].items():
        total = sum(row.values())
        acc = 0.0
        for b, n in sorted(row.items(), key=lambda kv: int(kv[0])):
            acc += n / total
            cum[int(a)].append(acc)
            nxt[int(a)].append(int(b))
    total = sum(w["start"].values())
    starts = sorted(w["start"].items(), key=lambda kv: int(kv[0]))
    scum = list(np.cumsum([n / total for _, n in starts]))
    return cum, nxt, scum, [int(k) for k, _ in starts]


def _walk(w: Mapping[str, Any], nkinds: int, nodes: int, rng: np.random.Generator,
          role_of: np.ndarray) -> Iterator[NodeBatch]:
    cum, nxt, scum, sk = _chain(w, nkinds)
    stats = w["kind_stats"]
    tables = {name: stat_rows(stats, nkinds, name) for name in ("duration", "size", "num_ops")}
    size_step = np.array([stats.get(str(k), {}).get("size_step", 1) for k in range(nkinds)], dtype=np.int64)
    state = -1
    done = 0
    while done < nodes:
        n = min(_BATCH, nodes - done)
        draws = rng.random(n).tolist()
        seq = []
        for u in draws:
            if state < 0 or not cum[state]:
                state = sk[min(bisect_right(scum, u), len(sk) - 1)]
            else:
                row = cum[state]
                state = nxt[state][min(bisect_right(row, u), len(row) - 1)]
            seq.append(state)
        k = np.array(seq, dtype=np.int64)
        numbers = {}
        for name, t in tables.items():
            ok = t.present()[k]
            out = np.full(n, -1, dtype=np.int64)
            if ok.any():
                out[ok] = np.rint(np.maximum(ppf(t.table, t.lengths, k[ok], rng.random(int(ok.sum()))), 0))
            numbers[name] = out
        step = size_step[k]
        size = numbers["size"]
        size = np.where(size > 0, np.maximum(np.rint(size / step), 1).astype(np.int64) * step, size)
        first = done + 1
        ids = first + np.arange(n, dtype=np.int64)
        has_dep = ids > 1
        cptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(has_dep, out=cptr[1:])
        empty = np.zeros(n + 1, dtype=np.int64)
        yield NodeBatch(first, k, numbers["duration"], size, numbers["num_ops"], np.full(n, -1, dtype=np.int64),
                        role_of[k], empty, np.zeros(0, dtype=np.int64), cptr, ids[has_dep] - 1)
        done += n
