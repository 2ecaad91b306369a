"""The ends of replayed closed runs (:mod:`closed_runs`): the one call that hands a replayed run's
actors back, or those of runs replayed together, and for a run replayed among quiet events the
call that takes the hand-back's scheduling order and the check at its end."""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import TYPE_CHECKING, Any

from .closed_runs import ClosedRun, Undecided

if TYPE_CHECKING:
    from .event_loop import EventLoop
    from .run_facts import RunFacts

__all__ = ["ReplayEnds", "STAND_INS"]


class ReplayEnds:
    """The end of a replay that the check of the run of ``facts`` starts now, on ``loop``."""

    __slots__ = ("loop", "facts")

    def __init__(self, loop: EventLoop, facts: RunFacts):
        self.loop = loop
        self.facts = facts

    def at_end(self, got: ClosedRun, among: bool, close: Callable[[Any], None], arg: Any) -> None:
        """Call ``close(arg)`` at the end of the replay of kept outcome ``got`` starting now (after
        the quiet events due then when ``among``: :meth:`mark`)."""
        loop = self.loop
        now = loop.now
        if among:
            loop.call_first(max(now, now + got.duration - got.lead), self.mark, (now + got.duration, close, arg))
        else:
            loop.call(got.duration, close, arg)

    def close(self, order: tuple[int, ...]) -> None:
        """The end of a replayed closed run: its actors' ranks are handed back in ``order``."""
        facts = self.facts
        last = len(order) - 1
        for k, ai in enumerate(order):
            facts.on_done(facts.inst, ai, k == last)

    def close_group(self, arg: tuple[tuple[RunFacts, ...], tuple]) -> None:
        """The end of runs replayed together (``arg = (runs, order)``): their actors' ranks are
        handed back in ``order`` (``(run, actor)`` pairs)."""
        runs, order = arg
        last = {k: n for n, (k, _ai) in enumerate(order)}
        for n, (k, ai) in enumerate(order):
            run = runs[k]
            run.on_done(run.inst, ai, last[k] == n)

    def mark(self, arg: tuple[int, Callable, object]) -> None:
        """``lead`` ns before the end of a run replayed among quiet events (ahead of that ns): its
        hand-back call (``close(what)``, ``arg = (end, close, what)``) takes its scheduling order
        now; the end is checked (:meth:`verify`)."""
        end, close, what = arg
        loop = self.loop
        eid = loop.eid
        heappush(loop.queue, (end, eid, close, what))
        loop.eid = eid + 1
        loop.call_first(end, self.verify, eid)

    def verify(self, eid: int) -> None:
        """At the end of a run replayed among quiet events, ahead of that ns: raise
        :class:`Undecided` when an event due now was scheduled after its hand-back call (order
        ``eid``), before this ns."""
        now = self.loop.now
        if any(due == now and e > eid for due, e, _fn, _arg in self.loop.queue):
            key = self.facts.inst.key
            raise Undecided(f"collective #{key[1] + 1} of group {key[0] or 'all'!r}")


#: the calls that stand for the ends of replayed runs (:func:`closed_runs.split`)
STAND_INS = (ReplayEnds.close, ReplayEnds.mark, ReplayEnds.close_group)
