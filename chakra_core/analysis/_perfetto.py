"""Write a :class:`TimelineData` as a Perfetto protobuf trace (``perfetto.protos.Trace``).

Field numbers are the published trace proto's.  The file holds track descriptors (one process
per rank, a child track per lane, counter tracks per rank, a process for the critical path),
interned event names, debug-annotation names and annotation string values, then the track
events in time order (at one instant: slice ends, counter values, slice begins, instants), with
debug annotations (node id, bytes, peer, group, algorithm, kind; strings by interned id) and
flow ids.  Events are encoded in chunks with :class:`_protowire.Rows` from per-class lists that
are each sorted once and merged, so that memory beyond the prepared columns stays bounded by
the chunk.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

import numpy as np

from chakra_core.analysis._spans import SPAN_KINDS
from chakra_core.analysis._timeline_data import TimelineData
from chakra_core.io._protowire import SCRATCH, Rows, tag, varint_lens
from chakra_core.io._varint import encode_varint

__all__ = ["write_perfetto"]

# perfetto.protos field numbers (protos/perfetto/trace/...)
_TRACE_PACKET = 1
_P_TIMESTAMP, _P_SEQ_ID, _P_TRACK_EVENT, _P_INTERNED, _P_SEQ_FLAGS, _P_TRACK_DESC = 8, 10, 11, 12, 13, 60
_SEQ_CLEARED, _SEQ_NEEDS_STATE = 1, 2
_E_ANNOTATIONS, _E_TYPE, _E_NAME_IID, _E_TRACK_UUID, _E_COUNTER, _E_FLOW, _E_TERM_FLOW = 4, 9, 10, 11, 30, 47, 48
_BEGIN, _END, _INSTANT, _COUNTER = 1, 2, 3, 4
_I_EVENT_NAMES, _I_ANNOTATION_NAMES, _I_ANNOTATION_STRINGS = 2, 3, 29
_A_NAME_IID, _A_INT, _A_STRING_IID = 1, 4, 17
_D_UUID, _D_NAME, _D_PROCESS, _D_PARENT, _D_COUNTER = 1, 2, 3, 5, 8
_PROC_PID, _PROC_NAME = 1, 6
_SEQ = 1
_CHUNK = 1 << 16
#: chunks encoded at once (at most one per CPU)
_THREADS = 4
#: a row with more flows than this (a collective's last member) is encoded apart from the rest
_FLOWS_PER_ROW = 4
_INT_ANNOTATIONS = ("node_id", "bytes", "peer")
_STRING_ANNOTATIONS = ("group", "algorithm", "kind")
_PATH_TRACK = 2


def _uuid_process(rank: int) -> int:
    return (rank + 2) << 24


def _counter_uuids(data: TimelineData) -> np.ndarray:
    """The track uuid of each counter series: its rank's process uuid + 2^23 + its position
    among the rank's series."""
    ranks = np.array([r for r, _ in data.counter_names], np.int64)
    return ((ranks + 2) << 24) + (1 << 23) + _local(ranks)


def _local(ranks: np.ndarray) -> np.ndarray:
    """Each entry's position among the consecutive entries of its rank."""
    if not len(ranks):
        return ranks
    starts = np.flatnonzero(np.concatenate(([True], ranks[1:] != ranks[:-1])))
    return np.arange(len(ranks)) - np.repeat(starts, np.diff(np.concatenate((starts, [len(ranks)]))))


def write_perfetto(data: TimelineData, path: Path, title: str, wrote: Callable[[int], None] | None = None) -> None:
    """Write ``data`` to ``path`` (a new file); ``wrote(nbytes)`` is called after each part written."""
    names = list(data.spans.names)
    path_names = list(dict.fromkeys(data.path_label))
    strings = list(data.spans.strings) + list(SPAN_KINDS)
    with open(path, "wb") as f:
        f.write(_descriptors(data, title))
        f.write(_interned(names + path_names + list(data.notes), strings))
        _write_events(f, data, path_names, len(names), wrote or _ignore)


def _ignore(nbytes: int) -> None:
    """No progress reported."""


def _packet(body: bytes) -> bytes:
    return _msg(_TRACE_PACKET, body)


def _msg(number: int, body: bytes) -> bytes:
    return tag(number, 2) + encode_varint(len(body)) + body


def _uint(number: int, value: int) -> bytes:
    return tag(number, 0) + encode_varint(value)


def _descriptor(uuid: int, name: str, parent: int | None = None, pid: int | None = None,
                counter: bool = False) -> bytes:
    body = _uint(_D_UUID, uuid) + _msg(_D_NAME, name.encode())
    if pid is not None:
        body += _msg(_D_PROCESS, _uint(_PROC_PID, pid) + _msg(_PROC_NAME, name.encode()))
    if parent is not None:
        body += _uint(_D_PARENT, parent)
    if counter:
        body += _msg(_D_COUNTER, b"")
    return _packet(_msg(_P_TRACK_DESC, body))


def _descriptors(data: TimelineData, title: str) -> bytes:
    out = []
    for r, label in data.process_names.items():
        out.append(_descriptor(_uuid_process(r), label, pid=r + 1))
    for uuid, (r, name) in zip(_counter_uuids(data).tolist(), data.counter_names):
        out.append(_descriptor(uuid, name, parent=_uuid_process(r), counter=True))
    for uuid, (r, name) in zip(_lane_uuids(data).tolist(), data.lanes):
        out.append(_descriptor(uuid, name, parent=_uuid_process(r)))
    out.append(_descriptor(1, f"{title}: critical path", pid=1 << 22))
    out.append(_descriptor(_PATH_TRACK, "critical path", parent=1))
    return b"".join(out)


def _lane_uuids(data: TimelineData) -> np.ndarray:
    """The track uuid of each lane: its rank's process uuid + 1 + its position among the rank's lanes."""
    ranks = np.array([r for r, _ in data.lanes], np.int64)
    return ((ranks + 2) << 24) + 1 + _local(ranks)


def _interned(event_names: list[str], strings: list[str]) -> bytes:
    """Interned-data packets: event names (iid = position + 1), annotation names, and
    annotation string values (iid = position + 1 in ``strings``)."""
    entries = [(_I_EVENT_NAMES, i + 1, n) for i, n in enumerate(event_names)]
    entries += [(_I_ANNOTATION_NAMES, i + 1, n) for i, n in enumerate(_INT_ANNOTATIONS + _STRING_ANNOTATIONS)]
    entries += [(_I_ANNOTATION_STRINGS, i + 1, s) for i, s in enumerate(strings)]
    out = []
    step = 4096
    for lo in range(0, max(len(entries), 1), step):
        body = b"".join(_msg(field, _uint(1, iid) + _msg(2, text.encode()))
                        for field, iid, text in entries[lo:lo + step])
        flags = _SEQ_CLEARED if lo == 0 else _SEQ_NEEDS_STATE
        out.append(_packet(_uint(_P_SEQ_ID, _SEQ) + _uint(_P_SEQ_FLAGS, flags) + _msg(_P_INTERNED, body)))
    return b"".join(out)


class _Flows:
    """Each drawn span's outgoing and terminating flow ids, by row (CSR)."""

    def __init__(self, data: TimelineData):
        n = len(data.index)
        fid = np.arange(1, len(data.flow_src) + 1, dtype=np.uint64)
        self.out = _csr(data.flow_src, fid, n)
        self.into = _csr(data.flow_dst, fid, n)

    def counts(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Outgoing and terminating flows of each of ``rows``."""
        return _count(self.out, rows), _count(self.into, rows)


def _csr(rows: np.ndarray, ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(rows, kind="stable")
    ptr = np.zeros(n + 1, np.int64)
    if len(rows):
        np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return ptr, ids[order]


def _count(table: tuple[np.ndarray, np.ndarray], rows: np.ndarray) -> np.ndarray:
    ptr, _ = table
    return ptr[rows + 1] - ptr[rows]


def _ids(table: tuple[np.ndarray, np.ndarray], rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``len(rows) x max(counts)`` flow ids (zero past a row's count)."""
    ptr, ids = table
    k = int(counts.max()) if len(counts) else 0
    if not k:
        return np.zeros((len(rows), 0), np.uint64)
    at = ptr[rows][:, None] + np.arange(k)
    return np.where(np.arange(k) < counts[:, None], ids[np.minimum(at, len(ids) - 1)], np.uint64(0))


class _Lists:
    """The events in lists that are each in time order, and their merge.

    Lists: slice begins, slice ends, instants (drawn spans of no duration), counter values,
    critical-path begins and ends, notes.  ``order`` merges them by (time, class), the class
    putting slice ends before counter values before begins before instants at one instant."""

    def __init__(self, data: TimelineData, path_names: list[str], name_count: int):
        n = len(data.index)
        rows = np.arange(n, dtype=np.int64)
        zero = data.dur_ns == 0
        slices = rows[~zero]
        begin = slices[np.argsort(data.start_ns[slices])]
        end_ts = data.start_ns[slices] + data.dur_ns[slices]
        e_order = np.argsort(end_ts)
        instant = rows[zero][np.argsort(data.start_ns[zero])]
        c_order = np.argsort(data.counter_ts)
        path_iid = {label: name_count + i + 1 for i, label in enumerate(path_names)}
        piid = np.array([path_iid[label] for label in data.path_label], np.int64)
        note_iid = name_count + len(path_names) + 1 + np.arange(len(data.notes), dtype=np.int64)
        p0 = data.path_start
        #: per list: (event type, class at one instant, times, span rows or -1, track or None, name iid)
        self.ts = [data.start_ns[begin], end_ts[e_order], data.start_ns[instant], data.counter_ts[c_order],
                   p0, p0 + data.path_dur, np.zeros(len(data.notes), np.int64)]
        self.rows = [begin, slices[e_order], instant, c_order, None, None, None]
        self.types = [_BEGIN, _END, _INSTANT, _COUNTER, _BEGIN, _END, _INSTANT]
        self.iid = [None, None, None, None, piid, None, note_iid]
        cls = [2, 0, 3, 1, 2, 0, 3]
        self.bounds = np.cumsum([0] + [len(t) for t in self.ts])
        key = np.concatenate([t.astype(np.int64) * 4 + c for t, c in zip(self.ts, cls)])
        self.order = np.argsort(key, kind="stable")

    def __len__(self) -> int:
        return int(self.bounds[-1])


#: the events of lists 1 and 5 (slice ends), 3 (counter values) and the others (slice begins and
#: instants) are encoded as three shapes of packet
_SHAPE_OF_LIST = np.array([0, 1, 0, 2, 0, 1, 0])
_BEGINS, _ENDS, _COUNTERS = 0, 1, 2


def _write_events(f: BinaryIO, data: TimelineData, path_names: list[str], name_count: int,
                  wrote: Callable[[int], None]) -> None:
    """Encode the events chunk by chunk (a few chunks at once on threads: numpy releases the GIL
    in its loops) and write them in order, calling ``wrote(nbytes)`` after each."""
    lists = _Lists(data, path_names, name_count)
    flows = _Flows(data)
    args = _Args(data)
    uuids = (_lane_uuids(data), _counter_uuids(data))
    chunks = range(0, len(lists), _CHUNK)
    workers = min(_THREADS, os.cpu_count() or 1)

    def encode(lo: int) -> np.ndarray:
        return _encode_chunk(lists, lists.order[lo:lo + _CHUNK], data, uuids, flows, args)

    def put(encoded: np.ndarray) -> None:
        f.write(encoded.data)
        wrote(encoded.nbytes)

    if workers < 2 or len(chunks) < 2:
        for lo in chunks:
            put(encode(lo))
        return
    with ThreadPoolExecutor(workers) as pool:
        pending: deque = deque()
        for lo in chunks:
            pending.append(pool.submit(encode, lo))
            if len(pending) > workers:
                put(pending.popleft().result())
        while pending:
            put(pending.popleft().result())


def _encode_chunk(lists: _Lists, pick: np.ndarray, data: TimelineData, uuids: tuple[np.ndarray, np.ndarray],
                  flows: _Flows, args: _Args) -> np.ndarray:
    """The packets of the events ``pick`` (positions in the merged lists), in order."""
    which = np.searchsorted(lists.bounds, pick, side="right") - 1
    pos = pick - lists.bounds[which]
    shape = _SHAPE_OF_LIST[which]
    parts = []
    for k in np.flatnonzero(np.bincount(shape, minlength=3)).tolist():
        sel = np.flatnonzero(shape == k)
        ev = _columns(lists, which[sel], pos[sel], data, *uuids)
        if k == _ENDS:
            parts.append((_ends(ev), sel))
        elif k == _COUNTERS:
            parts.append((_counters(ev), sel))
        else:
            parts += [(rows, sel[sub]) for rows, sub in _begins(ev, flows, args)]
    lens = np.zeros(len(pick), np.int64)
    own = [rows.lengths() for rows, _ in parts]
    for (_, sel), n in zip(parts, own):
        lens[sel] = n
    starts = np.cumsum(lens) - lens
    total = int(lens.sum())
    out = np.empty(total + SCRATCH, np.uint8)
    for (rows, sel), n in zip(parts, own):
        rows.write(out, starts[sel], n)
    return out[:total]


def _columns(lists: _Lists, which: np.ndarray, pos: np.ndarray, data: TimelineData,
             lane_uuid: np.ndarray, counter_uuid: np.ndarray) -> dict[str, np.ndarray]:
    """Time, track, name iid, drawn span (-1 none) and counter value of events from the lists."""
    n = len(which)
    ev = {"ts": np.empty(n, np.int64), "type": np.empty(n, np.int64), "track": np.empty(n, np.int64),
          "iid": np.zeros(n, np.int64), "row": np.full(n, -1, np.int64), "counter": np.zeros(n, np.int64)}
    for k in np.flatnonzero(np.bincount(which, minlength=len(lists.ts))).tolist():
        sel = which == k
        p = pos[sel]
        ev["ts"][sel] = lists.ts[k][p]
        ev["type"][sel] = lists.types[k]
        r = lists.rows[k]
        if k == 3:
            c = r[p]
            ev["track"][sel] = counter_uuid[data.counter_series[c]]
            ev["counter"][sel] = data.counter_value[c]
        elif r is not None:
            rows = r[p]
            ev["track"][sel] = lane_uuid[data.lane[rows]]
            if lists.types[k] != _END:
                ev["row"][sel] = rows
                ev["iid"][sel] = data.spans.name[data.index[rows]].astype(np.int64) + 1
        else:
            ev["track"][sel] = _PATH_TRACK
            if lists.iid[k] is not None:
                ev["iid"][sel] = lists.iid[k][p]
    return ev


class _Args:
    """Per drawn span: its annotation values (strings as interned ids)."""

    def __init__(self, data: TimelineData):
        self.index = data.index
        self.spans = data.spans
        self.kind_base = len(data.spans.strings) + 1

    def values(self, rows: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """(value, present) per annotation of :data:`_INT_ANNOTATIONS` + :data:`_STRING_ANNOTATIONS`."""
        s, i = self.spans, self.index[rows]
        node, size, peer = s.node_id[i], s.bytes[i], s.peer[i]
        group, algo = s.group[i].astype(np.int64), s.algorithm[i].astype(np.int64)
        return [(node, node >= 0), (size, size > 0), (peer, peer >= 0), (group + 1, group >= 0),
                (algo + 1, algo >= 0), (s.kind[i].astype(np.int64) + self.kind_base, np.ones(len(i), bool))]


def _head(p: Rows, ev: dict[str, np.ndarray], sel: np.ndarray | None = None) -> tuple[int, int]:
    """The fields every packet starts with: packet key and length, timestamp, sequence, track
    event key and length; returns the two length prefixes."""
    ts = ev["ts"] if sel is None else ev["ts"][sel]
    p.const(tag(_TRACE_PACKET, 2))
    packet = p.prefix()
    p.const(tag(_P_TIMESTAMP, 0))
    p.varint(ts)
    p.const(_uint(_P_SEQ_ID, _SEQ) + _uint(_P_SEQ_FLAGS, _SEQ_NEEDS_STATE) + tag(_P_TRACK_EVENT, 2))
    return packet, p.prefix()


def _close(p: Rows, prefixes: tuple[int, int]) -> Rows:
    p.fill(prefixes[1])
    p.fill(prefixes[0])
    return p


def _ends(ev: dict[str, np.ndarray]) -> Rows:
    p = Rows(len(ev["ts"]))
    prefixes = _head(p, ev)
    p.const(_uint(_E_TYPE, _END) + tag(_E_TRACK_UUID, 0))
    p.varint(ev["track"])
    return _close(p, prefixes)


def _counters(ev: dict[str, np.ndarray]) -> Rows:
    p = Rows(len(ev["ts"]))
    prefixes = _head(p, ev)
    p.const(_uint(_E_TYPE, _COUNTER) + tag(_E_TRACK_UUID, 0))
    p.varint(ev["track"])
    p.const(tag(_E_COUNTER, 0))
    p.varint(ev["counter"])
    return _close(p, prefixes)


def _begins(ev: dict[str, np.ndarray], flows: _Flows, args: _Args) -> list[tuple[Rows, np.ndarray]]:
    """Slice begins and instants.  Rows with many flows (a collective's last member) are encoded
    apart, grouped by their flow count's power of two, so that the others' flow slots stay narrow."""
    n = len(ev["ts"])
    has = ev["row"] >= 0
    n_out, n_in = np.zeros(n, np.int64), np.zeros(n, np.int64)
    n_out[has], n_in[has] = flows.counts(ev["row"][has])
    most = np.maximum(n_out, n_in)
    bucket = np.where(most > _FLOWS_PER_ROW, np.ceil(np.log2(np.maximum(most, 1))).astype(np.int64), 0)
    out = []
    for b in np.flatnonzero(np.bincount(bucket)).tolist():
        sel = np.flatnonzero(bucket == b)
        out.append((_begin_rows(ev, sel, n_out[sel], n_in[sel], flows, args), sel))
    return out


def _begin_rows(ev: dict[str, np.ndarray], sel: np.ndarray, n_out: np.ndarray, n_in: np.ndarray, flows: _Flows,
                args: _Args) -> Rows:
    n = len(sel)
    row = ev["row"][sel]
    p = Rows(n)
    prefixes = _head(p, ev, sel)
    p.lookup([_uint(_E_TYPE, t) + tag(_E_TRACK_UUID, 0) for t in range(_INSTANT + 1)], ev["type"][sel])
    p.varint(ev["track"][sel])
    p.const(tag(_E_NAME_IID, 0))
    p.varint(ev["iid"][sel])
    has = row >= 0
    if has.any():
        _annotations(p, args, row, has)
        r = row[has]
        for table, counts, key in ((flows.out, n_out[has], tag(_E_FLOW, 1)),
                                   (flows.into, n_in[has], tag(_E_TERM_FLOW, 1))):
            ids = np.zeros((n, int(counts.max()) if len(counts) else 0), np.uint64)
            ids[has] = _ids(table, r, counts)
            full = np.zeros(n, np.int64)
            full[has] = counts
            p.fixed64s(key, ids, full)
    return _close(p, prefixes)


def _annotations(p: Rows, args: _Args, row: np.ndarray, has: np.ndarray) -> None:
    """The debug annotations of the rows ``has`` (``row`` their drawn span): an int value or an
    interned string id each, with its name by interned id."""
    n = len(row)
    everywhere = bool(has.all())
    for k, (value, present) in enumerate(args.values(row[has])):
        if everywhere:
            v, keep = value.astype(np.int64), present
        else:
            v, keep = np.zeros(n, np.int64), np.zeros(n, bool)
            v[has], keep[has] = value, present
        if not keep.any():
            continue
        v = np.where(keep, v, 0).astype(np.uint64)
        value_tag = tag(_A_INT, 0) if k < len(_INT_ANNOTATIONS) else tag(_A_STRING_IID, 0)
        name = _uint(_A_NAME_IID, k + 1) + value_tag
        p.const(tag(_E_ANNOTATIONS, 2), keep)
        p.varint(len(name) + varint_lens(v), keep)
        p.const(name, keep)
        p.varint(v, keep)
