"""Write a :class:`TimelineData` as a Perfetto protobuf trace (``perfetto.protos.Trace``).

Packets are encoded in bulk with :mod:`_protowire` from the published trace proto's field
numbers: track descriptors (one process per rank, a child track per lane, a counter track per
rank, a process for the critical path), interned event and annotation names, then track events
sorted by time (slice ends before slice begins at one instant, outer slices begin first), with
debug annotations (node id, bytes, peer, group, algorithm, kind) and flow ids.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import _protowire as pw
from ._spans import FLOW_KINDS, SPAN_KINDS
from ._timeline import TimelineData

__all__ = ["write_perfetto"]

# perfetto.protos field numbers (protos/perfetto/trace/...)
_TRACE_PACKET = 1
_P_TIMESTAMP, _P_SEQ_ID, _P_TRACK_EVENT, _P_INTERNED, _P_SEQ_FLAGS, _P_TRACK_DESC = 8, 10, 11, 12, 13, 60
_SEQ_CLEARED, _SEQ_NEEDS_STATE = 1, 2
_E_ANNOTATIONS, _E_TYPE, _E_NAME_IID, _E_TRACK_UUID, _E_COUNTER, _E_FLOW, _E_TERM_FLOW = 4, 9, 10, 11, 30, 47, 48
_BEGIN, _END, _INSTANT, _COUNTER = 1, 2, 3, 4
_I_EVENT_NAMES, _I_ANNOTATION_NAMES = 2, 3
_A_NAME_IID, _A_INT, _A_STRING = 1, 4, 6
_D_UUID, _D_NAME, _D_PROCESS, _D_PARENT, _D_COUNTER = 1, 2, 3, 5, 8
_PROC_PID, _PROC_NAME = 1, 6
_SEQ = 1
_CHUNK = 1 << 16
_ANNOTATIONS = ("node_id", "bytes", "peer", "group", "algorithm", "kind")


def _uuid_process(rank: int) -> int:
    return (rank + 2) << 24


def write_perfetto(data: TimelineData, path: Path, title: str) -> None:
    """Write ``data`` to ``path`` (a new file)."""
    names = list(data.spans.names)
    path_names = {label: i for i, label in enumerate(dict.fromkeys(data.path_label))}
    event_names = names + list(path_names) + list(data.notes)
    with open(path, "wb") as f:
        f.write(_descriptors(data, title))
        f.write(_interned(event_names))
        for ev in _events(data, len(names), path_names, len(names) + len(path_names)):
            f.write(ev)


def _packet(body: bytes) -> bytes:
    return pw.tag(_TRACE_PACKET, 2) + pw.varint_bytes(len(body)) + body


def _msg(number: int, body: bytes) -> bytes:
    return pw.tag(number, 2) + pw.varint_bytes(len(body)) + body


def _uint(number: int, value: int) -> bytes:
    return pw.tag(number, 0) + pw.varint_bytes(value)


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
        if len(data.counter_ts):
            out.append(_descriptor(_uuid_process(r) + (1 << 23), "comm in flight", parent=_uuid_process(r),
                                   counter=True))
    for k, (r, name) in enumerate(data.lanes):
        out.append(_descriptor(int(_lane_uuid(data, k)), name, parent=_uuid_process(r)))
    out.append(_descriptor(1, f"{title}: critical path", pid=1 << 22))
    out.append(_descriptor(2, "critical path", parent=1))
    return b"".join(out)


def _lane_uuid(data: TimelineData, k: int | np.ndarray) -> np.ndarray:
    base = _lane_base(data)
    return base[k]


def _lane_base(data: TimelineData) -> np.ndarray:
    cached = getattr(data, "_lane_uuids", None)
    if cached is None:
        ranks = np.array([r for r, _ in data.lanes], np.int64)
        local = np.zeros(len(ranks), np.int64)
        if len(ranks):
            first = np.concatenate(([True], ranks[1:] != ranks[:-1]))
            starts = np.flatnonzero(first)
            local = np.arange(len(ranks)) - np.repeat(starts, np.diff(np.concatenate((starts, [len(ranks)]))))
        cached = ((ranks + 2) << 24) + 1 + local
        data._lane_uuids = cached  # type: ignore[attr-defined]
    return cached


def _interned(event_names: list[str]) -> bytes:
    out = []
    step = 4096
    for lo in range(0, max(len(event_names), 1), step):
        body = b""
        for iid, name in enumerate(event_names[lo:lo + step], start=lo + 1):
            body += _msg(_I_EVENT_NAMES, _uint(1, iid) + _msg(2, name.encode()))
        if lo == 0:
            for iid, name in enumerate(_ANNOTATIONS, start=1):
                body += _msg(_I_ANNOTATION_NAMES, _uint(1, iid) + _msg(2, name.encode()))
        flags = _SEQ_CLEARED if lo == 0 else _SEQ_NEEDS_STATE
        out.append(_packet(_uint(_P_SEQ_ID, _SEQ) + _uint(_P_SEQ_FLAGS, flags) + _msg(_P_INTERNED, body)))
    return b"".join(out)


class _Events:
    """All events in columns, in write order."""

    def __init__(self, data: TimelineData, path_iid: dict[str, int], path_base: int, note_base: int):
        n = len(data.index)
        start, dur = data.start_ns, data.dur_ns
        zero = dur == 0
        rows = np.arange(n, dtype=np.int64)
        track = _lane_uuid(data, data.lane) if n else np.zeros(0, np.int64)
        name = data.spans.name[data.index].astype(np.int64) + 1
        ts = [start[~zero], start[zero], start[~zero] + dur[~zero]]
        typ = [np.full((~zero).sum(), _BEGIN), np.full(zero.sum(), _INSTANT), np.full((~zero).sum(), _END)]
        trk = [track[~zero], track[zero], track[~zero]]
        iid = [name[~zero], name[zero], np.zeros((~zero).sum(), np.int64)]
        row = [rows[~zero], rows[zero], np.full((~zero).sum(), -1)]
        tie = [-dur[~zero], np.zeros(zero.sum(), np.int64), -start[~zero]]
        cls = [np.full((~zero).sum(), 2), np.full(zero.sum(), 3), np.zeros((~zero).sum(), np.int64)]
        if len(data.counter_ts):
            ts.append(data.counter_ts)
            typ.append(np.full(len(data.counter_ts), _COUNTER))
            trk.append(((data.counter_rank + 2) << 24) + (1 << 23))
            iid.append(np.zeros(len(data.counter_ts), np.int64))
            row.append(-2 - data.counter_value)
            tie.append(np.zeros(len(data.counter_ts), np.int64))
            cls.append(np.ones(len(data.counter_ts), np.int64))
        if len(data.path_start):
            piid = np.array([path_base + path_iid[lbl] + 1 for lbl in data.path_label], np.int64)
            p0, p1 = data.path_start, data.path_start + data.path_dur
            ts += [p0, p1]
            typ += [np.full(len(p0), _BEGIN), np.full(len(p0), _END)]
            trk += [np.full(len(p0), 2), np.full(len(p0), 2)]
            iid += [piid, np.zeros(len(p0), np.int64)]
            row += [np.full(len(p0), -1), np.full(len(p0), -1)]
            tie += [-data.path_dur, -p0]
            cls += [np.full(len(p0), 2), np.zeros(len(p0), np.int64)]
        for k in range(len(data.notes)):
            ts.append(np.zeros(1, np.int64))
            typ.append(np.full(1, _INSTANT))
            trk.append(np.full(1, 2))
            iid.append(np.full(1, note_base + k + 1, np.int64))
            row.append(np.full(1, -1))
            tie.append(np.zeros(1, np.int64))
            cls.append(np.full(1, 3))
        self.ts = np.concatenate(ts).astype(np.int64)
        order = np.lexsort((np.concatenate(tie), np.concatenate(cls), self.ts))
        self.ts = self.ts[order]
        self.type = np.concatenate(typ).astype(np.int64)[order]
        self.track = np.concatenate(trk).astype(np.int64)[order]
        self.iid = np.concatenate(iid).astype(np.int64)[order]
        self.row = np.concatenate(row).astype(np.int64)[order]


def _events(data: TimelineData, npath_base: int, path_iid: dict[str, int], note_base: int):
    ev = _Events(data, path_iid, npath_base, note_base)
    args = _Args(data)
    for lo in range(0, len(ev.ts), _CHUNK):
        sl = slice(lo, lo + _CHUNK)
        yield _encode(ev.ts[sl], ev.type[sl], ev.track[sl], ev.iid[sl], ev.row[sl], args)


class _Args:
    """Per drawn span: its debug annotations and flow ids, as lookups by row."""

    def __init__(self, data: TimelineData):
        s, idx = data.spans, data.index
        self.node_id = s.node_id[idx]
        self.bytes = s.bytes[idx]
        self.peer = s.peer[idx]
        self.group = s.group[idx]
        self.algorithm = s.algorithm[idx]
        self.kind = s.kind[idx]
        self.strings = [[_annotation_str(k, v) for v in s.strings] for k in (4, 5)]
        self.kinds = [_annotation_str(6, k) for k in SPAN_KINDS]
        n = len(idx)
        fid = np.arange(1, len(data.flow_src) + 1, dtype=np.uint64)
        self.out = _fixed_by_row(data.flow_src, fid, n, _E_FLOW)
        self.into = _fixed_by_row(data.flow_dst, fid, n, _E_TERM_FLOW)
        self.flow_kinds = FLOW_KINDS

    def pieces(self, rows: np.ndarray) -> pw.Piece:
        """The annotations and flows of ``rows`` (-1: none), encoded for the rows that have a span."""
        has = rows >= 0
        r = rows[has]
        parts = [
            _present(_annotation_int, 1, self.node_id[r], self.node_id[r] >= 0),
            _present(_annotation_int, 2, self.bytes[r], self.bytes[r] > 0),
            _present(_annotation_int, 3, self.peer[r], self.peer[r] >= 0),
            pw.lookup(self.strings[0] + [b""], np.where(self.group[r] >= 0, self.group[r], len(self.strings[0]))),
            pw.lookup(self.strings[1] + [b""], np.where(self.algorithm[r] >= 0, self.algorithm[r],
                                                        len(self.strings[1]))),
            pw.lookup(self.kinds, self.kind[r].astype(np.int64)),
            _rows_of(self.out, r),
            _rows_of(self.into, r),
        ]
        return pw.expand(pw.concat(*parts), has)


def _present(encode, name_iid: int, values: np.ndarray, keep: np.ndarray) -> pw.Piece:
    """``encode(name_iid, values)`` for the rows where ``keep``, empty elsewhere."""
    return pw.expand(encode(name_iid, values[keep]), keep)


def _annotation_str(name_iid: int, value: str) -> bytes:
    return _msg(_E_ANNOTATIONS, _uint(_A_NAME_IID, name_iid) + _msg(_A_STRING, value.encode()))


def _annotation_int(name_iid: int, values: np.ndarray) -> pw.Piece:
    n = len(values)
    body = pw.concat(pw.const(_uint(_A_NAME_IID, name_iid) + pw.tag(_A_INT, 0), n), pw.varints(values))
    return pw.field(_E_ANNOTATIONS, body)


def _fixed_by_row(rows: np.ndarray, ids: np.ndarray, n: int, number: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the bytes of ``number: id`` (fixed64) for every flow of that row: (flat, lens)."""
    order = np.argsort(rows, kind="stable")
    entry = np.empty((len(rows), 10), np.uint8)
    key = np.frombuffer(pw.tag(number, 1), np.uint8)
    entry[:, :2] = key
    entry[:, 2:] = ids[order].astype("<u8").view(np.uint8).reshape(-1, 8)
    counts = np.bincount(rows, minlength=n) if len(rows) else np.zeros(n, np.int64)
    lens = counts * 10
    return entry.reshape(-1), lens


def _rows_of(table: tuple[np.ndarray, np.ndarray], r: np.ndarray) -> pw.Piece:
    flat, lens = table
    if not len(flat):
        return np.zeros(0, np.uint8), np.zeros(len(r), np.int64)
    starts = np.cumsum(lens) - lens
    return pw._gather(flat, starts[r], lens[r]), lens[r]


def _encode(ts: np.ndarray, typ: np.ndarray, track: np.ndarray, iid: np.ndarray, row: np.ndarray,
            args: _Args) -> bytes:
    n = len(ts)
    counter = typ == _COUNTER
    named = iid > 0
    event = [
        pw.lookup([pw.tag(_E_TYPE, 0) + pw.varint_bytes(t) for t in range(5)], typ),
        pw.const(pw.tag(_E_TRACK_UUID, 0), n), pw.varints(track),
        pw.expand(pw.concat(pw.const(pw.tag(_E_NAME_IID, 0), int(named.sum())), pw.varints(iid[named])), named),
        pw.expand(pw.concat(pw.const(pw.tag(_E_COUNTER, 0), int(counter.sum())), pw.varints(-2 - row[counter])),
                  counter),
        args.pieces(np.where(row >= 0, row, -1)),
    ]
    event_len = np.sum([p[1] for p in event], axis=0)
    body = [pw.const(pw.tag(_P_TIMESTAMP, 0), n), pw.varints(ts),
            pw.const(_uint(_P_SEQ_ID, _SEQ) + _uint(_P_SEQ_FLAGS, _SEQ_NEEDS_STATE) + pw.tag(_P_TRACK_EVENT, 2), n),
            pw.varints(event_len), *event]
    body_len = np.sum([p[1] for p in body], axis=0)
    return pw.concat(pw.const(pw.tag(_TRACE_PACKET, 2), n), pw.varints(body_len), *body)[0].tobytes()
