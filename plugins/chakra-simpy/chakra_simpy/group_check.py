"""Message runs whose checks fall at one ns, checked together (:mod:`closed_runs`): the runs
starting with a run, their joint replay or recording, and the hand-backs that end a joint
recording.  Each run is seen through its check (:class:`closed_check.RunCheck`); this module
writes only the :class:`closed_check.ReplayState` of the runs it records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from .closed_runs import Recording, closed, links_free, outcome, split
from .replay_ends import STAND_INS, ReplayEnds
from .run_facts import RunFacts

if TYPE_CHECKING:
    from .closed_check import RunCheck
    from .network import Link

__all__ = ["Checked", "GroupRecording", "starting", "check_group", "group_hand_back"]


class Checked(Protocol):
    """A message run as the runs starting with it see it: its closed-run check (``closed``) and
    the call of it that it queues as its own event (``check_due``)."""

    closed: RunCheck

    def check_due(self, _arg: None) -> None:
        """The run's check (:meth:`closed_check.RunCheck.check`)."""

    def build_issue(self) -> None:
        """Build the events of the run's deferred issue (:meth:`closed_check.RunCheck.build`)."""


@dataclass(slots=True, eq=False)
class GroupRecording:
    """A run recorded with the runs starting with it: their facts, its ``place`` among them, the
    group's ``kind``, how many of them have not ended (``left``, one list shared by all), every
    link any of them can cross, and the runs themselves (whose methods are their queued events)."""

    facts: tuple[RunFacts, ...]
    place: int
    kind: tuple
    left: list[int]
    links: tuple[Link, ...]
    runs: tuple[Checked, ...]


def starting(first: RunCheck, run: Checked) -> list[Checked]:
    """``run`` (whose check is ``first``) and the runs whose checks are due now after it; when
    there are several, the events of those whose issue was deferred are built (each at the
    scheduling orders its issue took), so that they are checked as issued."""
    loop = first.loop
    now = loop.now
    check = type(run).check_due
    checks = sorted((eid, getattr(fn, "__self__", None)) for due, eid, fn, _arg in loop.queue
                    if due == now and eid < 0 and getattr(fn, "__func__", None) is check)
    runs = [run] + [cast(Checked, other) for _eid, other in checks if other is not run]
    if len(runs) > 1:
        for other in runs:
            if other.closed.state.deferred is not None:
                other.build_issue()
    return runs


def check_group(first: RunCheck, runs: list[Checked]) -> bool:
    """Runs starting together (``runs``, the first of them checking through ``first``, their
    checks due now, no rank in two of them): replay their kept joint outcome when they run closed
    together (alone, or among quiet events), or record them together; False when they may not
    (the first is then checked alone)."""
    if first.drawn():  # a joint outcome keeps no spans
        return False
    loop = first.loop
    now = loop.now
    checks = [run.closed for run in runs]
    kinds = [check.kind() for check in checks]
    links = tuple(dict.fromkeys(link for check, k in zip(checks, kinds) for link in check.run_links(k)))
    actors = [ai for check in checks for ai in check.facts.inst.actor_ids]
    ais = set(actors)
    if len(ais) < len(actors):
        return False
    others, own, real, stand = split(loop.queue, tuple(runs), STAND_INS)
    place = {id(run): k for k, run in enumerate(runs)}
    owner = [(due, eid, place.get(id(getattr(fn, "__self__", None)))) for due, eid, fn, _arg in loop.queue]
    order = tuple((due - now, k) for due, eid, k in sorted(owner) if k is not None and eid >= 0)
    kind = (tuple(kinds), order)
    got = first.kept.outcomes.get(kind)
    among = got is not None and not closed(now + got.duration, real, stand)
    if got is not None and among and not first.among_quiet(got, others, now + got.duration, stand, ais) or \
            not links_free(links, now):
        return False
    if got is None:
        rec = first.record(others, own, real, stand, ais)
        _record(checks, kinds, kind, links, tuple(runs), rec)
        return True
    first.replay(got, others)
    ends = ReplayEnds(loop, first.facts)
    ends.at_end(got, among, ends.close_group, (tuple(check.facts for check in checks), got.order))
    return True


def _record(checks: list[RunCheck], kinds: list[tuple], kind: tuple, links: tuple[Link, ...],
            runs: tuple[Checked, ...], rec: Recording) -> None:
    """Every run of ``checks`` (of ``kinds``) is recorded with the others in ``rec`` (the group's
    ``kind``, every link any of them can cross, the runs)."""
    left = [len(checks)]
    facts = tuple(check.facts for check in checks)
    for k, check in enumerate(checks):
        state = check.state
        state.kind, state.recording = kinds[k], rec
        state.group = GroupRecording(facts, k, kind, left, links, runs)


def group_hand_back(check: RunCheck, rec: Recording, ai: int, last: bool, group: GroupRecording) -> None:
    """:meth:`closed_check.RunCheck.hand_back` for a run recorded with its group."""
    loop = check.loop
    now = loop.now
    ids = {id(run) for run in group.runs}
    tie = not rec.order and any(due == now and id(getattr(fn, "__self__", None)) not in ids
                                for due, _eid, fn, _arg in loop.queue)
    rec.hand_back((group.place, ai), now, loop.eid, group.links, check.tally.events, check.net.events, tie)
    if last:
        group.left[0] -= 1
        if group.left[0] == 0:
            leads = [one.lead() for one in group.facts]
            got = outcome(rec, now, loop.running, -1 if min(leads) < 0 else max(leads))
            if got is not None:
                check.kept.outcomes[group.kind] = got
