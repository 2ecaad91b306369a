"""Stream a Kineto (PyTorch profiler) chrome trace and keep what the conversion needs.

Kept: the timing of the host ops the conversion asks for (by ``args["Record function id"]``), the
owner of every CPU op's ``External id`` (to tie GPU kernels to the host node that launched them);
from a Kineto trace without ``Record function id`` (PyTorch before 2.1), every CPU op by its
``External id``, for :mod:`.extlink` to match with the host ET's ``rf_id``;
GPU kernels/memcpys/memsets, synchronisation calls (``cuda_runtime`` sync calls and the
``cuda_sync`` events Kineto writes when ``enable_cuda_sync_events`` is on: "Stream Sync",
"Event Sync", "Context Sync", "Stream Wait Event"), ``ProfilerStep#N`` spans and
``distributedInfo``.  Times stay in microseconds as Kineto writes them.  A trace read for a
reader that keys the host ops itself (``on_event``: a Kineto trace converted alone) keeps none of
the host-op links (``ops``, ``ext_rf``, ``by_ext``, ``rf_events``).
"""

from __future__ import annotations

import gzip
import json
import operator
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import ijson

from chakra_core import TraceFormatError, open_binary

from .intmap import IntMap
from .ints import INT64_END, MAX_RANKS, event_int, int64_from_number, is_rank
from .jsonitems import broken_json, iter_items, json_value, keyed_type, short_error, typed_decoder
from .spantable import Span, SpanTable

__all__ = ["KinetoTrace", "GpuEvent", "SyncEvent", "StreamWait", "OnEvent", "read_kineto", "scan_process_pid",
           "read_distributed_info", "event_time", "event_duration"]

_GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
_HOST_CATS = ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "cuda_sync")
_USED_CATS = frozenset(_GPU_CATS + _HOST_CATS)
_SYNC_CALLS = {
    "cudaDeviceSynchronize": "device", "cudaStreamSynchronize": "stream",
    "cudaEventSynchronize": "event", "cudaMemcpy": "device", "hipDeviceSynchronize": "device",
    "hipStreamSynchronize": "stream", "hipEventSynchronize": "event", "hipMemcpy": "device",
}


@dataclass(slots=True)
class GpuEvent:
    """One GPU activity: a kernel, memcpy or memset, with its launching host op (if known)."""

    name: str
    ts: float
    dur: float
    device: int
    stream: int
    correlation: int
    external: int


@dataclass(slots=True)
class SyncEvent:
    """A host call that waits for the GPU: device, stream or event synchronisation."""

    kind: str
    ts: float
    dur: float
    tid: int
    external: int
    stream: int  # -1 when unknown (wait for every stream)
    correlation: int = -1
    precise: bool = False  # a cuda_sync event (names its stream) rather than a runtime call


@dataclass(slots=True)
class StreamWait:
    """A GPU stream that waits for an event recorded on another stream (``cudaStreamWaitEvent``)."""

    ts: float
    device: int
    stream: int
    wait_on_stream: int
    record_correlation: int  # correlation of the cudaEventRecord call, -1 when unknown


@dataclass
class KinetoTrace:
    """The parts of one Kineto trace used by the conversion."""

    path: str
    pid: int | None
    distributed: dict[str, Any]
    #: rf_id -> (ts, dur, tid, name) for the rf_ids asked for (a SpanTable while the trace is read;
    #: a Kineto trace read alone is keyed by its events, and answers from them: EventSpans)
    ops: Mapping[int, Span]
    #: External id -> rf_id of every CPU op and annotation
    ext_rf: IntMap
    gpu: list[GpuEvent] = field(default_factory=list)
    syncs: list[SyncEvent] = field(default_factory=list)
    #: correlation -> External id of the runtime call that launched it
    corr_ext: dict[int, int] = field(default_factory=dict)
    #: correlation -> start of the runtime call (the launch time of a kernel), microseconds
    corr_ts: dict[int, float] = field(default_factory=dict)
    #: GPU -> GPU waits between streams
    stream_waits: list[StreamWait] = field(default_factory=list)
    #: ProfilerStep#N spans: (ts, dur, tid, name)
    steps: list[Span] = field(default_factory=list)
    #: CPU ops and annotations still open when the profiler stopped (``finished: false``):
    #: (ts, name); their recorded end is the profiler's stop, not theirs
    unfinished: list[tuple[float, str]] = field(default_factory=list)
    #: CPU ops and annotations that carry a ``Record function id``
    rf_events: int = 0
    #: External id -> (ts, dur, tid, name) of the CPU ops without ``Record function id``
    by_ext: dict[int, Span] = field(default_factory=dict)
    #: External id -> autograd ``Sequence number`` of those of them that have one
    ext_seq: dict[int, int] = field(default_factory=dict)
    #: correlation -> host thread of the runtime call
    corr_tid: dict[int, int] = field(default_factory=dict)
    #: runtime calls whose External id is their correlation id (older Kineto), and the others
    runtime_ext_is_corr: int = 0
    runtime_ext_other: int = 0
    #: how the host ops were found: (key used, host ops found, host ops looked for); set by
    #: :func:`.extlink.link_host_ops`
    link: tuple[str, int, int] | None = None
    #: complete events of the kinds read (CPU ops, annotations, GPU activities, runtime calls, syncs)
    used: int = 0



def read_distributed_info(path: str) -> dict[str, Any]:
    """The ``distributedInfo`` object of a Kineto trace ({} if absent): read up to it where it
    comes before ``traceEvents`` (PyTorch 2.1 on), else from the keys after ``traceEvents``
    (PyTorch 2.0 writes it there: :func:`_trailing_distributed`)."""
    try:
        with open_binary(path) as f:
            builder = None
            for prefix, event, value in ijson.parse(f):
                if builder is not None:
                    builder.event(event, value)
                    if prefix == "distributedInfo" and event == "end_map":
                        info = builder.value
                        return _checked_distributed(info, path) if isinstance(info, dict) else {}
                elif prefix == "distributedInfo" and event == "start_map":
                    builder = ijson.ObjectBuilder()
                    builder.event(event, value)
                elif prefix == "traceEvents" and event == "start_array":
                    info = _trailing_distributed(path)
                    return _checked_distributed(info, path) if info else {}
    except (ijson.JSONError, ijson.IncompleteJSONError, OSError, EOFError, zlib.error) as e:
        raise TraceFormatError(f"not a Kineto trace ({short_error(e)})", path) from None
    return {}


#: the host events :func:`scan_process_pid` reads at most
_PID_EVENTS = 256


def scan_process_pid(path: str) -> int | None:
    """The process that recorded the Kineto trace ``path``: the pid most of its first host events
    (CPU ops, annotations, runtime calls) carry, None when it has none or cannot be read (the
    conversion reports a file it cannot read)."""
    pids: Counter[int] = Counter()
    try:
        for ev in iter_items(path, "traceEvents"):
            if isinstance(ev, dict) and ev.get("cat") in _HOST_CATS:
                pid = ev.get("pid")
                if type(pid) is int and pid >= 0:
                    pids[pid] += 1
                    if pids.total() >= _PID_EVENTS:
                        break
    except (ijson.JSONError, ijson.IncompleteJSONError, OSError, EOFError, zlib.error, UnicodeError):
        return None
    return pids.most_common(1)[0][0] if pids else None


#: the bytes at the end of a trace in which :func:`_trailing_distributed` looks for the keys
#: after ``traceEvents`` (PyTorch 2.0 writes ``distributedInfo`` and ``traceName`` there: a
#: few hundred bytes, more with many process groups)
_TAIL_BYTES = 1 << 20


def _trailing_distributed(path: str) -> dict[str, Any] | None:
    """``distributedInfo`` among the top-level keys after ``traceEvents`` of the trace at ``path``:
    the last ``"distributedInfo"`` of its last :data:`_TAIL_BYTES` whose text from there to the
    end of the file is keys and values closing the top-level object (the same key inside an
    event's arguments is not: an event and the list's end follow it)."""
    tail = b""
    with open_binary(path) as f:
        if not isinstance(f, gzip.GzipFile):
            f.seek(max(0, f.seek(0, 2) - _TAIL_BYTES))
        while chunk := f.read(1 << 22):
            tail = (tail + chunk)[-_TAIL_BYTES:]
    at = tail.rfind(b'"distributedInfo"')
    if at < 0:
        return None
    try:
        rest = json.loads(b"{" + tail[at:])
    except (ValueError, RecursionError):
        return None
    info = rest.get("distributedInfo") if isinstance(rest, dict) else None
    return info if isinstance(info, dict) else None


def _checked_distributed(info: dict[str, Any], path: str) -> dict[str, Any]:
    """``info`` after checking the fields the conversion uses: ``rank``, ``world_size`` and
    each ``pg_config`` entry's ``ranks`` must be ranks (integers in 0 .. MAX_RANKS)."""
    def bad(what: str) -> TraceFormatError:
        return TraceFormatError(f"bad distributedInfo: {what}", path)

    for key, low in (("rank", 0), ("world_size", 1)):
        if key in info and not is_rank(info[key], low):
            raise bad(f"{key} {info[key]!r} is not an integer in {low}..{MAX_RANKS}")
    groups = info.get("pg_config")
    if groups is not None and not isinstance(groups, list):
        raise bad("pg_config is not a list")
    for g in groups or []:
        ranks = g.get("ranks") if isinstance(g, dict) else None
        if isinstance(ranks, list) and not all(is_rank(r) for r in ranks):
            raise bad(f"the ranks of group {g.get('pg_name')!r} are not all integers in 0..{MAX_RANKS}")
    return info


#: the largest time (microseconds) taken from a trace: 2**53 us is 285 years, and a float holds
#: every whole microsecond up to it
_MAX_US = float(1 << 53)


def event_time(v: Any, what: str) -> float:
    """A timestamp or duration of an event, in microseconds (ValueError when not a sane one)."""
    t = float(v)
    if not -_MAX_US <= t <= _MAX_US:  # also rejects NaN
        raise ValueError(f"{what} {v!r} is not a time in microseconds")
    return t


def event_duration(v: Any, what: str) -> float:
    """A duration of an event, in microseconds (ValueError when not a sane one or negative)."""
    t = event_time(v, what)
    if t < 0:
        raise ValueError(f"{what} {v!r} is negative")
    return t


#: what :func:`read_kineto` hands ``on_event`` for each complete CPU event and runtime call:
#: category, name (interned), start and duration (microseconds), arguments, process, the event
OnEvent = Callable[[str, str, float, float, dict, int, dict], None]


def read_kineto(path: str, wanted_rfs: set[int] | frozenset[int] | None = None,
                distributed: dict[str, Any] | None = None, on_event: OnEvent | None = None) -> KinetoTrace:
    """Read one Kineto trace; keep timings of ``wanted_rfs`` (all host ops when None);
    ``distributed`` is :func:`read_distributed_info`'s answer when the caller has it already.
    ``on_event`` is another reader in the same pass, given each CPU event and runtime call as
    read (:data:`OnEvent`), that keys the host ops itself: ``wanted_rfs`` is not used then, and
    the trace's own links of host ops (``ops``, ``ext_rf``, ``by_ext``, ``rf_events``) stay
    empty."""
    dist = read_distributed_info(path) if distributed is None else distributed
    kt = KinetoTrace(path, None, dist, SpanTable(), IntMap())
    reader = _EventReader(kt, wanted_rfs, on_event)
    try:
        reader.read(iter_items(path, "traceEvents", _event_decoder() if on_event is None else None))
    except FileNotFoundError:
        raise TraceFormatError("no such file", path) from None
    except (ijson.IncompleteJSONError, EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise TraceFormatError(broken_json(e), path,
                               f"after event {reader.count}") from None
    except ijson.JSONError as e:
        raise TraceFormatError(f"malformed JSON ({short_error(e)})", path, f"after event {reader.count}") from None
    except (TypeError, ValueError) as e:
        raise TraceFormatError(f"bad trace event ({short_error(e)})", path, f"event {reader.count}") from None
    if reader.count == 0:
        raise TraceFormatError("no 'traceEvents' list: not a Kineto trace", path)
    if not kt.used:
        raise TraceFormatError(f"none of its {reader.count} trace events is a complete event ('ph': 'X') of a kind "
                               f"read ({', '.join(sorted(_USED_CATS))}): nothing to convert", path)
    if reader.pids:
        kt.pid = max(reader.pids, key=reader.pids.__getitem__)
    kt.gpu.sort(key=lambda g: g.ts)
    if any(sy.precise for sy in kt.syncs):
        # cuda_sync events name the stream a runtime sync call waited for: keep those
        precise = {sy.correlation for sy in kt.syncs if sy.precise}
        kt.syncs = [sy for sy in kt.syncs if sy.precise or sy.kind == "device" or sy.correlation not in precise]
    return kt


class _EventReader:
    """The pass of :func:`read_kineto` over a trace's events, into ``kt``: ``count`` is the
    number of events read (also when one is refused: the error names it), ``pids`` the number of
    host events of each process."""

    def __init__(self, kt: KinetoTrace, wanted_rfs: set[int] | frozenset[int] | None,
                 on_event: OnEvent | None) -> None:
        self.kt, self.wanted_rfs, self.on_event = kt, wanted_rfs, on_event
        self.count = 0
        self.pids: dict[int, int] = {}

    def read(self, events: Iterable[Any]) -> None:
        """Take each of ``events`` in turn.  Read without ``on_event``, a CPU op of the common
        shape (a complete op whose times are floats in range, whose process, thread, ``Record
        function id`` and ``External id`` are 64-bit integers, the process and the ids
        non-negative, neither a ProfilerStep nor ``finished``) is taken here as
        :func:`_take_event` would take it, without a call per field, and counted at the end
        (``used``, ``rf_events``, ``pids``); any other event by :func:`_take_event`."""
        kt, wanted, pids, on_event = self.kt, self.wanted_rfs, self.pids, self.on_event
        ops = kt.ops
        assert isinstance(ops, SpanTable)  # filled while read
        put, ext_rf, intern = ops.put, kt.ext_rf, sys.intern
        plain = on_event is None
        count = taken = mark = 0
        last_pid = -1
        try:
            for ev in events:
                count += 1
                if not plain or type(ev) is not dict or ev.get("cat") != "cpu_op":
                    _take_event(kt, ev, wanted, pids, on_event)
                    continue
                try:
                    ph, name, ts, dur, pid, tid, args = _OP_FIELDS(ev)
                    rf, ext = _OP_IDS(args)
                except (KeyError, TypeError):  # a field missing, or arguments that are not an object
                    _take_event(kt, ev, wanted, pids, on_event)
                    continue
                if not (ph == "X" and type(name) is str and type(ts) is float and type(dur) is float
                        and type(pid) is int and type(tid) is int and type(rf) is int and type(ext) is int
                        and -_MAX_US <= ts <= _MAX_US and 0.0 <= dur <= _MAX_US and 0 <= pid < INT64_END
                        and -INT64_END <= tid < INT64_END and 0 <= rf < INT64_END and 0 <= ext < INT64_END
                        and "finished" not in args and not name.startswith("ProfilerStep#")):
                    _take_event(kt, ev, wanted, pids, on_event)
                    continue
                if pid != last_pid:  # the ops of one process come in runs: counted by the run
                    if last_pid >= 0:
                        pids[last_pid] += taken - mark
                    pids.setdefault(pid, 0)
                    last_pid, mark = pid, taken
                taken += 1
                if wanted is None or rf in wanted:
                    put(rf, ts, dur, tid, intern(name))
                ext_rf[ext] = rf
        finally:
            self.count = count
        if last_pid >= 0:
            pids[last_pid] += taken - mark
        kt.used += taken
        kt.rf_events += taken


#: the fields of a CPU op that :meth:`_EventReader.read` takes, and the ids among its arguments
_OP_FIELDS = operator.itemgetter("ph", "name", "ts", "dur", "pid", "tid", "args")
_OP_IDS = operator.itemgetter("Record function id", "External id")


@cache
def _event_decoder() -> Callable[[bytes], list]:
    """The batch decoder of :func:`read_kineto` alone: each event with only the keys and the
    arguments it reads (an op's ``Input Dims``, ``Input type`` and the like are skipped)."""
    value = json_value()
    fields: dict[str, Any] = dict.fromkeys(("ph", "cat", "name", "ts", "dur", "pid", "tid"), value)
    fields["args"] = keyed_type("args", dict.fromkeys(_READ_ARGS, value))
    return typed_decoder(keyed_type("event", fields))


#: the arguments of an event that :func:`read_kineto` reads
_READ_ARGS = ("Record function id", "External id", "Sequence number", "finished", "device", "stream", "correlation",
              "wait_on_stream", "wait_on_cuda_event_record_corr_id")


def _take_event(kt: KinetoTrace, ev: Any, wanted_rfs: set[int] | frozenset[int] | None,
                pids: dict[int, int], on_event: OnEvent | None) -> None:
    """Keep what the conversion uses of one trace event (complete events of the used kinds)."""
    if not isinstance(ev, dict):  # its op would be lost
        raise ValueError(f"an event that is not a JSON object ({type(ev).__name__})")
    if ev.get("ph") != "X":
        return
    cat = ev.get("cat")
    if not isinstance(cat, str) or cat not in _USED_CATS:
        return
    args = ev.get("args")
    if not isinstance(args, dict):
        args = {}
    name = ev.get("name")
    needed = ("name", "ts", "dur") if on_event is not None else ("ts", "dur")  # alone, its name makes an op
    missing = [k for k in needed if k not in ev]
    if missing:
        raise ValueError(f"a complete {cat!r} event without {' and '.join(repr(k) for k in missing)}")
    if not isinstance(name, str) and on_event is not None:
        raise ValueError(f"a {cat!r} event's name {name!r} is not a string")
    name = sys.intern(name) if isinstance(name, str) else ""  # names repeat: one copy each
    kt.used += 1
    ts, dur = event_time(ev["ts"], "ts"), event_duration(ev["dur"], "dur")
    pid = -1
    if cat in _HOST_CATS:
        pid = int64_from_number(ev.get("pid"))
        if pid >= 0:
            pids[pid] = pids.get(pid, 0) + 1
    if cat in ("cpu_op", "user_annotation"):
        if on_event is None:
            _host_op(kt, ev, args, name, ts, dur, wanted_rfs)
        else:
            _step_or_unfinished(kt, ev, args, name, ts, dur)
            on_event(cat, name, ts, dur, args, pid, ev)
    elif cat in _GPU_CATS:
        kt.gpu.append(GpuEvent(name, ts, dur, event_int(args.get("device"), "device", 0),
                               event_int(args.get("stream"), "stream", 0),
                               event_int(args.get("correlation"), "correlation"),
                               event_int(args.get("External id"), "External id")))
    elif cat in ("cuda_runtime", "cuda_driver"):
        _runtime_call(kt, ev, args, name, ts, dur)
        if on_event is not None:
            on_event(cat, name, ts, dur, args, pid, ev)
    else:
        _sync_event(kt, ev, args, name, ts, dur)


def _host_op(kt: KinetoTrace, ev: dict, args: dict, name: str, ts: float, dur: float,
             wanted_rfs: set[int] | frozenset[int] | None) -> None:
    """A CPU op or annotation: its timing (when wanted), its external id, a ProfilerStep span."""
    rf = event_int(args.get("Record function id"), "Record function id")
    ext = event_int(args.get("External id"), "External id")
    if rf >= 0:
        kt.rf_events += 1
        if wanted_rfs is None or rf in wanted_rfs:
            ops = kt.ops
            assert isinstance(ops, SpanTable)  # filled while read
            ops.put(rf, ts, dur, event_int(ev.get("tid"), "tid", 0), name)
        if ext >= 0:
            kt.ext_rf[ext] = rf
    elif ext >= 0:
        kt.by_ext[ext] = (ts, dur, event_int(ev.get("tid"), "tid", 0), name)
        seq = event_int(args.get("Sequence number"), "Sequence number")
        if seq >= 0:
            kt.ext_seq[ext] = seq
    _step_or_unfinished(kt, ev, args, name, ts, dur)


def _step_or_unfinished(kt: KinetoTrace, ev: dict, args: dict, name: str, ts: float, dur: float) -> None:
    """A CPU op or annotation: a ProfilerStep span, or one still running at the profiler's stop."""
    if name.startswith("ProfilerStep#"):
        kt.steps.append((ts, dur, event_int(ev.get("tid"), "tid", 0), name))
    if args.get("finished") is False:
        kt.unfinished.append((ts, name))


def _runtime_call(kt: KinetoTrace, ev: dict, args: dict, name: str, ts: float, dur: float) -> None:
    """A CUDA/HIP runtime or driver call: the launch time and external id of its correlation,
    and a synchronisation when it is a sync call."""
    corr, ext = event_int(args.get("correlation"), "correlation"), event_int(args.get("External id"), "External id")
    if corr >= 0:
        kt.corr_ts[corr] = ts
        kt.corr_tid[corr] = event_int(ev.get("tid"), "tid", 0)
        if ext >= 0:
            kt.corr_ext[corr] = ext
            if ext == corr:
                kt.runtime_ext_is_corr += 1
            else:
                kt.runtime_ext_other += 1
    kind = _SYNC_CALLS.get(name)
    if kind:
        kt.syncs.append(SyncEvent(kind, ts, dur, event_int(ev.get("tid"), "tid", 0), ext,
                                  event_int(args.get("stream"), "stream"), corr))


def _sync_event(kt: KinetoTrace, ev: dict, args: dict, name: str, ts: float, dur: float) -> None:
    """A ``cuda_sync`` event: a stream waiting for another, or a host sync naming its stream."""
    if "Wait" in name:  # "Stream Wait Event": one stream waits for another
        kt.stream_waits.append(StreamWait(
            ts, event_int(args.get("device"), "device", 0), event_int(args.get("stream"), "stream"),
            event_int(args.get("wait_on_stream"), "wait_on_stream"),
            event_int(args.get("wait_on_cuda_event_record_corr_id"), "wait_on_cuda_event_record_corr_id")))
        return
    kind = "device" if "Context" in name or "Device" in name else ("event" if "Event" in name else "stream")
    stream = event_int(args.get("wait_on_stream", args.get("stream")), "wait_on_stream")
    kt.syncs.append(SyncEvent(kind, ts, dur, event_int(ev.get("tid"), "tid", 0),
                              event_int(args.get("External id"), "External id"), stream,
                              event_int(args.get("correlation"), "correlation"), True))
