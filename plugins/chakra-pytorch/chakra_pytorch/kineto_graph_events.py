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

import re
import sys
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from .ints import int64_from_number
from .iotext import dump_io
from .spantable import Span

__all__ = ["CpuColumns", "RuntimeCall", "CpuSide", "CpuCollector", "EventSpans"]

_CPU_CATS = ("cpu_op", "user_annotation")
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


@dataclass
class CpuColumns:
    """The ``cpu_op`` and ``user_annotation`` events of a trace in compact form, one column per
    field (an event is a row: its index), so an event costs about 90 bytes, not an object with a
    boxed number per field: what the conversion reads of its arguments, and the kept ones
    (:data:`_KEPT_ARGS`) only for a communication event (:func:`_keeps_args`)."""

    names: list[str] = field(default_factory=list)
    tids: array = field(default_factory=lambda: array("q"))
    ts: array = field(default_factory=lambda: array("d"))  # microseconds
    dur: array = field(default_factory=lambda: array("d"))  # microseconds
    #: ``Record function id`` (negative: none; :meth:`CpuSide.order_id`)
    issued: array = field(default_factory=lambda: array("q"))
    #: ``Sequence number``; -1 unless a non-negative 64-bit integer
    seq: array = field(default_factory=lambda: array("q"))
    fwd_tid: array = field(default_factory=lambda: array("q"))  # ``Fwd thread id``; the same
    unfinished: bytearray = field(default_factory=bytearray)  # 1: ``finished`` is false (still running at the stop)
    #: [input values, input dims, input types, [], [], []] as a host op keeps them (:mod:`.iotext`;
    #: empty when orjson cannot write them: :attr:`CpuSide.unwritable`)
    io: list[bytes] = field(default_factory=list)
    args: dict[int, dict[str, Any]] = field(default_factory=dict)  # row -> kept arguments of a communication event

    def __len__(self) -> int:
        return len(self.names)

    def append(self, name: str, tid: int, ts: float, dur: float, args: dict[str, Any], io: bytes) -> None:
        """Add the event ``name`` with arguments ``args`` and inputs ``io`` as the last row."""
        if _keeps_args(name, args):
            self.args[len(self.names)] = {k: _shared(v) if k in _STRING_LISTS else v
                                          for k, v in args.items() if k in _KEPT_ARGS}
        self.names.append(name)
        self.tids.append(tid)
        self.ts.append(ts)
        self.dur.append(dur)
        self.issued.append(int64_from_number(args.get("Record function id")))
        self.seq.append(max(int64_from_number(args.get("Sequence number"), -1), -1))
        self.fwd_tid.append(max(int64_from_number(args.get("Fwd thread id"), -1), -1))
        self.unfinished.append(args.get("finished") is False)
        self.io.append(io)

    def rows(self, order: list[int]) -> CpuColumns:
        """The rows ``order`` (old row numbers) as a new table, in that order."""
        out = CpuColumns(*(_picked(getattr(self, f.name), order) for f in fields(self) if f.name != "args"))
        if self.args:
            out.args = {k: self.args[i] for k, i in enumerate(order) if i in self.args}
        return out


def _picked(column: Any, order: list[int]) -> Any:
    """The items ``order`` of a column, as a column of its kind (list, array or bytearray)."""
    items = map(column.__getitem__, order)
    return array(column.typecode, items) if isinstance(column, array) else type(column)(items)


def _keeps_args(name: str, args: dict[str, Any]) -> bool:
    """Whether a CPU event keeps its arguments: a communication op (``c10d::*``,
    ``record_param_comms``), a gloo/NCCL work annotation, or an event naming a process group."""
    return (name.startswith(("c10d::", "gloo:", "nccl:")) or name == "record_param_comms"
            or ("Process Group Name" in args and "Process Group Ranks" in args))


def _event_io(args: dict[str, Any]) -> bytes:
    """The inputs of an event as a host op keeps them (:mod:`.iotext`): its concrete values
    (empty strings when they do not match the dims one for one), dims and types; no outputs."""
    dims, types, values = args.get("Input Dims"), args.get("Input type"), args.get("Concrete Inputs")
    dims = dims if isinstance(dims, list) else []
    types = types if isinstance(types, list) else []
    values = values if isinstance(values, list) and len(values) == len(dims) else [""] * len(dims)
    return dump_io((values, dims, types, [], [], []))


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
    """The CPU events of the traced process by key (their row in :attr:`events`: start order), the
    innermost event around each, the runtime calls, and each correlation's launching event."""

    pid: int | None
    events: CpuColumns
    #: key of the innermost event around each event on its thread, -1 for none
    parent: array
    calls: list[RuntimeCall]
    #: correlation id -> key of the CPU event around the runtime call
    corr_owner: dict[int, int]
    #: (key, orjson's message) of the events whose inputs orjson cannot write (nested deeper
    #: than it writes)
    unwritable: list[tuple[int, str]]
    #: (key, key of the event it started in) of each operator that outlasts the event it started
    #: in by more than :data:`OUTLAST_US` (not nested in it, see :func:`_nest`)
    outlasting: list[tuple[int, int]] = field(default_factory=list)
    #: (key, made a collective of its own) of each ``gloo:*``/``nccl:*`` annotation that no
    #: communication op in the trace took (see :func:`.kineto_graph._lone_works`)
    lone_works: list[tuple[int, bool]] = field(default_factory=list)
    #: whether ``Record function id`` orders the communication events (:func:`_ids_order`)
    by_id: bool = False

    def order_id(self, key: int) -> int:
        """The id that counts issue order: the event's ``Record function id`` (handed out when
        the event opens, on the issuing thread) where :attr:`by_id`, else its key (start order:
        ``ts``, then the longer first, then the order in the file)."""
        return self.events.issued[key] if self.by_id else key

    def kept_args(self, key: int) -> dict[str, Any]:
        """The arguments of a communication event or annotation, which keeps them (see
        :class:`CpuColumns`); a reader asking for those of another event is a bug."""
        args = self.events.args.get(key)
        if args is None:
            raise AssertionError(f"{self.events.names[key]}: its arguments were not kept")
        return args


class CpuCollector:
    """Collects the CPU events and runtime calls of a trace, one event at a time (pass
    :meth:`take` as :func:`read_kineto`'s ``on_event``), then nests them (:meth:`finish`)."""

    def __init__(self) -> None:
        self._empty()

    def _empty(self) -> None:
        """No events and no calls collected."""
        self._inputs: dict[bytes, bytes] = {}  # one copy of each inputs' JSON (see _one_copy)
        self.events = CpuColumns()
        self.event_pids = array("q")  # the process of each event
        self.calls: list[RuntimeCall] = []
        self.call_pids = array("q")
        self.unwritable: list[tuple[int, int, str]] = []  # (pid, row, orjson's message)

    def take(self, cat: str, name: str, ts: float, dur: float, args: dict, pid: int, ev: dict) -> None:
        """Keep one CPU event or runtime call as :func:`read_kineto` read it (its ``on_event``)."""
        tid = int64_from_number(ev.get("tid"), 0)
        if cat in _CPU_CATS:
            dur = max(0.0, dur)
            try:
                io = self._one_copy(_event_io(args))
            except orjson.JSONEncodeError as e:
                io = b""
                self.unwritable.append((pid, len(self.events), str(e)))
            self.events.append(name, tid, ts, dur, args, io)
            self.event_pids.append(pid)
        else:
            self.calls.append(RuntimeCall(name, ts, tid, int64_from_number(args.get("correlation"))))
            self.call_pids.append(pid)

    def _one_copy(self, io: bytes) -> bytes:
        """The equal bytes an earlier event keeps, else ``io``: the events of one op repeat its
        inputs (300 distinct among 24,080 events of the 24-layer recording); at most
        :data:`_MAX_INPUTS` distinct ones are shared."""
        kept = self._inputs.get(io)
        if kept is not None:
            return kept
        if len(self._inputs) < _MAX_INPUTS:
            self._inputs[io] = io
        return io

    def finish(self, pid: int | None) -> CpuSide:
        """The CPU side of process ``pid`` (every process when None), keyed and nested; once:
        the collector lets its rows go."""
        cols = self.events
        rows = [i for i, p in enumerate(self.event_pids) if pid is None or p == pid]
        # start order, the longer first at one start (two stable sorts: no key tuple per event)
        rows.sort(key=cols.dur.__getitem__, reverse=True)
        rows.sort(key=cols.ts.__getitem__)
        events = cols.rows(rows)
        calls = [c for p, c in zip(self.call_pids, self.calls) if pid is None or p == pid]
        outlasting: list[tuple[int, int]] = []
        parent = _nest(events, calls, outlasting)
        corr_owner = {c.correlation: c.owner for c in calls if c.correlation >= 0 and c.owner >= 0}
        key_of = {i: k for k, i in enumerate(rows)} if self.unwritable else {}
        bad = sorted((key_of[i], why) for p, i, why in self.unwritable if pid is None or p == pid)
        self._empty()  # the unsorted rows go
        return CpuSide(pid, events, parent, calls, corr_owner, bad, outlasting, by_id=_ids_order(events))


def _ids_order(events: CpuColumns) -> bool:
    """Whether the ``Record function id`` of the communication events (those that keep their
    arguments) orders their issue: each has one of its own.  Not where they are absent (before
    PyTorch 2.1) or shared (HTA's ``cpu_only`` trace gives every event 0); ``External id`` is
    no order either, Kineto numbers each thread's events in blocks of their own."""
    ids = [events.issued[k] for k in events.args]
    return bool(ids) and min(ids) >= 0 and len(set(ids)) == len(ids)


#: an operator's name: one namespace and the op (``aten::mm``, ``c10d::allreduce_``); record
#: functions named like ``torch::distributed::reducer::mul_out`` are annotations
_OPERATOR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_.]*")
_NOT_OPS = ("autograd::",)

#: microseconds an operator may end past the event it started in and still be nested in it: the
#: rounding of Kineto's times (a float of microseconds since the epoch is exact to 0.25 us)
OUTLAST_US = 1.0


def is_operator(name: str) -> bool:
    """Whether an event's name is an operator's (``ns::op``, not ``autograd::``)."""
    return _OPERATOR.fullmatch(name) is not None and not name.startswith(_NOT_OPS)


def _nest(events: CpuColumns, calls: list[RuntimeCall], outlasting: list[tuple[int, int]]) -> array:
    """The parent of each event and the owner of each runtime call: the innermost event around
    it on its thread (one sweep per thread, events and calls in start order, an event before a
    call at one start).  An operator that starts in an event and ends after it (past
    :data:`OUTLAST_US`) is not inside it: the events it outlasts end there (nothing after it
    nests in them), and each such operator is listed in ``outlasting`` with the event it started
    in.  Other events may outlast theirs (a ``gloo:*`` annotation of asynchronous work)."""
    per_tid: dict[int, list[int]] = {}
    for k, tid in enumerate(events.tids):
        per_tid.setdefault(tid, []).append(k)  # in key order: start order
    calls_of: dict[int, list[int]] = {}
    for i in sorted(range(len(calls)), key=lambda i: calls[i].ts):
        calls_of.setdefault(calls[i].tid, []).append(i)
    parent = array("q", bytes(8 * len(events)))
    ts, dur = events.ts, events.dur
    for tid in per_tid.keys() | calls_of.keys():
        keys, mine = per_tid.get(tid, []), calls_of.get(tid, [])
        stack: list[tuple[float, int]] = []  # (end, key) of the events open at this point
        j = 0
        for k in keys:
            t = ts[k]
            while j < len(mine) and calls[mine[j]].ts < t:
                _own(calls[mine[j]], stack)
                j += 1
            while stack and stack[-1][0] <= t:
                stack.pop()
            end = t + dur[k]
            if stack and end > stack[-1][0] + OUTLAST_US and is_operator(events.names[k]):
                outlasting.append((k, stack[-1][1]))
                while stack and end > stack[-1][0] + OUTLAST_US:
                    stack.pop()
            parent[k] = stack[-1][1] if stack else -1
            stack.append((end, k))
        for i in mine[j:]:
            _own(calls[i], stack)
    return parent


def _own(call: RuntimeCall, stack: list[tuple[float, int]]) -> None:
    """Set a runtime call's owner: the innermost open event that has not ended by its start."""
    while stack and stack[-1][0] <= call.ts:
        stack.pop()
    call.owner = stack[-1][1] if stack else -1


class EventSpans(Mapping[int, Span]):
    """Event key -> (ts, dur, tid, name) of the CPU events, read from their columns: what a
    Kineto trace's ``ops`` table holds, without a dict entry and a tuple per event (each span is
    made when asked for, for the host ops and the comm workers only)."""

    __slots__ = ("_events",)

    def __init__(self, events: CpuColumns) -> None:
        self._events = events

    def __getitem__(self, key: int) -> Span:
        if key not in self:
            raise KeyError(key)
        e = self._events
        return e.ts[key], e.dur[key], e.tids[key], e.names[key]

    def __contains__(self, key: object) -> bool:
        return type(key) is int and 0 <= key < len(self._events)

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self._events)))

    def __len__(self) -> int:
        return len(self._events)
