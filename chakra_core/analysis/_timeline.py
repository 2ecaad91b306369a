"""Timelines of spans: Perfetto's protobuf trace (the default) or Chrome trace JSON.

Selection (ranks, a time window, an optional cap on spans that is stated in the output), one
process per rank with one track per stream or queue, overlapping spans of one track spread over
lanes so that every track holds properly nested slices, flows for dependencies and for the
members of each collective and send/receive pair, counters per rank of communication in flight
and of the collective chunk phases in flight on each queue, and the cross-rank critical path on a
track of its own.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from chakra_core.analysis._spans import COMM_KINDS, FLOW_KINDS, SPAN_KINDS, Spans
from chakra_core.analysis._timeline_data import TimelineData
from chakra_core.analysis._timeline_options import TIMELINE_OPTIONS
from chakra_core.analysis._timeline_size import estimate_bytes, size_warning
from chakra_core.base._errors import ConfigError
from chakra_core.base._progress import progress
from chakra_core.host._api import Result

__all__ = ["write_timeline", "write_timeline_from_options", "add_span_outputs", "TimelineData", "parse_window",
           "TIMELINE_FORMATS"]

TIMELINE_FORMATS = ("perfetto", "json")


def parse_window(window: tuple[int, int] | str | None) -> tuple[int, int] | None:
    """``"START:END"`` (ns) or a pair as ``(start, end)``; None for None."""
    if window is None or isinstance(window, tuple):
        return window
    try:
        lo, hi = (int(x) for x in str(window).split(":"))
    except ValueError:
        raise ConfigError(f"time window {window!r}: expected START:END in ns, e.g. 0:5000000") from None
    return lo, hi


def write_timeline(spans: Spans, path: str | Path, *, format: str | None = None,
                   ranks: list[int] | str | None = None, window_ns: tuple[int, int] | str | None = None,
                   expand: bool = False, flows: bool = True, counters: bool = True, critical: bool = True,
                   max_spans: int | None = None, title: str = "chakra") -> dict[str, Any]:
    """Write ``spans`` as a timeline at ``path``, atomically.

    ``format``: ``perfetto`` (Perfetto's protobuf trace, the default; opens in ui.perfetto.dev)
    or ``json`` (Chrome trace JSON; the default for a path ending in ``.json``).  ``ranks`` and
    ``window_ns`` (start, end in ns, or ``"START:END"``) select what is drawn (spans crossing the window are cut at
    its edges); ``expand`` draws every rank a symmetric span set stands for; ``max_spans`` keeps
    the earliest spans only and says so in the timeline.  Returns what was written: ``path``,
    ``format``, ``spans`` (drawn), ``selected``, ``total``, ``truncated``, ``tracks``,
    ``flows``, ``counters``, ``critical_path_segments``, ``notes``.  A timeline estimated
    larger than ``CHAKRA_TIMELINE_WARN_MB`` (default 100 MB) is announced by a warning before it
    is written, and in its ``notes``.
    """
    from chakra_core.io._etio import atomic_output

    path = Path(path)
    fmt = format or ("json" if path.name.endswith((".json", ".json.gz")) else "perfetto")
    if fmt not in TIMELINE_FORMATS:
        raise ConfigError(f"timeline format {fmt!r}: expected one of {', '.join(TIMELINE_FORMATS)}")
    if isinstance(ranks, str):
        from chakra_core.trace._selection import parse_ranks

        ranks = sorted(parse_ranks(ranks.split(","), "timeline"))
    outside = [r for r in ranks or () if not 0 <= r < spans.nranks]
    if outside:
        raise ConfigError(f"timeline_ranks: rank {outside[0]} is not in the run (ranks 0-{spans.nranks - 1})")
    data, selected = _prepare(spans, ranks, parse_window(window_ns),
                              expand, flows, counters, critical, max_spans)
    big = size_warning(data, fmt, str(path))
    with atomic_output(path) as tmp, progress("writing the timeline", total=estimate_bytes(data, fmt) // 1000,
                                              unit="kB") as bar:
        def wrote(nbytes: int) -> None:
            bar.advance(nbytes // 1000)

        if fmt == "perfetto":
            from chakra_core.analysis._perfetto import write_perfetto

            write_perfetto(data, tmp, title, wrote)
        else:
            from chakra_core.analysis._chrome_trace import write_chrome

            write_chrome(data, tmp, title, wrote)
    return {"path": str(path), "format": fmt, "spans": len(data.index), "selected": selected,
            "total": len(spans), "truncated": len(data.index) < selected, "tracks": len(data.lanes),
            "flows": len(data.flow_src), "counters": len(data.counter_ts),
            "critical_path_segments": len(data.path_start),
            "notes": data.notes + ([big.replace("writing a timeline of", "written:", 1)] if big else [])}


def _prepare(spans: Spans, ranks: list[int] | None, window: tuple[int, int] | None, expand: bool,
             flows: bool, counters: bool, critical: bool, max_spans: int | None) -> tuple[TimelineData, int]:
    index, rank, copy = _expanded(spans, expand)
    if ranks is not None:
        keep = np.isin(rank, np.asarray(ranks, np.int64))
        index, rank, copy = index[keep], rank[keep], _take(copy, keep)
    start, end = spans.start_ns[index], spans.end_ns[index]
    if window is not None:
        lo, hi = int(window[0]), int(window[1])
        if hi <= lo:
            raise ConfigError(f"time window {lo}..{hi} ns is empty")
        keep = (end > lo) & (start < hi) | ((start == end) & (start >= lo) & (start < hi))
        index, rank, copy = index[keep], rank[keep], _take(copy, keep)
        start, end = np.maximum(spans.start_ns[index], lo), np.minimum(spans.end_ns[index], hi)
    selected = len(index)
    notes = []
    if not selected and len(spans):
        notes.append(f"empty: none of the {len(spans)} spans is on the ranks and in the time window selected "
                     f"(the run: ranks 0-{spans.nranks - 1}, ending at {spans.finish_ns()} ns)")
    if max_spans is not None and selected > max_spans:
        first = np.sort(np.argsort(start, kind="stable")[:max_spans])
        index, rank, copy, start, end = index[first], rank[first], _take(copy, first), start[first], end[first]
        notes.append(f"truncated: {max_spans} of {selected} selected spans drawn (the earliest; max_spans)")
    lane, lanes = _lanes(spans, rank, spans.track[index], start, end)
    c_rank, c_ts, c_value, c_series, c_names = _counters(spans, index, rank, start, end, counters)
    data = TimelineData(spans, index, rank, lane, start, end - start, lanes, _process_names(spans, rank, expand),
                        *_flows(spans, index, rank, copy, flows), c_rank, c_ts, c_value, c_series, c_names,
                        *_path(spans, ranks, window, critical), notes=notes)
    return data, selected


def _take(column: np.ndarray | None, keep: np.ndarray) -> np.ndarray | None:
    return None if column is None else column[keep]


def _expanded(spans: Spans, expand: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Span indices, the rank each is drawn on and, with ``expand``, which member of its class
    the copy is (every member of a class gets a copy of the class's spans; None: no copies)."""
    index = np.arange(len(spans), dtype=np.int64)
    rank = spans.rank.copy()
    if not expand or not spans.ranks_of:
        return index, rank, None
    alone = ~np.isin(rank, list(spans.ranks_of))
    parts_i, parts_r, parts_c = [index[alone]], [rank[alone]], [np.zeros(int(alone.sum()), np.int64)]
    for rep, members in spans.ranks_of.items():
        own = index[spans.rank == rep]
        parts_i.append(np.tile(own, len(members)))
        parts_r.append(np.repeat(np.asarray(members, np.int64), len(own)))
        parts_c.append(np.repeat(np.arange(len(members), dtype=np.int64), len(own)))
    return np.concatenate(parts_i), np.concatenate(parts_r), np.concatenate(parts_c)


def _process_names(spans: Spans, rank: np.ndarray, expand: bool) -> dict[int, str]:
    names = {}
    for r in (np.flatnonzero(np.bincount(rank)) if len(rank) and 0 <= rank.min() and rank.max() < 1 << 24
              else np.unique(rank)).tolist():
        members = spans.ranks_of.get(r, [r])
        names[r] = f"rank {r}" if expand or len(members) == 1 else \
            f"ranks {_span_text(members)} (simulated as {r})"
    return names


def _span_text(ranks: list[int]) -> str:
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks[:6])) + (f" ... ({len(ranks)})" if len(ranks) > 6 else "")


def _lanes(spans: Spans, rank: np.ndarray, track: np.ndarray, start: np.ndarray,
           end: np.ndarray) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """A lane per span so that the spans of one lane do not overlap; ``lanes[k]`` = (rank, name)."""
    n = len(rank)
    lane = np.zeros(n, np.int64)
    if not n:
        return lane, []
    key = rank * (len(spans.tracks) + 1) + track
    order = lexsort_ints((int(end.max()) - end, start, key))
    ks, ss, es = key[order], start[order], end[order]
    cuts = np.concatenate(([0], np.flatnonzero(np.diff(ks)) + 1, [n]))
    sub = np.zeros(n, np.int64)
    counts = np.ones(len(cuts) - 1, np.int64)
    for g in _overlapping(ss, es, cuts).tolist():
        a, b = int(cuts[g]), int(cuts[g + 1])
        sub[a:b], counts[g] = _partition(ss[a:b], es[a:b])
    group_of = np.repeat(np.arange(len(counts)), np.diff(cuts))
    base = np.concatenate(([0], np.cumsum(counts)[:-1]))
    lane[order] = base[group_of] + sub
    lanes = []
    for a, used in zip(cuts[:-1].tolist(), counts.tolist()):
        r, t = int(ks[a] // (len(spans.tracks) + 1)), int(ks[a] % (len(spans.tracks) + 1))
        name = spans.tracks[t]
        lanes += [(r, name if used == 1 else f"{name} #{j}") for j in range(used)]
    return lane, lanes


def _overlapping(start: np.ndarray, end: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """The groups (``cuts`` bound them; spans sorted by start within each) where a span starts
    before an earlier one of its group has ended."""
    group = np.repeat(np.arange(len(cuts) - 1), np.diff(cuts))
    span = int(end.max()) - int(min(start.min(), 0)) + 1 if len(end) else 1
    if len(cuts) * span < 1 << 62:
        reach = np.maximum.accumulate(end + group * span) - group * span
    else:
        reach = np.concatenate([np.maximum.accumulate(end[a:b]) for a, b in zip(cuts[:-1], cuts[1:])])
    early = np.flatnonzero(start[1:] < reach[:-1]) + 1
    early = early[group[early] == group[early - 1]]
    return np.unique(group[early])


def lexsort_ints(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """An order as of ``np.lexsort(keys)`` (the last key sorts first) for integer keys, as one
    sort of the keys packed into an int64 when their ranges fit in 62 bits (rows equal in every
    key may then come in another order)."""
    n = len(keys[0])
    if not n:
        return np.zeros(0, np.int64)
    lows = [int(k.min()) for k in keys]
    bits = [(int(k.max()) - lo).bit_length() for k, lo in zip(keys, lows)]
    if sum(bits) > 62:
        return np.lexsort(keys)
    packed = np.zeros(n, np.int64)
    shift = 0
    for k, lo, b in zip(keys, lows, bits):
        packed |= (k.astype(np.int64) - lo) << shift
        shift += b
    return np.argsort(packed)


def _partition(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, int]:
    """Interval partitioning (spans sorted by start): the lowest free lane for each span."""
    out = np.zeros(len(start), np.int64)
    busy: list[tuple[int, int]] = []
    free: list[int] = []
    used = 0
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist())):
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            k = heapq.heappop(free)
        else:
            k, used = used, used + 1
        out[i] = k
        heapq.heappush(busy, (max(e, s + 1) if e == s else e, k))
    return out, used


def _flows(spans: Spans, index: np.ndarray, rank: np.ndarray, copy: np.ndarray | None,
           wanted: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrows between drawn spans (positions in ``index``): the spans' own flows, and from the
    last member to arrive at each collective or send/receive pair to every other member.

    With copies of symmetric classes (``copy``: which member a row is), an own flow joins the
    copies on one rank (or the destination's first copy when it has none there), a collective
    joins the copies of all its members, and a send/receive pair joins the k-th members of the
    two classes."""
    empty = np.zeros(0, np.int64)
    if not wanted or not len(index):
        return empty, empty, np.zeros(0, np.uint8)
    src, dst, kind = [], [], []
    if len(spans.flow_src):
        a, b, k = _own_flows(spans, index, rank, copy)
        src.append(a)
        dst.append(b)
        kind.append(k)
    kinds = spans.kind[index]
    drawn = np.flatnonzero((spans.match[index] >= 0) & np.isin(kinds, COMM_KINDS))
    if len(drawn):
        p2p = np.isin(kinds[drawn], (SPAN_KINDS.index("send"), SPAN_KINDS.index("recv")))
        part = np.zeros(len(drawn), np.int64) if copy is None else np.where(p2p, copy[drawn], -1)
        order = lexsort_ints((spans.start_ns[index[drawn]], part, spans.match[index[drawn]]))
        d, group_key = drawn[order], np.stack((spans.match[index[drawn]], part))[:, order]
        change = np.flatnonzero((np.diff(group_key, axis=1) != 0).any(axis=0))
        last_of = np.concatenate((change, [len(d) - 1]))
        leader = np.repeat(d[last_of], np.diff(np.concatenate(([-1], last_of))))
        other = d != leader
        src.append(leader[other])
        dst.append(d[other])
        kinds_of = np.where(p2p[order][other], FLOW_KINDS.index("p2p"), FLOW_KINDS.index("collective"))
        kind.append(kinds_of.astype(np.uint8))
    if not src:
        return empty, empty, np.zeros(0, np.uint8)
    return np.concatenate(src), np.concatenate(dst), np.concatenate(kind)


def _own_flows(spans: Spans, index: np.ndarray, rank: np.ndarray,
               copy: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The spans' own flows between drawn rows (see :func:`_flows`)."""
    pos = np.full(len(spans), -1, np.int64)
    if copy is None:  # every span drawn at most once
        pos[index] = np.arange(len(index))
        ok = (pos[spans.flow_src] >= 0) & (pos[spans.flow_dst] >= 0)
        return pos[spans.flow_src[ok]], pos[spans.flow_dst[ok]], spans.flow_kind[ok]
    by_span = np.argsort(index, kind="stable")
    ptr = np.zeros(len(spans) + 1, np.int64)
    np.cumsum(np.bincount(index, minlength=len(spans)), out=ptr[1:])
    copies = ptr[spans.flow_src + 1] - ptr[spans.flow_src]
    flow = np.repeat(np.arange(len(spans.flow_src)), copies)
    first = np.repeat(ptr[spans.flow_src], copies)
    src_row = by_span[first + np.arange(len(flow)) - np.repeat(np.cumsum(copies) - copies, copies)]
    nr = int(rank.max()) + 1
    keys = index * nr + rank
    key_order = np.argsort(keys, kind="stable")
    want = spans.flow_dst[flow] * nr + rank[src_row]
    at = np.minimum(np.searchsorted(keys[key_order], want), len(keys) - 1)
    dst_row = np.where(keys[key_order[at]] == want, key_order[at], -1)
    has_dst = ptr[spans.flow_dst[flow] + 1] > ptr[spans.flow_dst[flow]]
    dst_row = np.where((dst_row < 0) & has_dst, by_span[np.minimum(ptr[spans.flow_dst[flow]], len(index) - 1)], dst_row)
    ok = dst_row >= 0
    return src_row[ok], dst_row[ok], spans.flow_kind[flow[ok]]


def _counters(spans: Spans, index: np.ndarray, rank: np.ndarray, start: np.ndarray, end: np.ndarray,
              wanted: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[tuple[int, str]]]:
    """Counter series, each value at each change: per rank, the communication operations in
    flight (``comm in flight``) and, per queue track a rank's collective phases are drawn on, the
    phases in flight there (``<queue> in flight``).  Returns the rank, time, value and series of
    every value, and each series' (rank, name)."""
    empty = np.zeros(0, np.int64)
    if not wanted or not len(index):
        return empty, empty, empty, empty, []
    kinds, tracks = spans.kind[index], spans.track[index].astype(np.int64)
    per_rank = len(spans.tracks) + 1
    series = np.where(np.isin(kinds, COMM_KINDS), rank * per_rank + len(spans.tracks),
                      np.where(kinds == SPAN_KINDS.index("phase"), rank * per_rank + tracks, -1))
    counted = series >= 0
    s = np.concatenate((series[counted], series[counted]))
    t = np.concatenate((start[counted], end[counted]))
    step = np.concatenate((np.ones(counted.sum(), np.int64), -np.ones(counted.sum(), np.int64)))
    order = lexsort_ints((step, t, s))
    s, t, step = s[order], t[order], step[order]
    level = np.cumsum(step)
    if not len(s):
        return empty, empty, empty, empty, []
    first = np.concatenate(([0], np.flatnonzero(np.diff(s)) + 1))
    before = np.concatenate(([0], level[first[1:] - 1]))
    level = level - np.repeat(before, np.diff(np.concatenate((first, [len(s)]))))
    last = np.concatenate((np.flatnonzero((np.diff(t) != 0) | (np.diff(s) != 0)), [len(t) - 1]))
    keys, number = np.unique(s[last], return_inverse=True)
    names = [(int(k // per_rank), "comm in flight" if k % per_rank == len(spans.tracks)
              else f"{spans.tracks[k % per_rank]} in flight") for k in keys.tolist()]
    return s[last] // per_rank, t[last], level[last], number.astype(np.int64), names


def _path(spans: Spans, ranks: list[int] | None, window: tuple[int, int] | None,
          wanted: bool) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The critical path's segments (clipped to the window) and their labels."""
    empty = np.zeros(0, np.int64)
    if not wanted or not len(spans):
        return empty, empty, []
    from chakra_core.analysis._critical import PATH_CATEGORIES, critical_path

    cp = critical_path(spans)
    start, end = cp.start_ns.copy(), cp.end_ns.copy()
    keep = np.ones(len(start), bool)
    if window is not None:
        keep = (end > window[0]) & (start < window[1])
        start, end = np.maximum(start, window[0]), np.minimum(end, window[1])
    labels = []
    for k in np.flatnonzero(keep).tolist():
        i = int(cp.span[k])
        what = spans.names[spans.name[i]] if i >= 0 else "idle"
        labels.append(f"{PATH_CATEGORIES[cp.category[k]]}: {what} (rank {int(cp.rank[k])})")
    return start[keep], (end - start)[keep], labels


def write_timeline_from_options(spans: Spans, options: Mapping[str, Any], title: str) -> dict[str, Any]:
    """:func:`write_timeline` to ``options["timeline"]`` with a backend's ``TIMELINE_OPTIONS``."""
    return write_timeline(spans, options["timeline"], format=options.get("timeline_format") or None,
                          ranks=options.get("timeline_ranks"), window_ns=options.get("timeline_window"),
                          expand=bool(options.get("timeline_expand")), title=title,
                          max_spans=options.get("timeline_max_spans"))


#: the options of ``TIMELINE_OPTIONS`` that select what a timeline draws (all but its path)
TIMELINE_SELECTION = tuple(k for k in TIMELINE_OPTIONS if k != "timeline")


def add_span_outputs(result: Result, spans: Spans, options: Mapping[str, Any], title: str,
                     output: str | Path | None = None) -> None:
    """What a backend's ``TIMELINE_OPTIONS`` and ``spans`` option ask of its ``result``: the
    timeline written to ``options["timeline"]`` (file, notes), and with ``options["spans"]`` the
    spans kept on :attr:`Result.spans` and, given an ``output`` directory, saved there as
    ``spans.npz`` (listed in the result's files)."""
    if options.get("timeline"):
        written = write_timeline_from_options(spans, options, title)
        result.timeline = str(options["timeline"])
        result.files.append(str(options["timeline"]))
        result.notes += [f"timeline {n}" for n in written["notes"]]
    else:
        unused = [k for k in TIMELINE_SELECTION if options.get(k) not in (None, False)]
        if unused:
            result.notes.append(f"{', '.join(unused)} select what a timeline draws: ignored, as no timeline "
                                "was asked for (--timeline FILE, -O timeline=FILE)")
    if options.get("spans"):
        result.spans = spans
        if output is not None:
            result.files.append(str(spans.save(Path(output) / "spans.npz")))
