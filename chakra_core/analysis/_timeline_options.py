"""The ``timeline*`` options every backend that draws a timeline declares (no heavy imports)."""

from __future__ import annotations

from chakra_core.base._options import Option

__all__ = ["TIMELINE_OPTIONS"]

#: ``timeline`` (the path) and the selection passed to :func:`chakra_core.write_timeline`.
TIMELINE_OPTIONS = {
    "timeline": Option("path", None, "write a timeline to this path (Perfetto protobuf; Chrome JSON "
                       "for a name ending in .json)"),
    "timeline_format": Option("str", None, "timeline format (default: from the file name)",
                              choices=("perfetto", "json")),
    "timeline_ranks": Option("str", None, "ranks drawn on the timeline, e.g. 0-7,12 (default: all)"),
    "timeline_window": Option("str", None, "time window drawn, START:END in ns (default: all)"),
    "timeline_expand": Option("bool", False, "draw every rank a symmetric class stands for"),
    "timeline_max_spans": Option("int", None, "most spans drawn, the earliest (default: all; the "
                                 "timeline and a note say when it was cut)", minimum=1),
}
