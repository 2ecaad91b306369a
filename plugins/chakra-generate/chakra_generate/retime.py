"""The ``retime`` transform: compute durations from the roofline of a named device.

A compute node with ``num_ops`` (FLOPs) gets ``duration_micros`` = the device's roofline of its
``num_ops`` and ``tensor_size`` (bytes) at ``dtype``, whatever it was recorded or generated on.
A node without ``num_ops`` cannot be re-timed from its work: with ``from_device`` (the device it
ran on) its duration is scaled by the ratio of the two peaks at ``dtype`` (it assumes the node
was compute-bound), otherwise it is kept.  Everything else (communication, dependencies, sizes)
is kept: the network is the system description's business.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chakra_core import (
    SELECTION_OPTIONS,
    Node,
    NodeType,
    Option,
    TraceSet,
    Transform,
    get_int,
    node_selection,
)
from chakra_core.system import DTYPES, get_device

__all__ = ["Retime"]


class Retime(Transform):
    """Re-time compute nodes from a device's roofline."""

    description = "what-if: re-time compute nodes from a roofline of a named device"
    options = {
        "device": Option("str", "h100", "the device to time compute on (chakra_core.system.DEVICES)"),
        "devices": Option("path", None, "YAML file adding devices to the table"),
        "dtype": Option("str", "bf16", "data type whose peak applies", choices=DTYPES),
        "from_device": Option("str", None, "the device the trace ran on: nodes without num_ops are "
                              "scaled by the ratio of peaks (else kept)"),
        "kinds": Option("list", ["compute"], "node kinds re-timed (compute, cpu, accelerator)"),
        "names": SELECTION_OPTIONS["names"],
        "ranks": SELECTION_OPTIONS["ranks"],
    }

    def check_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """The options with defaults; the devices must exist and list ``dtype``."""
        out = super().check_options(options)
        get_device(out["device"], out["devices"]).peak(out["dtype"])
        if out["from_device"]:
            get_device(out["from_device"], out["devices"]).peak(out["dtype"])
        return out

    def apply(self, traces: TraceSet, options: Mapping[str, Any]) -> TraceSet:
        """The lazily re-timed set."""
        device = get_device(options["device"], options["devices"])
        dtype = options["dtype"]
        ratio = None
        if options["from_device"]:
            ratio = get_device(options["from_device"], options["devices"]).peak(dtype) / device.peak(dtype)
        selected = node_selection(options, "transform 'retime'", traces.ranks)

        def fn(rank: int, n: Node) -> Node:
            if n.type != NodeType.COMP_NODE or not selected(rank, n):
                return n
            ops = get_int(n, "num_ops")
            if ops is not None:
                n.duration_micros = device.roofline_micros(ops, get_int(n, "tensor_size", 0) or 0, dtype)
            elif ratio is not None and n.duration_micros:
                n.duration_micros = max(1, round(n.duration_micros * ratio))
            return n

        return traces.map_nodes(fn)
