"""The closed-run side of a message run (:mod:`closed_runs` says when a run runs closed): its
check just before its first own event, which replays a kept outcome or records the run event by
event to keep one, and the hand-backs that end a recording.  A run checked with others starting
at the same ns goes through :mod:`group_check`; replays end through :mod:`replay_ends`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from heapq import heapify
from typing import TYPE_CHECKING

from .closed_runs import ClosedRun, Issue, Kept, Recording, closed, earliest_loud, links_free, outcome, quiet, split
from .group_check import GroupRecording, check_group, group_hand_back, starting
from .replay_ends import STAND_INS, ReplayEnds

if TYPE_CHECKING:
    from .collective_context import CollectiveContext, CollectiveTally
    from .group_check import Checked
    from .network import Link
    from .run_facts import RunFacts

__all__ = ["ReplayState", "RunCheck"]


@dataclass(slots=True)
class ReplayState:
    """Where a run stands with its closed-run check.  Its :class:`RunCheck` writes every field;
    the check of runs starting together (:func:`group_check.check_group`) writes ``kind``,
    ``recording`` and ``group`` of each run it records:

    - ``issue_did``: what its issue did, its check being due (:meth:`RunCheck.issued`);
    - ``deferred``: a deferred issue's ns and first scheduling order (:meth:`RunCheck.defer`);
    - ``recording``: the recording of its run event by event, once it is being recorded;
    - ``kind``: what fixes its course (:meth:`RunFacts.kind`), once it is being recorded;
    - ``group``: recorded with other runs starting with it (:class:`group_check.GroupRecording`).
    """

    issue_did: Issue = Issue(0, -1, 0)
    deferred: tuple[int, int] | None = None
    recording: Recording | None = None
    kind: tuple = ()
    group: GroupRecording | None = None


class RunCheck:
    """The closed-run check of the run of ``facts`` in the simulation seen through ``ctx``
    (congestion-aware mode), counting the SimPy events it adds in ``tally``, the outcomes and
    links kept per kind in ``kept``.  The run passes itself (``run``: the queue entries whose
    function is a method bound to it are its own events) and its calls where they are needed."""

    __slots__ = ("facts", "ctx", "tally", "kept", "loop", "net", "state")

    def __init__(self, facts: RunFacts, ctx: CollectiveContext, tally: CollectiveTally, kept: Kept):
        self.facts = facts
        self.ctx = ctx
        self.tally = tally
        self.kept = kept
        self.net = facts.net
        self.loop = facts.net.loop
        self.state = ReplayState()

    def may_close(self) -> bool:
        """Whether every member issued it at this ns and no timeline is drawn."""
        return not self.drawn() and self._issued_now()

    def drawn(self) -> bool:
        """Whether a timeline is drawn (then only outcomes holding their spans are replayed)."""
        return self.ctx.spans.spans is not None

    def _issued_now(self) -> bool:
        now = self.loop.now
        return all(t == now for _a, _i, t in self.facts.inst.arrived.values())

    def kind(self) -> tuple:
        """What fixes the run's course from its check on (:meth:`RunFacts.kind`)."""
        return self.facts.kind(self.ctx.rank_actor)

    def run_links(self, kind: tuple) -> tuple[Link, ...]:
        """Every link a message of the run can cross (:meth:`RunFacts.run_links`)."""
        return self.facts.run_links(kind, self.kept.links)

    def defer(self, check: Callable[[None], None], rotated: Callable[[], ClosedRun | None] | None = None) -> bool:
        """One actor issues all of it now: when a kept outcome of its kind says what its issue
        does, take the scheduling orders of the events its issue schedules and leave them
        unbuilt until its check (``check``, the run's; :meth:`build`, unless it is replayed).
        With none kept, ``rotated()`` may time the run by one member (:mod:`rotation_runs`):
        its outcome is kept then.  With a timeline drawn, only an outcome holding its spans is
        taken."""
        if not self._issued_now():
            return False
        kind = self.kind()
        kept = self.kept
        got = kept.outcomes.get(kind)
        if got is None and rotated is not None and kind not in kept.unrotated:
            got = rotated()
            if got is None:
                kept.unrotated.add(kind)
            else:
                kept.outcomes[kind] = got
        if got is None or got.issue.events < 0 or (got.spans is None and self.drawn()):
            return False
        loop = self.loop
        self.state.deferred = (loop.now, loop.eid)
        loop.eid += got.issue.eids
        loop.call_first(loop.now + got.issue.first, check, None)
        return True

    def issued(self, run: object, check: Callable[[None], None], events: int, eid: int, alone: bool) -> None:
        """Every actor issued ``run``, its issue having found ``events`` counted and scheduling
        order ``eid`` (``alone``: one actor issued all of it): its check (``check``) is due just
        before its first own event when it may run closed."""
        if not self.may_close():
            return
        loop = self.loop
        first = min((e[0] for e in loop.queue if getattr(e[2], "__self__", None) is run), default=None)
        if first is not None and first > loop.now:  # none of its events can have run yet
            self.state.issue_did = Issue(first - loop.now, self.tally.events - events if alone else -1,
                                         loop.eid - eid)
            loop.call_first(first, check, None)

    def build(self, enter_all: Callable[[int], None]) -> None:
        """Build the events of a deferred issue as the issue would have (``enter_all(ai)``: the
        chunks of actor ``ai``'s ranks enter their first phase), at its ns and with the
        scheduling orders it took (the clock and the order counter set back meanwhile)."""
        state = self.state
        assert state.deferred is not None
        loop = self.loop
        now, eid = loop.now, loop.eid
        loop.now, loop.eid = state.deferred
        state.deferred = None
        enter_all(self.facts.issued[0])
        loop.now, loop.eid = now, eid

    def check(self, run: Checked, enter_all: Callable[[int], None]) -> None:
        """Just before the first own event of ``run``: replay its kept outcome when it runs closed
        (alone, or among quiet events), or run it event by event and keep the outcome when it
        may (``enter_all``: :meth:`build`)."""
        if self.state.recording is not None:  # recorded with its group
            return
        runs = starting(self, run)
        if len(runs) > 1 and check_group(self, runs):
            return
        self._check_alone(run, enter_all)

    def _check_alone(self, run: object, enter_all: Callable[[int], None]) -> None:
        """:meth:`check` for the run alone."""
        loop = self.loop
        now = loop.now
        state = self.state
        actors = self.facts.inst.actor_ids
        kind = self.kind()
        got = self.kept.outcomes.get(kind)
        if self.drawn() and (got is None or got.spans is None):  # nothing to draw its spans from
            if state.deferred is not None:
                self.build(enter_all)
            return
        others, own, real, stand = split(loop.queue, (run,), STAND_INS)
        among = got is not None and not closed(now + got.duration, real, stand)
        if got is not None and among and not self.among_quiet(got, others, now + got.duration, stand, actors) or \
                not links_free(self.run_links(kind), now) or got is not None and self._drawn_late(got, others):
            if state.deferred is not None:
                self.build(enter_all)
            return
        if got is None:
            state.kind = kind
            state.recording = self.record(others, own, real, stand, actors)
            return
        if state.deferred is not None:
            self.tally.events += got.issue.events
        self.replay(got, others)
        ends = ReplayEnds(loop, self.facts)
        ends.at_end(got, among, ends.close, got.order)

    def _drawn_late(self, got: ClosedRun, others: list) -> bool:
        """Whether replaying ``got`` would draw its chunk phases before one that another event due
        at its end draws when every event runs (the replay draws them all at its check)."""
        end = self.loop.now + got.duration
        return bool(got.spans) and any(due == end for due, _eid, _fn, _arg in others)

    def record(self, others: list, own: int, real: float, stand: float, actors: set[int]) -> Recording:
        """A recording of the run (or group) of ``actors`` from now, ``others`` being the other
        events queued, ``own`` the latest due of its own, ``real`` and ``stand`` the earliest of
        the other real events and of the replayed ends (:func:`closed_runs.split`)."""
        node_end = self.ctx.node_end
        if self.kept.quiet and node_end is not None:
            real = earliest_loud(others, node_end, actors)
        return Recording(self.loop.now, own, real, stand, self.tally.events, self.net.events, self.state.issue_did)

    def replay(self, got: ClosedRun, others: list) -> None:
        """Replay kept outcome ``got`` from now: the queue keeps ``others`` only, the outcome's
        event counts are added and its links' final state set (its end: :meth:`ReplayEnds.at_end`)."""
        loop = self.loop
        now = loop.now
        loop.queue[:] = others
        heapify(loop.queue)
        self.tally.events += got.tally_events
        self.net.events += got.net_events
        for link, free in got.links:
            link.free_at = now + free
        if got.spans:  # the chunk phases its one actor draws (a run alone, timed by member 0)
            add, key, ai = self.ctx.spans.add, self.facts.inst.key, got.order[0]
            for track, label, c, at, dur in got.spans:
                add(ai, track, (label, c, key), now + at, dur)

    def among_quiet(self, got: ClosedRun, others: list, end: int, stand: float, actors: set[int]) -> bool:
        """Whether a run (or group) of kept outcome ``got`` ending at ``end`` ns, of ``actors``,
        runs closed among quiet events (:mod:`closed_runs`), ``others`` being the other events
        queued and ``stand`` the earliest due of a replayed end."""
        node_end = self.ctx.node_end
        return (self.kept.quiet and got.lead >= 0 and end < stand and node_end is not None
                and quiet(others, end, node_end, actors))

    def hand_back(self, run: object, ai: int, last: bool) -> None:
        """Actor ``ai``'s ranks are about to be handed back (``last``: every member of ``run`` has
        finished): when the run is being recorded, note it; after the last, keep the outcome if
        the run ran closed."""
        state = self.state
        rec = state.recording
        if rec is None:
            return
        if state.group is not None:
            group_hand_back(self, rec, ai, last, state.group)
            return
        loop = self.loop
        now = loop.now
        tie = not rec.order and any(due == now and getattr(fn, "__self__", None) is not run
                                    for due, _eid, fn, _arg in loop.queue)
        rec.hand_back(ai, now, loop.eid, self.run_links(state.kind), self.tally.events, self.net.events, tie)
        if last:
            got = outcome(rec, loop.now, loop.running, self.facts.lead())
            if got is not None:
                self.kept.outcomes[state.kind] = got
