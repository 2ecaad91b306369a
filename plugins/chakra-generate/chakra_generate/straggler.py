"""The ``straggler`` transform: some ranks compute slower by a factor.

Keeps everything but the ``duration_micros`` of the selected compute nodes of the named ranks
(multiplied by ``factor``, rounded, at least 1 us when it was non-zero).  It cannot know why a
rank straggles: the FLOP counts (``num_ops``) stay, so a roofline compute model, which times nodes
from FLOPs and bytes, does not see the straggler; simulate with the replay model (the default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chakra_core import (
    SELECTION_OPTIONS,
    ConfigError,
    Node,
    NodeType,
    Option,
    TraceSet,
    Transform,
    node_selection,
)

__all__ = ["Straggler"]


class Straggler(Transform):
    """Multiply compute durations of ``ranks`` by ``factor``."""

    description = "what-if: slow down the compute of some ranks by a factor"
    options = {
        "ranks": Option("list", None, "the straggling ranks (numbers or 'a-b' ranges)", required=True),
        "factor": Option("float", 1.5, "multiply their compute durations by this", minimum=1e-9),
        "kinds": Option("list", ["compute"], "node kinds slowed down (compute, cpu, accelerator)"),
        "names": SELECTION_OPTIONS["names"],
    }

    def apply(self, traces: TraceSet, options: Mapping[str, Any]) -> TraceSet:
        """The lazily slowed-down set."""
        selected = node_selection(options, "transform 'straggler'", traces.ranks)
        factor = options["factor"]

        def fn(rank: int, n: Node) -> Node:
            if n.type == NodeType.COMP_NODE and n.duration_micros and selected(rank, n):
                d = round(n.duration_micros * factor)
                if d >= 1 << 63:
                    raise ConfigError(f"transform 'straggler': factor {factor:g} makes node {n.id} of rank {rank} "
                                      f"last {d:.3g} us, past 64 bits")
                n.duration_micros = max(1, d)
            return n

        return traces.map_nodes(fn)

