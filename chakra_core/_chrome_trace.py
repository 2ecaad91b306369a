"""Write a :class:`TimelineData` as Chrome trace JSON (times in us), streamed in chunks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ._spans import FLOW_KINDS, SPAN_KINDS
from ._timeline import TimelineData

__all__ = ["write_chrome"]

_CHUNK = 100_000
_PATH_PID = 1 << 22


def write_chrome(data: TimelineData, path: Path, title: str) -> None:
    """Write ``data`` to ``path`` (a new file): one process per rank, a thread per lane."""
    with open(path, "w") as f:
        f.write('{"displayTimeUnit": "ns", "otherData": ')
        f.write(json.dumps({"time_unit": "us (ts, dur)", "source": title, "notes": data.notes}))
        f.write(', "traceEvents": [\n')
        first = [True]

        def emit(events: list[dict]) -> None:
            if not events:
                return
            text = ",\n".join(json.dumps(e, separators=(",", ":")) for e in events)
            f.write(text if first[0] else ",\n" + text)
            first[0] = False

        emit(_metadata(data, title))
        for lo in range(0, len(data.index), _CHUNK):
            emit(_slices(data, lo, min(lo + _CHUNK, len(data.index))))
        emit(_flows(data))
        emit(_counters(data))
        emit([{"ph": "X", "pid": _PATH_PID, "tid": 0, "ts": s / 1000, "dur": d / 1000, "name": label}
              for s, d, label in zip(data.path_start.tolist(), data.path_dur.tolist(), data.path_label)])
        f.write("\n]}\n")


def _tid(data: TimelineData) -> np.ndarray:
    """The thread id of each lane: its position among the lanes of its rank."""
    ranks = np.array([r for r, _ in data.lanes], np.int64)
    if not len(ranks):
        return ranks
    starts = np.flatnonzero(np.concatenate(([True], ranks[1:] != ranks[:-1])))
    return np.arange(len(ranks)) - np.repeat(starts, np.diff(np.concatenate((starts, [len(ranks)]))))


def _metadata(data: TimelineData, title: str) -> list[dict]:
    out: list[dict] = [{"ph": "M", "name": "process_name", "pid": r, "args": {"name": label}}
                       for r, label in data.process_names.items()]
    for (r, name), tid in zip(data.lanes, _tid(data).tolist()):
        out.append({"ph": "M", "name": "thread_name", "pid": r, "tid": tid, "args": {"name": name}})
    out.append({"ph": "M", "name": "process_name", "pid": _PATH_PID, "args": {"name": f"{title}: critical path"}})
    return out


def _slices(data: TimelineData, lo: int, hi: int) -> list[dict]:
    s, idx = data.spans, data.index[lo:hi]
    tid = _tid(data)[data.lane[lo:hi]]
    out = []
    cols = zip(data.rank[lo:hi].tolist(), tid.tolist(), data.start_ns[lo:hi].tolist(),
               data.dur_ns[lo:hi].tolist(), s.name[idx].tolist(), s.kind[idx].tolist(), s.node_id[idx].tolist(),
               s.bytes[idx].tolist(), s.peer[idx].tolist(), s.group[idx].tolist(), s.algorithm[idx].tolist())
    for r, t, start, dur, name, kind, node, size, peer, group, algo in cols:
        args: dict = {"kind": SPAN_KINDS[kind]}
        if node >= 0:
            args["node_id"] = node
        if size > 0:
            args["bytes"] = size
        if peer >= 0:
            args["peer"] = peer
        if group >= 0:
            args["group"] = s.strings[group]
        if algo >= 0:
            args["algorithm"] = s.strings[algo]
        out.append({"ph": "X", "pid": r, "tid": t, "ts": start / 1000, "dur": dur / 1000,
                    "name": s.names[name], "args": args})
    return out


def _flows(data: TimelineData) -> list[dict]:
    tid = _tid(data)
    out = []
    for k, (a, b, kind) in enumerate(zip(data.flow_src.tolist(), data.flow_dst.tolist(), data.flow_kind.tolist())):
        name = FLOW_KINDS[kind]
        out.append({"ph": "s", "id": k + 1, "name": name, "cat": name, "pid": int(data.rank[a]),
                    "tid": int(tid[data.lane[a]]), "ts": int(data.start_ns[a]) / 1000})
        out.append({"ph": "f", "bp": "e", "id": k + 1, "name": name, "cat": name, "pid": int(data.rank[b]),
                    "tid": int(tid[data.lane[b]]), "ts": int(data.start_ns[b]) / 1000})
    return out


def _counters(data: TimelineData) -> list[dict]:
    return [{"ph": "C", "pid": r, "ts": t / 1000, "name": "comm in flight", "args": {"ops": v}}
            for r, t, v in zip(data.counter_rank.tolist(), data.counter_ts.tolist(), data.counter_value.tolist())]
