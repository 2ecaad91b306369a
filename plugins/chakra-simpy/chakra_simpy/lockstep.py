"""Collectives whose members move in lockstep: a flow shop of chunk phases.

Every chunk goes through the plan's phases in order; each dimension queue runs at most
``active-chunks-per-dimension`` chunk phases of the collective at once, first come first served;
each chunk phase is one SimPy event of its closed-form cost, and all members finish together
when the last chunk leaves its last phase.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .collective_context import CollectiveContext, CollectiveTally
    from .collectives import Instance

__all__ = ["FlowShop"]


class _Run:
    """One collective going through the flow shop: chunk phases running and waiting per queue,
    chunks done."""

    __slots__ = ("inst", "running", "waiting", "done")

    def __init__(self, inst: Instance):
        self.inst = inst
        self.running: dict[int, int] = {}
        self.waiting: dict[int, deque] = {}
        self.done = 0


class FlowShop:
    """Runs collectives in lockstep on ``ctx``'s environment, at most ``active`` chunk phases
    per queue; ``finish(inst)`` is called when one is done; scheduled events are counted in
    ``tally``."""

    def __init__(self, ctx: CollectiveContext, tally: CollectiveTally, active: int,
                 finish: Callable[[Instance], None]):
        self.ctx = ctx
        self.tally = tally
        self.active = active
        self.finish = finish

    def run(self, inst: Instance) -> None:
        """Start every chunk of ``inst`` now (a collective of no chunk finishes now)."""
        if inst.n == 0:
            ev = self.ctx.env.timeout(0, inst)
            ev.callbacks.append(lambda ev: self.finish(ev.value))
            self.tally.events += 1
            return
        run = _Run(inst)
        for c in range(inst.n):
            self._enter(run, c, 0)

    def _enter(self, run: _Run, c: int, p: int) -> None:
        q = run.inst.phases[p].queue
        if run.running.get(q, 0) < self.active:
            self._go(run, c, p)
        else:
            run.waiting.setdefault(q, deque()).append((c, p))

    def _go(self, run: _Run, c: int, p: int) -> None:
        ctx = self.ctx
        inst = run.inst
        q, cost, label = inst.phases[p]
        assert cost is not None  # a planned phase
        run.running[q] = run.running.get(q, 0) + 1
        dur = cost.fixed
        ev = ctx.env.timeout(dur, (run, c, p))
        ev.callbacks.append(self._phase_end)
        tally = self.tally
        tally.events += 1
        tally.phase_events += 1
        if ctx.spans.spans is not None:
            ctx.spans.add(inst.actors[0].index, 10 + q, (label, c, inst.key), int(ctx.env.now), dur)

    def _phase_end(self, ev) -> None:
        run, c, p = ev.value
        inst = run.inst
        q = inst.phases[p].queue
        run.running[q] -= 1
        wait = run.waiting.get(q)
        if wait:
            c2, p2 = wait.popleft()
            self._go(run, c2, p2)
        if p + 1 < len(inst.phases):
            self._enter(run, c, p + 1)
        else:
            run.done += 1
            if run.done == inst.n:
                self.finish(inst)
