"""Exact per-rank timing of ring collectives when members do not move in lockstep.

ASTRA-sim has no barrier: a member sends step s + 1 as soon as it has received step s from its
predecessor (and posted its own receive, which it does when it sends step s), so members that
issue a collective at different times, or whose incoming links differ (group rings with a long
wrap-around), finish at different times.  One chunk phase on member j::

    send_j(0)   = start_j + e
    arr_j(s)    = max(send_pred(j)(s) + net_j, send_j(s))
    send_j(s+1) = arr_j(s) + e + (red if s < reductions)
    finish_j    = arr_j(S-1) + e + (red if S-1 < reductions)

With equal starts and equal links this is the closed form of :func:`timing.phase_cost`.  A chunk
phase starts on a member when the member finished the chunk's previous phase and its queue of
that dimension has a free slot (at most ``active`` entries, first come first served; entries
queue in plan order: stage by stage, chunk by chunk).
"""

from __future__ import annotations

__all__ = ["ring_chain", "plan_finish", "RingPhase", "WORK_LIMIT"]

#: most (chunks x steps x members) evaluated exactly; larger collectives use the lockstep model.
WORK_LIMIT = 2_000_000


class RingPhase:
    """One ring phase of a plan seen per member: ``pred[j]`` is the member j receives from,
    ``nets[j]`` the ns its messages take, ``queue`` the dimension queue it waits in."""

    __slots__ = ("queue", "pred", "nets", "e", "steps", "reductions", "red_ns")

    def __init__(self, queue: int, pred: list[int], nets: list[int], e: int, steps: int,
                 reductions: int, red_ns: int):
        self.queue = queue
        self.pred = pred
        self.nets = nets
        self.e = e
        self.steps = steps
        self.reductions = reductions
        self.red_ns = red_ns


def ring_chain(start: list[int], ph: RingPhase) -> list[int]:
    """Finish time (ns) of one chunk phase on every member, given each member's start."""
    pred, nets, e = ph.pred, ph.nets, ph.e
    rng = range(len(start))
    send = [s + e for s in start]
    if not ph.steps:
        return send
    for s in range(ph.steps):
        arr = [max(send[pred[j]] + nets[j], send[j]) for j in rng]
        add = e + (ph.red_ns if s < ph.reductions else 0)
        send = [a + add for a in arr]
    return send


def plan_finish(issue: list[int], phases: list[RingPhase], chunks: int, active: int) -> list[int]:
    """Finish time (ns) of every member of a collective of ``chunks`` chunks going through
    ``phases``, members having issued it at ``issue``."""
    k = len(issue)
    rng = range(k)
    prev = [issue] * chunks  # per chunk: when each member finished its previous phase
    queued: dict[int, list[list[int]]] = {}  # queue -> per member, finish times of its entries
    for ph in phases:
        done = queued.setdefault(ph.queue, [[] for _ in rng])
        for c in range(chunks):
            n = len(done[0])
            if n >= active:
                start = [max(prev[c][j], sorted(done[j])[n - active]) for j in rng]
            else:
                start = prev[c]
            fin = ring_chain(start, ph)
            for j in rng:
                done[j].append(fin[j])
            prev[c] = fin
    return [max(prev[c][j] for c in range(chunks)) for j in rng] if chunks else list(issue)
