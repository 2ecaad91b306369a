"""The ``retime`` transform: compute durations from the roofline of a named device.

A compute node with ``num_ops`` (FLOPs) gets ``duration_micros`` = the device's roofline of its
``num_ops`` and ``tensor_size`` (bytes) at ``dtype``, whatever it was recorded or generated on.
A node without ``num_ops`` cannot be re-timed from its work: with ``from_device`` (the device it
ran on) its duration is scaled by the ratio of the two peaks at ``dtype`` (it assumes the node
was compute-bound), otherwise it is kept, and one warning (:class:`RetimeWarning`) says how
many selected nodes were kept so.  Everything else (communication, dependencies, sizes) is kept:
the network is the system description's business; ``kinds`` other than those of compute
(``compute``, ``cpu``, ``accelerator``) are refused.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from chakra_core import (
    SELECTION_OPTIONS,
    ConfigError,
    Node,
    NodeType,
    Option,
    TraceSet,
    Transform,
    get_int,
    node_selection,
)
from chakra_core.system import DTYPES, get_device

__all__ = ["Retime", "RetimeWarning", "RETIMED_KINDS"]

#: the ``kinds`` retime can change: its compute nodes (all of them, or those on the CPU or on the
#: accelerator); communication, memory and idle gaps have no roofline
RETIMED_KINDS = ("compute", "cpu", "accelerator")


class RetimeWarning(UserWarning):
    """Selected compute nodes that ``retime`` kept as they were (no ``num_ops``, no ``from_device``)."""


class Retime(Transform):
    """Re-time compute nodes from a device's roofline."""

    description = "what-if: re-time compute nodes from a roofline of a named device"
    options = {
        "device": Option("str", "h100", "the device to time compute on (chakra_core.system.DEVICES)"),
        "devices": Option("path", None, "YAML file adding devices to the table"),
        "dtype": Option("str", "bf16", "data type whose peak applies", choices=DTYPES),
        "from_device": Option("str", None, "the device the trace ran on: nodes without num_ops are "
                              "scaled by the ratio of peaks (else kept)"),
        "kinds": Option("list", ["compute"], f"node kinds re-timed ({', '.join(RETIMED_KINDS)})"),
        "names": SELECTION_OPTIONS["names"],
        "ranks": SELECTION_OPTIONS["ranks"],
    }

    def check_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """The options with defaults; the devices must exist and list ``dtype``; ``kinds`` only
        those of :data:`RETIMED_KINDS`."""
        out = super().check_options(options)
        other = [str(k) for k in out["kinds"] if str(k) not in RETIMED_KINDS]
        if other:
            raise ConfigError(f"transform 'retime': kinds: {other[0]!r} has no roofline to retime "
                              f"(kinds: {', '.join(RETIMED_KINDS)})")
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
        if ratio is None:
            _warn_kept(traces, selected)

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


def _warn_kept(traces: TraceSet, selected: Callable[[int, Node], bool]) -> None:
    """Warn (:class:`RetimeWarning`) of the ``selected`` compute nodes of ``traces`` that have no
    ``num_ops`` and so are kept as they are, when there are any (one pass over the set)."""
    kept = sum(1 for rank in traces.ranks for n in traces[rank].nodes()
               if n.type == NodeType.COMP_NODE and selected(rank, n) and get_int(n, "num_ops") is None)
    if kept:
        warnings.warn(f"retime: {kept} selected compute node(s) have no num_ops and keep their recorded "
                      "duration (-O from_device=DEVICE scales them by the ratio of the peaks)",
                      RetimeWarning, stacklevel=3)
