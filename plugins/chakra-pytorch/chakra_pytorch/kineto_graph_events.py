"""The CPU side of a Kineto trace read alone: host events, their nesting, and who launched what.

A Kineto trace without its host execution trace has no parent links and, in older PyTorch, no
``Record function id``; what every version has is time.  On each CPU thread the ``cpu_op`` and
``user_annotation`` events nest by their spans (an event inside another one's span is its
child), and a CUDA/HIP runtime call belongs to the innermost event around it on its thread.
That is how the launching op of a kernel is found (the runtime call with the kernel's
``correlation``, as the ``ac2g`` flow arrows draw it) in every Kineto version, whatever its
``External id`` says.  Events of other processes than the traced one (the process most host
events belong to) are left out.  Each event gets a key: its index in start order over all
threads (a parent before its children), which stands in for the host ET's node id.
"""

from __future__ import annotations

import sys
from array import array
from dataclasses import dataclass
from typing import Any

import orjson

from .ints import int64_from_number
from .kineto import event_time

__all__ = ["CpuEvent", "RuntimeCall", "CpuSide", "CpuCollector"]

_CPU_CATS = ("cpu_op", "user_annotation")
_RUNTIME_CATS = ("cuda_runtime", "cuda_driver")
#: the arguments of a CPU event that the conversion reads (the rest, e.g. ``Input Strides``, is dropped)
_KEPT_ARGS = frozenset({
    "Record function id", "External id", "Sequence number", "Fwd thread id", "finished", "Input Dims",
    "Input type", "Concrete Inputs", "Collective name", "In msg nelems", "Out msg nelems", "dtype",
    "Process Group Name", "Process Group Ranks", "Group size", "Global rank start", "Global rank stride",
})

#: kept arguments that list short strings which repeat from event to event (types, scalars)
_STRING_LISTS = frozenset({"Input type", "Concrete Inputs"})
#: the most distinct inputs' JSON a trace's events share (more are kept one per event)
_MAX_INPUTS = 1 << 16


def _shared(v: Any) -> Any:
    """A list of strings with each string interned (one copy of each); anything else as is."""
    if isinstance(v, list):
        return [sys.intern(x) if type(x) is str else x for x in v]
    return v


@dataclass(slots=True)
class CpuEvent:
    """A ``cpu_op`` or ``user_annotation`` event of the traced process, in compact form: what
    the conversion reads of its arguments, and the kept ones (:data:`_KEPT_ARGS`) only for a
    communication event (:func:`_keeps_args`)."""

    name: str
    tid: int
    ts: float  # microseconds
    dur: float  # microseconds
    issued: int  # ``Record function id`` when one, else ``External id`` (negative: neither; :meth:`order_id`)
    seq: int | None  # ``Sequence number``; None unless a non-negative 64-bit integer
    fwd_tid: int | None  # ``Fwd thread id``; the same
    unfinished: bool  # ``finished`` is false: still running when the profiler stopped
    io: bytes  # orjson of [input values, input dims, input types, [], [], []], as a host op has them
    # (empty when orjson cannot write them: :attr:`CpuSide.unwritable`)
    args: dict[str, Any] | None  # the kept arguments of a communication event, else None
    key: int = -1  # index in start order over all threads
    parent: int = -1  # key of the innermost event around it on its thread, -1 for none

    @property
    def end(self) -> float:
        """End of the event, microseconds."""
        return self.ts + self.dur

    def order_id(self) -> int:
        """The id that counts issue order: ``Record function id``, else ``External id``, else
        the key (the first two are handed out when the event opens, on the issuing thread)."""
        return self.issued if self.issued >= 0 else self.key


def _keeps_args(name: str, args: dict[str, Any]) -> bool:
    """Whether a CPU event keeps its arguments: a communication op (``c10d::*``,
    ``record_param_comms``), a gloo/NCCL work annotation, or an event naming a process group."""
    return (name.startswith(("c10d::", "gloo:", "nccl:")) or name == "record_param_comms"
            or ("Process Group Name" in args and "Process Group Ranks" in args))


def _event_io(args: dict[str, Any]) -> bytes:
    """The inputs of an event as a host op's compact JSON: its concrete values (empty strings
    when they do not match the dims one for one), dims and types; no outputs (orjson's bytes,
    with spare room: :meth:`CpuCollector._one_copy` keeps a copy)."""
    dims, types, values = args.get("Input Dims"), args.get("Input type"), args.get("Concrete Inputs")
    dims = dims if isinstance(dims, list) else []
    types = types if isinstance(types, list) else []
    values = values if isinstance(values, list) and len(values) == len(dims) else [""] * len(dims)
    return orjson.dumps([values, dims, types, [], [], []])


def _id_or_none(v: Any) -> int | None:
    n = int64_from_number(v, -1)
    return n if n >= 0 else None


@dataclass(slots=True)
class RuntimeCall:
    """A CUDA/HIP runtime or driver call: name, start, thread, correlation id."""

    name: str
    ts: float
    tid: int
    correlation: int
    owner: int = -1  # key of the innermost CPU event around it


@dataclass
class CpuSide:
    """The CPU events (by key), the runtime calls, and each correlation's launching event."""

    pid: int | None
    events: list[CpuEvent]
    calls: list[RuntimeCall]
    #: correlation id -> key of the CPU event around the runtime call
    corr_owner: dict[int, int]
    #: events whose inputs orjson cannot write (nested deeper than it writes), with its message
    unwritable: list[tuple[CpuEvent, str]]


class CpuCollector:
    """Collects the CPU events and runtime calls of a trace, one event at a time (pass
    :meth:`take` as :func:`read_kineto`'s ``on_event``), then nests them (:meth:`finish`)."""

    def __init__(self) -> None:
        self.events: list[CpuEvent] = []
        self.event_pids = array("q")  # the process of each event
        self.calls: list[RuntimeCall] = []
        self.call_pids = array("q")
        self.unwritable: list[tuple[int, CpuEvent, str]] = []  # (pid, event, orjson's message)
        self._inputs: dict[bytes, bytes] = {}  # one copy of each inputs' JSON (see _one_copy)

    def take(self, ev: Any) -> None:
        """Keep one trace event when it is a complete CPU event or runtime call (ValueError
        when its time is not one)."""
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            return
        cat = ev.get("cat")
        if cat not in _CPU_CATS and cat not in _RUNTIME_CATS:
            return
        name = ev.get("name")
        name = sys.intern(name) if isinstance(name, str) else ""  # names repeat: one copy each
        args = ev.get("args")
        args = args if isinstance(args, dict) else {}
        pid = int64_from_number(ev.get("pid"))
        ts, tid = event_time(ev.get("ts", 0.0), "ts"), int64_from_number(ev.get("tid"), 0)
        if cat in _CPU_CATS:
            dur = max(0.0, event_time(ev.get("dur", 0.0), "dur"))
            event, unwritable = _cpu_event(name, tid, ts, dur, args)
            event.io = self._one_copy(event.io)
            self.events.append(event)
            self.event_pids.append(pid)
            if unwritable is not None:
                self.unwritable.append((pid, event, unwritable))
        else:
            self.calls.append(RuntimeCall(name, ts, tid, int64_from_number(args.get("correlation"))))
            self.call_pids.append(pid)

    def _one_copy(self, io: bytes) -> bytes:
        """The equal bytes an earlier event keeps, else a copy of ``io`` without orjson's spare
        room: the events of one op repeat its inputs (300 distinct among 24,080 events of the
        24-layer recording); at most :data:`_MAX_INPUTS` distinct ones are shared."""
        kept = self._inputs.get(io)
        if kept is None:
            kept = bytes(memoryview(io))
            if len(self._inputs) < _MAX_INPUTS:
                self._inputs[kept] = kept
        return kept

    def finish(self, pid: int | None) -> CpuSide:
        """The CPU side of process ``pid`` (every process when None), keyed and nested."""
        events = [e for p, e in zip(self.event_pids, self.events) if pid is None or p == pid]
        calls = [c for p, c in zip(self.call_pids, self.calls) if pid is None or p == pid]
        events.sort(key=lambda ev: (ev.ts, -ev.dur))
        for k, ev in enumerate(events):
            ev.key = k
        _nest(events, calls)
        corr_owner = {c.correlation: c.owner for c in calls if c.correlation >= 0 and c.owner >= 0}
        bad = sorted(((e, why) for p, e, why in self.unwritable if pid is None or p == pid), key=lambda x: x[0].key)
        return CpuSide(pid, events, calls, corr_owner, bad)


def _cpu_event(name: str, tid: int, ts: float, dur: float, args: dict[str, Any]) -> tuple[CpuEvent, str | None]:
    """The compact form of a CPU event with arguments ``args``, and orjson's message when it
    cannot write the event's inputs (else None)."""
    rf, ext = int64_from_number(args.get("Record function id")), int64_from_number(args.get("External id"))
    kept = ({k: _shared(v) if k in _STRING_LISTS else v for k, v in args.items() if k in _KEPT_ARGS}
            if _keeps_args(name, args) else None)
    try:
        io, unwritable = _event_io(args), None
    except orjson.JSONEncodeError as e:
        io, unwritable = b"", str(e)
    return CpuEvent(name, tid, ts, dur, rf if rf >= 0 else ext, _id_or_none(args.get("Sequence number")),
                    _id_or_none(args.get("Fwd thread id")), args.get("finished") is False, io, kept), unwritable


def _nest(events: list[CpuEvent], calls: list[RuntimeCall]) -> None:
    """Set each event's parent and each runtime call's owner: the innermost event around it on
    its thread (one sweep per thread, events and calls in start order)."""
    per_tid: dict[int, list[tuple[float, int, int]]] = {}
    for e in events:
        per_tid.setdefault(e.tid, []).append((e.ts, 0, e.key))
    for i, c in enumerate(calls):
        per_tid.setdefault(c.tid, []).append((c.ts, 1, i))
    for items in per_tid.values():
        items.sort(key=lambda x: (x[0], x[1], x[2]))
        stack: list[CpuEvent] = []
        for ts, is_call, idx in items:
            while stack and stack[-1].end <= ts:
                stack.pop()
            top = stack[-1].key if stack else -1
            if is_call:
                calls[idx].owner = top
            else:
                events[idx].parent = top
                stack.append(events[idx])
