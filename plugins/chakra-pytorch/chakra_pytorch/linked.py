"""Timing carried inside a host ET linked by the MLCommons ``chakra_trace_link`` ("ET+").

``chakra_trace_link`` merges the Kineto trace into the host ET: each host node Kineto recorded
gains ``ts`` and ``inclusive_dur`` (microseconds, Kineto's ``ts``/``dur``), ``exclusive_dur`` and
``inter_thread_dep``; each GPU activity becomes an extra node, a copy of the host op that
launched it (so it carries that op's ``rf_id``) with ``cat`` (``kernel``, ``gpu_memcpy``,
``gpu_memset``), the activity's ``name``, ``ts``, ``inclusive_dur`` and ``stream``; node ids are
renumbered.  Such a file converts alone: this module collects that timing while the host ET is
read and hands it to the graph builder in the shape of a Kineto trace.  The linked file keeps
no synchronisation events and no device number (device 0 is assumed), so a linked file gets
the launch and stream dependencies but none of the sync ones.
"""

from __future__ import annotations

from typing import Any

from .intmap import IntMap
from .kineto import GpuEvent, KinetoTrace, event_duration, event_time
from .spantable import Span, SpanTable

__all__ = ["LINK_KEYS", "GPU_CATS", "LinkedTiming"]

#: keys chakra_trace_link adds to the host nodes it linked
LINK_KEYS = ("inclusive_dur", "exclusive_dur", "inter_thread_dep")
#: ``cat`` of the nodes chakra_trace_link adds for GPU activities
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


class LinkedTiming:
    """The Kineto timing found in a linked host ET, collected node by node."""

    def __init__(self) -> None:
        self.ops = SpanTable()
        self.gpu: list[GpuEvent] = []
        self.steps: list[Span] = []

    def add(self, node: dict[str, Any], rf: int, tid: int, name: str) -> bool:
        """Take the timing of one host node; True when it is a GPU activity (not a host op)."""
        ts, dur = event_time(node.get("ts", 0.0), "ts"), event_duration(node.get("inclusive_dur", 0.0), "inclusive_dur")
        if node.get("cat") in GPU_CATS:
            stream = node.get("stream")
            stream = stream if isinstance(stream, int) and not isinstance(stream, bool) else 0
            self.gpu.append(GpuEvent(name, ts, dur, 0, stream, -1, rf))
            return True
        self.ops.put(rf, ts, dur, tid, name)  # an op without rf_id (-1) is left out
        if name.startswith("ProfilerStep#"):
            self.steps.append((ts, dur, tid, name))
        return False

    def as_kineto(self, path: str, pid: int | None) -> KinetoTrace | None:
        """The timing as a :class:`KinetoTrace` (None when the file was not linked)."""
        if not self.ops and not self.gpu:
            return None
        ext_rf = IntMap()
        for g in self.gpu:  # a GPU copy carries its launcher's rf_id as the external id
            if g.external >= 0:
                ext_rf[g.external] = g.external
        kt = KinetoTrace(path, pid, {}, self.ops, ext_rf, steps=self.steps)
        kt.gpu = sorted(self.gpu, key=lambda g: g.ts)
        return kt
