"""Built-in what-if transform ``scale``: faster compute, bigger messages, bigger memory traffic,
on every node or on the nodes selected by kind, name pattern and rank."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chakra_core.base._errors import ConfigError
from chakra_core.base._options import Option
from chakra_core.hookspecs import hookimpl
from chakra_core.host._api import Transform
from chakra_core.io._schema import Node, NodeType
from chakra_core.trace._attrs import get_int, set_attr
from chakra_core.trace._selection import SELECTION_OPTIONS, node_selection
from chakra_core.trace._traceset import TraceSet

__all__ = ["ScaleTransform"]

_COMM = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)
_MEM = (NodeType.MEM_LOAD_NODE, NodeType.MEM_STORE_NODE)
_INT64_MAX = (1 << 63) - 1


class ScaleTransform(Transform):
    """Scale compute durations, message sizes and memory sizes by constant factors.

    ``compute_speedup`` divides COMP_NODE ``duration_micros`` (rounded, at least 1 us when it was
    non-zero) and multiplies nothing else (FLOP counts stay, so a roofline model is unchanged);
    ``comm_scale`` multiplies ``comm_size`` (and ``tensor_size`` of send/recv); ``memory_scale``
    multiplies ``tensor_size`` of memory nodes.  ``kinds``, ``names`` and ``ranks`` restrict all
    three to the selected nodes (:data:`chakra_core.SELECTION_OPTIONS`).
    """

    description = "what-if: compute speedup, message-size and memory-size factors"
    per_rank = True
    options = {
        "compute_speedup": Option("float", 1.0, "divide compute durations by this", minimum=1e-9),
        "comm_scale": Option("float", 1.0, "multiply communication sizes (bytes) by this", minimum=0),
        "memory_scale": Option("float", 1.0, "multiply memory-node sizes (bytes) by this", minimum=0),
        **SELECTION_OPTIONS,
    }

    def apply(self, traces: TraceSet, options: Mapping[str, Any]) -> TraceSet:
        """Return the lazily scaled set."""
        speed, comm, mem = options["compute_speedup"], options["comm_scale"], options["memory_scale"]
        selected = node_selection(options, "transform 'scale'", traces.ranks)

        def checked(rank: int, n: Node, key: str, v: int, out: int, option: str) -> int:
            if out > _INT64_MAX:
                raise ConfigError(f"transform 'scale': {option} = {options[option]} makes {key} of node {n.id} of "
                                  f"rank {rank} overflow 64 bits ({v} before scaling)")
            return out

        def fn(rank: int, n: Node) -> Node:
            if not selected(rank, n):
                return n
            if n.type == NodeType.COMP_NODE and speed != 1.0 and n.duration_micros:
                n.duration_micros = max(1, checked(rank, n, "duration_micros", n.duration_micros,
                                                   round(n.duration_micros / speed), "compute_speedup"))
            elif n.type in _COMM and comm != 1.0:
                for key in ("comm_size", "tensor_size"):
                    v = get_int(n, key)
                    if v is not None:
                        set_attr(n, key, checked(rank, n, key, v, round(v * comm), "comm_scale"))
            elif n.type in _MEM and mem != 1.0:
                v = get_int(n, "tensor_size")
                if v is not None:
                    set_attr(n, "tensor_size", checked(rank, n, "tensor_size", v, round(v * mem), "memory_scale"))
            return n

        return traces.map_nodes(fn)


@hookimpl
def chakra_register_transforms(register):
    """Register ``scale``."""
    register("scale", ScaleTransform, description=ScaleTransform.description)
