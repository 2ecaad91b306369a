"""Find a host ET's ops in a Kineto trace that has no ``Record function id`` (PyTorch before 2.1).

Such a Kineto trace numbers its CPU ops with ``External id``; the host ET numbers its nodes with
``rf_id``.  Both count record functions, so ``External id = rf_id + d`` (HolisticTraceAnalysis
links them with ``d = 0``), but the counters start together only when both recorders started
together: when the profiler ran longer than the execution-trace observer (the host ET covers
one iteration of several) ``d`` is large, and it shifts by a few where one recorder counted a
record function the other did not.  The offset is learned from names and order:

1. Kineto numbers each thread's ops in its own blocks, the host ET numbers all threads together:
   the host ops are matched thread by thread, first the thread of the first op (the one that
   runs the step, around the others in time);
2. candidates: each of the (at most 64) host ops of the thread whose names are rarest in the
   Kineto trace votes for ``External id - rf_id`` of every Kineto op of its name (for the later
   threads, only Kineto ops inside the first thread's span of time vote); the 8 of the 32
   offsets with most votes under which most of the thread's ops find a Kineto op of their own
   name are tried in step 3, after the offsets that put the thread's first op with an autograd
   sequence number on a Kineto op of its name and number (the host ET's ``seq_id`` is Kineto's
   ``Sequence number``, a counter of the process that tells one iteration from the next, whose
   ops have the same names);
3. a walk from an offset: the thread's ops in ``rf_id`` order keep the offset while the names
   agree and the Kineto op is on the same Kineto thread after the previous one; else the next
   Kineto op of that name on that thread (of the next 16) under whose offset the next two host
   ops agree too gives the offset from there on (an op without one stays unmatched).  The walk
   that matches most ops wins; in a tie, the one whose matches agree most in sequence number,
   then the one in the shortest span of time.

Kineto ops between matched ones (the ops a host ET folds into an operator) take the offset in
force.  Older Kineto also writes a runtime call's (and a kernel's) ``External id`` as its own
correlation id: then the op that launched a kernel is the innermost linked CPU op around the
runtime call of the kernel's correlation, on the call's thread.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

from .hostet import HostTrace
from .kineto import KinetoTrace
from .spantable import SpanTable, spans_of

__all__ = ["link_host_ops", "matched_fraction"]

_VOTERS = 64
_CANDIDATES = 32
_JUMPS = 16
_WALKED = 8
_CONFIRM = 2
_ANCHORS = 4


def link_host_ops(kt: KinetoTrace, host: HostTrace, wanted: Iterable[int]) -> None:
    """Fill ``kt.ops`` (the ``wanted`` rf_ids) and ``kt.ext_rf`` of a Kineto trace without
    ``Record function id`` from its ``External id`` (see the module docstring), relink older
    Kineto's kernels through their runtime calls, and record in ``kt.link`` how many host ops
    were found."""
    ops = sorted((op.rf_id, op.name, op.tid) for op in host.ops if op.rf_id >= 0)
    if kt.rf_events or not kt.by_ext:
        spans = spans_of(kt.ops, [rf for rf, _name, _tid in ops])
        found = sum(1 for (_rf, name, _tid), rec in zip(ops, spans) if rec is not None and rec[3] == name)
        kt.link = ("Record function id", found, len(ops))
        return
    seq_of = {op.rf_id: op.keep[2] for op in host.ops if op.rf_id >= 0 and op.keep[2] is not None and op.keep[2] >= 0}
    matched = _align(ops, kt, seq_of)
    kt.link = ("External id", len(matched), len(ops))
    if not matched:
        return
    ops_of = kt.ops
    assert isinstance(ops_of, SpanTable)  # a trace read with its host ET: filled while read
    by_rf = [rf for rf, _d in matched]
    by_ext = sorted((rf + d, d) for rf, d in matched)
    ext_keys = [e for e, _d in by_ext]
    for rf in wanted:
        if rf < 0:  # a host op without rf_id: no External id stands for it
            continue
        ext = rf + matched[max(0, bisect.bisect_right(by_rf, rf) - 1)][1]
        if ext in kt.by_ext:
            ops_of.put(rf, *kt.by_ext[ext])
    for ext in kt.by_ext:
        rf = ext - by_ext[max(0, bisect.bisect_right(ext_keys, ext) - 1)][1]
        if host.rf_owner.get(rf, -1) >= 0:
            kt.ext_rf[ext] = rf
    if kt.runtime_ext_is_corr and not kt.runtime_ext_other:
        _relink_runtime(kt)


def matched_fraction(kt: KinetoTrace) -> float:
    """The fraction of host ops found in the Kineto trace (1.0 when none was looked for)."""
    if kt.link is None or kt.link[2] == 0:
        return 1.0
    return kt.link[1] / kt.link[2]


class _Index:
    """The Kineto ops without ``Record function id``: name by External id, and the External ids
    of each name, sorted, in all and on each Kineto thread; ``seq_of`` the host ops' sequence
    numbers by rf_id."""

    def __init__(self, kt: KinetoTrace, seq_of: dict[int, int]) -> None:
        self.kt = kt
        self.seq_of = seq_of
        self.names = {ext: rec[3] for ext, rec in kt.by_ext.items()}
        self.exts: dict[str, list[int]] = defaultdict(list)
        self.on_thread: dict[tuple[str, int], list[int]] = defaultdict(list)
        #: the External ids of each (name, sequence number)
        self.with_seq: dict[tuple[str, int], list[int]] = defaultdict(list)
        for ext, seq in kt.ext_seq.items():
            self.with_seq[(self.names[ext], seq)].append(ext)
        for ext in sorted(self.names):
            name = self.names[ext]
            self.exts[name].append(ext)
            self.on_thread[(name, kt.by_ext[ext][2])].append(ext)


def _align(ops: list[tuple[int, str, int]], kt: KinetoTrace, seq_of: dict[int, int]) -> list[tuple[int, int]]:
    """(rf_id, offset) of every host op (rf_id, name, thread) found under its thread's piecewise
    offset (module docstring), the thread of the first op first; ``seq_of``: the host ops'
    sequence numbers by rf_id."""
    index = _Index(kt, seq_of)
    threads: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for rf, name, tid in ops:
        threads[tid].append((rf, name))
    out: list[tuple[int, int]] = []
    window: tuple[float, float] | None = None
    for pairs in sorted(threads.values(), key=lambda p: p[0][0]):
        walks = [_walk(pairs, d, index) for d in _candidates(pairs, index, window)]
        if not walks:
            continue
        found = max(walks, key=lambda w: (len(w), _same_seq(w, index), -_span(w, kt)))
        out += found
        if window is None and found:
            times = [kt.by_ext[rf + d][0] for rf, d in found]
            window = (min(times), max(times))
    return sorted(out)


def _same_seq(found: list[tuple[int, int]], index: _Index) -> int:
    """How many of a walk's matches have the sequence number of their host op."""
    ext_seq, seq_of = index.kt.ext_seq, index.seq_of
    return sum(1 for rf, d in found if rf in seq_of and ext_seq.get(rf + d) == seq_of[rf])


def _span(found: list[tuple[int, int]], kt: KinetoTrace) -> float:
    """Microseconds from the first to the last Kineto op of a walk's matches."""
    times = [kt.by_ext[rf + d][0] for rf, d in found]
    return max(times) - min(times) if times else 0.0


def _walk(pairs: list[tuple[int, str]], d: int, index: _Index) -> list[tuple[int, int]]:
    """(rf_id, offset) of the ops of one host thread found in order on one Kineto thread."""
    by_ext = index.kt.by_ext
    out: list[tuple[int, int]] = []
    last, ktid = -1, None
    for i, (rf, name) in enumerate(pairs):
        rec = by_ext.get(rf + d)
        if rec is None or rf + d <= last or rec[3] != name or (ktid is not None and rec[2] != ktid):
            ext = _jump(pairs, i, last, ktid, index)
            if ext is None:
                continue
            d = ext - rf
        last, ktid = rf + d, by_ext[rf + d][2]
        out.append((rf, d))
    return out


def _jump(pairs: list[tuple[int, str]], i: int, last: int, ktid: int | None, index: _Index) -> int | None:
    """The first External id after ``last`` on Kineto thread ``ktid`` whose op has the name of
    ``pairs[i]`` and under whose offset the next ``_CONFIRM`` host ops agree too."""
    rf, name = pairs[i]
    same = index.exts.get(name, []) if ktid is None else index.on_thread.get((name, ktid), [])
    names, after = index.names, pairs[i + 1:i + 1 + _CONFIRM]
    k = bisect.bisect_right(same, last)
    for cand in same[k:k + _JUMPS]:
        d = cand - rf
        if all(names.get(r + d) == n for r, n in after):
            return cand
    return None


def _candidates(pairs: list[tuple[int, str]], index: _Index, window: tuple[float, float] | None) -> list[int]:
    """The offsets to walk from: the anchors (:func:`_anchors`), then the candidate offsets
    under which most of ``pairs`` agree (the smallest first in a tie), ``_WALKED`` in all; with a
    ``window`` (the first thread's span of time, us), only Kineto ops inside it vote."""
    kt, names, exts = index.kt, index.names, index.exts

    def inside(ext: int) -> bool:
        return window is None or window[0] <= kt.by_ext[ext][0] <= window[1]

    voters = sorted((len(exts[name]), rf, name) for rf, name in pairs if name in exts)[:_VOTERS]
    votes: Counter[int] = Counter()
    for _n, rf, name in voters:
        votes.update(ext - rf for ext in exts[name] if inside(ext))
    if not votes:
        return [] if window is None else _candidates(pairs, index, None)
    anchors = _anchors(pairs, index, inside)
    scored = sorted(((sum(1 for rf, name in pairs if names.get(rf + d) == name), -d)
                     for d, _v in votes.most_common(_CANDIDATES) if d not in anchors), reverse=True)
    return anchors + [-neg for _n, neg in scored[:_WALKED - len(anchors)]]


def _anchors(pairs: list[tuple[int, str]], index: _Index, inside: Callable[[int], bool]) -> list[int]:
    """The offsets (at most ``_ANCHORS``) that put the first op of ``pairs`` with an autograd
    sequence number on a Kineto op of its name and number (the host ET's ``seq_id`` is Kineto's
    ``Sequence number``: a counter of the process, which tells apart iterations whose ops have
    the same names); none when no op has one."""
    for rf, name in pairs:
        seq = index.seq_of.get(rf)
        found = [ext - rf for ext in index.with_seq.get((name, seq), ()) if inside(ext)] if seq is not None else []
        if found:
            return found[:_ANCHORS]
    return []


def _relink_runtime(kt: KinetoTrace) -> None:
    """Older Kineto: each runtime call's launching op is the innermost linked CPU op around it on
    its thread; kernels and sync calls take that op's External id."""
    spans: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
    for ext, (ts, dur, tid, _name) in kt.by_ext.items():
        if kt.ext_rf.get(ext, -1) >= 0:
            spans[tid].append((ts, -dur, ext))
    calls: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for corr, ts in kt.corr_ts.items():
        calls[kt.corr_tid.get(corr, 0)].append((ts, corr))
    launcher: dict[int, int] = {}
    for tid, cs in calls.items():
        launcher.update(_innermost(sorted(spans.get(tid, [])), sorted(cs)))
    kt.corr_ext = launcher
    for g in kt.gpu:
        g.external = launcher.get(g.correlation, -1)
    for sy in kt.syncs:
        if not sy.precise:
            sy.external = launcher.get(sy.correlation, -1)


def _innermost(ops: list[tuple[float, float, int]], calls: list[tuple[float, int]]) -> dict[int, int]:
    """correlation -> External id of the innermost op (start, -duration, ext) open at each call
    (start, correlation); both lists sorted by start."""
    out: dict[int, int] = {}
    stack: list[tuple[float, int]] = []  # (end, ext) of the ops open, outermost first
    i = 0
    for ts, corr in calls:
        while i < len(ops) and ops[i][0] <= ts:
            start, neg_dur, ext = ops[i]
            while stack and stack[-1][0] < start:
                stack.pop()
            stack.append((start - neg_dur, ext))
            i += 1
        while stack and stack[-1][0] < ts:
            stack.pop()
        if stack:
            out[corr] = stack[-1][1]
    return out
