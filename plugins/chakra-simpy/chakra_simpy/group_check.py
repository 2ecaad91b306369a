"""Message runs whose checks fall at one ns, checked together (:mod:`closed_runs`): the runs
starting with a run, their joint replay or recording, and the hand-backs that end a joint
recording.  Each run is seen through its :class:`closed_check.RunCheck`; this module writes
only the :class:`closed_check.ReplayState` of the runs it records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

from .closed_runs import Recording, closed, links_free, outcome, split
from .replay_ends import STAND_INS

if TYPE_CHECKING:
    from .closed_check import RunCheck

__all__ = ["Checked", "starting", "check_group", "group_hand_back"]


class Checked(Protocol):
    """A message run as the runs starting with it see it: its closed-run check."""

    closed: RunCheck


def starting(first: RunCheck) -> list[RunCheck]:
    """The run of ``first`` and the runs whose checks are due now after it, none of them
    deferred."""
    loop = first.loop
    now = loop.now
    check = getattr(first.facts.check, "__func__", None)
    checks = sorted((eid, getattr(fn, "__self__", None)) for due, eid, fn, _arg in loop.queue
                    if due == now and eid < 0 and getattr(fn, "__func__", None) is check)
    runs = [first] + [cast(Checked, run).closed for _eid, run in checks if run is not first.facts.run]
    return runs if all(run.state.deferred is None for run in runs) else [first]


def check_group(first: RunCheck, runs: list[RunCheck]) -> bool:
    """Runs starting together (``runs``, ``first`` the one checking, their checks due now, no rank
    in two of them): replay their kept joint outcome when they run closed together (alone, or
    among quiet events), or record them together; False when they may not (``first`` is then
    checked alone)."""
    loop = first.loop
    now = loop.now
    kinds = [run.kind() for run in runs]
    links = tuple(dict.fromkeys(link for run, k in zip(runs, kinds) for link in run.run_links(k)))
    actors = [ai for run in runs for ai in run.facts.inst.actor_ids]
    ais = set(actors)
    if len(ais) < len(actors):
        return False
    others, own, real, stand = split(loop.queue, tuple(run.facts.run for run in runs), STAND_INS)
    place = {id(run.facts.run): k for k, run in enumerate(runs)}
    owner = [(due, eid, place.get(id(getattr(fn, "__self__", None)))) for due, eid, fn, _arg in loop.queue]
    order = tuple((due - now, k) for due, eid, k in sorted(owner) if k is not None and eid >= 0)
    kind = (tuple(kinds), order)
    got = first.kept.outcomes.get(kind)
    among = got is not None and not closed(now + got.duration, real, stand)
    if got is not None and among and not first.among_quiet(got, others, now + got.duration, stand, ais) or \
            not links_free(links, now):
        return False
    if got is None:
        _record(runs, kinds, kind, links, first.record(others, own, real, stand, ais))
        return True
    first.replay(got, others, among, first.ends.close_group, (tuple(run.facts for run in runs), got.order))
    return True


def _record(runs: list[RunCheck], kinds: list[tuple], kind: tuple, links: tuple, rec: Recording) -> None:
    """Every run of ``runs`` (of ``kinds``; the group's ``kind``, crossing ``links``) is recorded
    with the others in ``rec``."""
    left = [len(runs)]
    for k, run in enumerate(runs):
        state = run.state
        state.kind, state.recording, state.group = kinds[k], rec, (tuple(runs), k, kind, left, links)


def group_hand_back(run: RunCheck, rec: Recording, ai: int, last: bool, group: tuple) -> None:
    """:meth:`closed_check.RunCheck.hand_back` for a run recorded with its group."""
    loop = run.loop
    now = loop.now
    runs, k, kind, left, links = group
    ids = {id(other.facts.run) for other in runs}
    tie = not rec.order and any(due == now and id(getattr(fn, "__self__", None)) not in ids
                                for due, _eid, fn, _arg in loop.queue)
    rec.hand_back((k, ai), now, loop.eid, links, run.tally.events, run.net.events, tie)
    if last:
        left[0] -= 1
        if left[0] == 0:
            leads = [other.facts.lead() for other in runs]
            got = outcome(rec, now, loop.running, -1 if min(leads) < 0 else max(leads))
            if got is not None:
                run.kept.outcomes[kind] = got
