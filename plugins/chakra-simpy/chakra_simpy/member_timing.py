"""Exact per-rank timing of collectives whose members do not move in lockstep.

ASTRA-sim has no barrier: a member sends its next message as soon as it has received the one it
waits for (and had posted its own receive, which it does when it sends), so members that issue a
collective at different times, or whose incoming links differ (group rings with a long
wrap-around), finish at different times.  A chunk phase on member j is a chain of steps::

    send_j(0)   = start_j + e
    arr_j(s)    = max(send_from(s) + net_j(s), send_j(s))
    send_j(s+1) = arr_j(s) + add(s)          (an endpoint delay, plus a reduction where due)
    finish_j    = send_j(S)

where ``send_from`` is the ring predecessor (:mod:`algorithms.ring`) or the exchange partner of
the step (:mod:`algorithms.halving_doubling`).  With equal starts and equal links this is the
closed form of the algorithm's ``cost`` (tested).  Other algorithms time a phase per member
their own way (any :class:`algorithms.base.MemberPhase`: a direct phase receives from every
peer at once, a double-binary-tree phase has its own recurrence).  A chunk phase starts on a
member when the member finished the chunk's previous phase and its queue of that dimension has
a free slot (at most ``active`` entries, first come first served; entries queue in the order
they become ready, the latest member's time deciding, as in the lockstep flow shop).
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .algorithms.base import MemberPhase

__all__ = ["Step", "Phase", "chain", "plan_finish", "FinishPlans", "WORK_LIMIT"]

#: default for the most (chunks x steps x members) evaluated per collective; larger collectives
#: start when their last member issues them (option ``stagger_limit``).
WORK_LIMIT = 1_000_000


class Step:
    """One message step: member j waits for ``pred[j]``, its message taking ``nets[j]`` ns;
    then ``add`` ns."""

    __slots__ = ("pred", "nets", "add")

    def __init__(self, pred: list[int], nets: list[int], add: int):
        self.pred = pred
        self.nets = nets
        self.add = add


class Phase:
    """One chunk phase seen per member: the queue it waits in, the first endpoint delay and
    the steps; ``rings``: the members' rings when every step waits for the same predecessor
    over links of one cost (see :func:`_ring_finish`), else None."""

    __slots__ = ("queue", "e", "steps", "rings")

    def __init__(self, queue: int, e: int, steps: list[Step]):
        self.queue = queue
        self.e = e
        self.steps = steps
        self.rings = _rings(steps)

    @property
    def work(self) -> int:
        """Message steps per member per chunk (what ``stagger_limit`` counts)."""
        return len(self.steps)

    def run(self, start: list[int], chunk: int) -> list[int]:
        """Finish time (ns) of every member (the same for every chunk; see :func:`chain`)."""
        return chain(start, self)


def _rings(steps: list[Step]) -> list[list[int]] | None:
    """The predecessor cycles (each member, then its predecessor, its predecessor's ...) when
    every step has the same predecessors and one message cost; else None."""
    if not steps or len(steps[0].nets) < _CLOSED_MIN:
        return None
    pred, nets = steps[0].pred, steps[0].nets
    if any(st.pred is not pred or st.nets is not nets for st in steps) or len(set(nets)) > 1:
        return None
    seen = bytearray(len(pred))
    rings = []
    for j in range(len(pred)):
        if not seen[j]:
            ring = []
            while not seen[j]:
                seen[j] = 1
                ring.append(j)
                j = pred[j]
            if len(ring) > _CLOSED_MAX:
                return None
            rings.append(ring)
    return rings


#: members from which (and ring sizes up to which) a ring phase is timed by :func:`_ring_finish`.
_CLOSED_MIN, _CLOSED_MAX = 16, 2048
_offsets: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}


def _ring_finish(start: list[int], ph: Phase) -> list[int]:
    """:func:`chain` in closed form for a phase whose steps all wait for the ring predecessor
    over links of one cost ``c``: each step is ``send_j = max(send_pred(j) + c, send_j) + add``,
    so after S steps ``send_j = e + sum(add) + max over k = 0..S of (start of the member k
    places back + k * c)``; for the member d places back the largest such k is taken."""
    steps = ph.steps
    total = len(steps)
    c = steps[0].nets[0]
    base = ph.e + sum(st.add for st in steps)
    out = [0] * len(start)
    for ring in ph.rings or ():
        p = len(ring)
        got = _offsets.get((p, total))
        if got is None:
            d = (np.arange(p)[None, :] - np.arange(p)[:, None]) % p  # row i: member d places back
            k = d + p * ((total - d) // p)
            got = _offsets[(p, total)] = (k, d <= total)
        k, ok = got
        st = np.array([start[j] for j in ring], dtype=np.int64)
        val = np.where(ok, st[None, :] + k * c, np.iinfo(np.int64).min).max(axis=1) + base
        for j, v in zip(ring, val.tolist()):
            out[j] = v
    return out


def chain(start: list[int], ph: Phase) -> list[int]:
    """Finish time (ns) of one chunk phase on every member, given each member's start."""
    if ph.rings is not None:
        return _ring_finish(start, ph)
    rng = range(len(start))
    send = [s + ph.e for s in start]
    for st in ph.steps:
        nets, pred = st.nets, st.pred
        arr = [max(send[pred[j]] + nets[j], send[j]) for j in rng]
        add = st.add
        send = [a + add for a in arr]
    return send


def plan_finish(issue: list[int], phases: list[MemberPhase], chunks: int, active: int) -> list[int]:
    """Finish time (ns) of every member of a collective of ``chunks`` chunks going through
    ``phases`` (:class:`algorithms.base.MemberPhase`), members having issued it at ``issue``."""
    rng = range(len(issue))
    prev = [issue] * chunks  # per chunk: when each member finished its previous phase
    queued: dict[int, list[list[int]]] = {}  # queue -> per member, finish times of its entries
    # entries join their queue in the order they become ready (first come first served, as the
    # lockstep flow shop of :mod:`collectives`): a dimension visited twice by a plan (the
    # all-gathers of localBWAware) serves a chunk coming back before later chunks' first visit
    # when it comes back first; ties go to the earlier phase, then the earlier chunk
    ready = [(max(issue, default=0), 0, c) for c in range(chunks)]
    while ready:
        _t, p, c = heappop(ready)
        ph = phases[p]
        done = queued.setdefault(ph.queue, [[] for _ in rng])
        n = len(done[0])
        if n >= active:
            start = [max(prev[c][j], sorted(done[j])[n - active]) for j in rng]
        else:
            start = prev[c]
        fin = ph.run(start, c)
        for j in rng:
            done[j].append(fin[j])
        prev[c] = fin
        if p + 1 < len(phases):
            heappush(ready, (max(fin), p + 1, c))
    return [max(prev[c][j] for c in range(chunks)) for j in rng] if chunks else list(issue)


class FinishPlans:
    """:func:`plan_finish` with the plans already timed kept: every step of a plan is a sum or a
    maximum of times, so members issuing the same phases with the same skew finish with the
    same skew, later by the same amount (a training step repeats its collectives layer after
    layer).  At most ``limit`` plans are kept, each with its phases (the key holds their ids)."""

    def __init__(self, limit: int = 4096):
        self.limit = limit
        self.known: dict[tuple, tuple[list[MemberPhase], list[int]]] = {}

    def finish(self, issue: list[int], phases: list[MemberPhase], chunks: int, active: int) -> list[int]:
        """:func:`plan_finish` of these arguments (ns)."""
        base = min(issue, default=0)
        key = (tuple([t - base for t in issue]), tuple(map(id, phases)), chunks, active)
        got = self.known.get(key)
        if got is not None:
            return [base + t for t in got[1]]
        fin = plan_finish(issue, phases, chunks, active)
        if len(self.known) < self.limit and min(fin, default=base) > base:  # a plan that takes time
            self.known[key] = (phases, [t - base for t in fin])
        return fin
