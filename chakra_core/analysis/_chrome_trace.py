"""Write a :class:`TimelineData` as Chrome trace JSON (times in us), streamed in chunks."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from chakra_core.analysis._spans import FLOW_KINDS, SPAN_KINDS
from chakra_core.analysis._timeline_data import TimelineData

__all__ = ["write_chrome"]

_CHUNK = 100_000
_PATH_PID = 1 << 22


def write_chrome(data: TimelineData, path: Path, title: str, wrote: Callable[[int], None] | None = None) -> None:
    """Write ``data`` to ``path`` (a new file): one process per rank, a thread per lane.  Events
    are formatted as text directly (times in us with the ns kept as three decimals);
    ``wrote(nchars)`` is called after each part written."""
    with open(path, "w") as f:
        f.write('{"displayTimeUnit": "ns", "otherData": ')
        f.write(json.dumps({"time_unit": "us (ts, dur)", "source": title, "notes": data.notes}))
        f.write(', "traceEvents": [\n')
        first = [True]

        def emit(events: list[str]) -> None:
            if not events:
                return
            text = ",\n".join(events)
            f.write(text if first[0] else ",\n" + text)
            first[0] = False
            if wrote is not None:
                wrote(len(text))

        emit([json.dumps(e, separators=(",", ":")) for e in _metadata(data, title)])
        for lo in range(0, len(data.index), _CHUNK):
            emit(_slices(data, lo, min(lo + _CHUNK, len(data.index))))
        for lo in range(0, len(data.flow_src), _CHUNK):
            emit(_flows(data, lo, min(lo + _CHUNK, len(data.flow_src))))
        for lo in range(0, len(data.counter_ts), _CHUNK):
            emit(_counters(data, lo, min(lo + _CHUNK, len(data.counter_ts))))
        emit([json.dumps({"ph": "X", "pid": _PATH_PID, "tid": 0, "ts": s / 1000, "dur": d / 1000, "name": label},
                         separators=(",", ":"))
              for s, d, label in zip(data.path_start.tolist(), data.path_dur.tolist(), data.path_label)])
        f.write("\n]}\n")


def _us(ns: int) -> str:
    """``ns`` in us as a JSON number, exactly (three decimals)."""
    if ns < 0:
        return "-" + _us(-ns)
    return f"{ns // 1000}.{ns % 1000:03d}"


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


def _slices(data: TimelineData, lo: int, hi: int) -> list[str]:
    s, idx = data.spans, data.index[lo:hi]
    tid = _tid(data)[data.lane[lo:hi]]
    names = [json.dumps(n) for n in s.names]
    strings = [json.dumps(x) for x in s.strings]
    kinds = [f'"kind":{json.dumps(k)}' for k in SPAN_KINDS]
    out = []
    cols = zip(data.rank[lo:hi].tolist(), tid.tolist(), data.start_ns[lo:hi].tolist(),
               data.dur_ns[lo:hi].tolist(), s.name[idx].tolist(), s.kind[idx].tolist(), s.node_id[idx].tolist(),
               s.bytes[idx].tolist(), s.peer[idx].tolist(), s.group[idx].tolist(), s.algorithm[idx].tolist())
    for r, t, start, dur, name, kind, node, size, peer, group, algo in cols:
        args = kinds[kind]
        if node >= 0:
            args += f',"node_id":{node}'
        if size > 0:
            args += f',"bytes":{size}'
        if peer >= 0:
            args += f',"peer":{peer}'
        if group >= 0:
            args += f',"group":{strings[group]}'
        if algo >= 0:
            args += f',"algorithm":{strings[algo]}'
        out.append(f'{{"ph":"X","pid":{r},"tid":{t},"ts":{_us(start)},"dur":{_us(dur)},"name":{names[name]},'
                   f'"args":{{{args}}}}}')
    return out


def _flows(data: TimelineData, lo: int, hi: int) -> list[str]:
    tid = _tid(data)
    names = [json.dumps(k) for k in FLOW_KINDS]
    out = []
    cols = zip(range(lo + 1, hi + 1), data.flow_src[lo:hi].tolist(), data.flow_dst[lo:hi].tolist(),
               data.flow_kind[lo:hi].tolist())
    rank, lane, start = data.rank, data.lane, data.start_ns
    for k, a, b, kind in cols:
        name = names[kind]
        out.append(f'{{"ph":"s","id":{k},"name":{name},"cat":{name},"pid":{int(rank[a])},'
                   f'"tid":{int(tid[lane[a]])},"ts":{_us(int(start[a]))}}}')
        out.append(f'{{"ph":"f","bp":"e","id":{k},"name":{name},"cat":{name},"pid":{int(rank[b])},'
                   f'"tid":{int(tid[lane[b]])},"ts":{_us(int(start[b]))}}}')
    return out


def _counters(data: TimelineData, lo: int, hi: int) -> list[str]:
    names = [json.dumps(name) for _, name in data.counter_names]
    return [f'{{"ph":"C","pid":{r},"ts":{_us(t)},"name":{names[k]},"args":{{"ops":{v}}}}}'
            for r, t, v, k in zip(data.counter_rank[lo:hi].tolist(), data.counter_ts[lo:hi].tolist(),
                                  data.counter_value[lo:hi].tolist(), data.counter_series[lo:hi].tolist())]
