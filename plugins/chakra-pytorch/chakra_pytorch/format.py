"""The ``pytorch`` input format: host execution traces plus optional Kineto traces."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chakra_core import InputFormat, Option, TraceSet

from .convert import open_pytorch

__all__ = ["PyTorchFormat"]


class PyTorchFormat(InputFormat):
    """PyTorch host execution traces (+ Kineto traces), or Kineto traces alone, to Chakra ETs, one
    rank per file pair (or Kineto trace)."""

    description = "PyTorch execution trace (+ Kineto trace) per rank, or Kineto traces alone, .json or .json.gz"
    per_rank = True  # open() reads headers only; each rank's files are converted when its nodes are read
    options = {
        "data_deps": Option("bool", False, "add data dependencies from tensor producers to consumers"),
        "idle_gaps": Option("bool", True, "keep observed idle time on host threads as [idle] nodes"),
        "min_idle_us": Option("int", 10, "shorter gaps (microseconds) are added to the next node's "
                              "duration instead of becoming [idle] nodes", minimum=1),
    }

    def open(self, paths: Sequence[str], options: Mapping[str, Any]) -> TraceSet:
        """Open the host ETs (and Kineto traces) in ``paths`` (files or directories)."""
        return open_pytorch(list(paths), data_deps=bool(options.get("data_deps", False)),
                            idle_gaps=bool(options.get("idle_gaps", True)),
                            min_idle_us=int(options.get("min_idle_us", 10)))
