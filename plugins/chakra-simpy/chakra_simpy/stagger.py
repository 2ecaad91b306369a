"""Exact per-rank timing of single-phase ring collectives when members do not move in lockstep.

ASTRA-sim has no barrier: a member sends step s + 1 as soon as it has received step s from its
predecessor (and posted its own receive, which it does when it sends step s), so members that
issue a collective at different times, or whose incoming links differ (group rings with a long
wrap-around), finish at different times.  For one chunk on member j::

    send_j(0)   = start_j + e
    arr_j(s)    = max(send_pred(j)(s) + net_j, send_j(s))
    send_j(s+1) = arr_j(s) + e + (red if s < reductions)
    finish_j    = arr_j(S-1) + e + (red if S-1 < reductions)

With equal starts and equal links this is the closed form of :func:`timing.phase_cost`.  Chunks
queue per member: chunk c starts when ``active`` earlier chunks of that member have finished.
"""

from __future__ import annotations

__all__ = ["ring_finish", "WORK_LIMIT"]

#: most (chunks x steps x members) evaluated exactly; larger collectives use the lockstep model.
WORK_LIMIT = 2_000_000


def ring_finish(issue: list[int], pred: list[int], nets: list[int], e: int, steps: int, reductions: int,
                red_ns: int, chunks: int, active: int) -> list[int]:
    """Finish time (ns) of every member: ``issue[j]`` when j issued, ``pred[j]`` the member it
    receives from, ``nets[j]`` the ns a message to j takes, ``steps`` network steps with a
    reduction of ``red_ns`` after the first ``reductions`` receives, ``chunks`` chunks of which
    ``active`` may run at once."""
    k = len(issue)
    done: list[list[int]] = [[] for _ in range(k)]
    finish = list(issue)
    rng = range(k)
    for c in range(chunks):
        if c < active:
            start = issue
        else:
            start = [max(issue[j], sorted(done[j])[c - active]) for j in rng]
        send = [s + e for s in start]
        arr = send
        for s in range(steps):
            arr = [max(send[pred[j]] + nets[j], send[j]) for j in rng]
            add = e + (red_ns if s < reductions else 0)
            send = [a + add for a in arr]
        finish = send if steps else [s + e for s in start]
        for j in rng:
            done[j].append(finish[j])
    return [max(d) for d in done] if chunks else finish
