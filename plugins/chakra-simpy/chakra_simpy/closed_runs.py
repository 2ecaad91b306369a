"""Collectives that run alone on their links, timed once and replayed (congestion-aware mode).

A message-run collective runs *closed* when, at its *check* (``start`` ns: just before its
first own event, ahead of every other event of that ns):

- every member issued it at the same ns, its first own event is due after that ns (so none
  has run at the check), and no timeline is drawn (no spans to place), unless its outcome
  holds the spans its actor draws (a run timed by member 0, :mod:`rotation_runs`);
- every link its messages can cross is free (its last serialization ended before ``start``)
  and no message waits for it;
- no other event is due before its end (``start + duration``), so nothing else runs, sends or
  issues meanwhile.  An event due exactly at its end was scheduled before every one of its own
  last events and runs before them either way; a replayed run's end stands for events not yet
  scheduled, so one due at that ns counts as due before;
- all its members finish at its end, later than every own event queued at the check; after
  the first of them hands its ranks back (``order``), only its own events scheduled before
  that hand-back run (what the hand-back starts runs after them either way), and every link it
  used is free again before its end.

Its course from the check on is then fixed by what it is (phases and their queues, turns of
alternating algorithms, chunks, members and the actors they belong to, the order in which the
actors issued it): its own events run in ``(due, eid)`` order among themselves only.  The first
run of a kind runs event by event; when it ran closed with no other event due at its end (so
that the events counted until its first hand-back are its own), its outcome is kept
(:class:`ClosedRun`).  The next closed runs of that kind take it: their queued events leave the
queue, their links get their final state, the events they would have scheduled are counted,
and one call at the end hands the actors back in the same order.  Every other event keeps its
time and its order among the rest, so finish times and event counts are those of running every
event.

A run of a kept kind also runs closed *among quiet events* when, besides the links being free,
every other event due before its end is *quiet* (:func:`quiet`): the end of a node (not a
communication one) of one of its own actors while ``streams`` is 1.  Such an actor holds its one
communication slot with this run until it is handed back, so nothing its nodes do meanwhile can
send, issue a collective or reach the links (a receive holds no slot but only waits for a
send); what they schedule is quiet again.  The run's own course is then that of running alone,
and the quiet events run as they would.  What remains is the order, at the run's end, of the
hand-backs and the quiet events due then.  Every hand-back event is scheduled at least
``lag`` > 0 and at most ``lead`` ns before the end (the last step's delay of a member's last
chunk phase, :attr:`ClosedRun.lead`): a quiet event due at the end that was scheduled before
``end - lead`` comes before every hand-back; one scheduled at the end comes after all.  So the
replay's hand-back call takes its scheduling order at ``end - lead`` (a call ahead of that ns),
and at the end a call ahead of that ns looks for quiet events due then that were scheduled in
between; finding one, whose place among the hand-backs only running every event would tell, the
simulation stops with :class:`Undecided`, and the caller runs it again without this rule.

Runs whose checks fall at one ns (the first of them checks for all, none of them deferred, no
rank in two of them) run closed *together* under the same guard, with the events of all of them
as their own and every link any of them can cross.  Their joint course from the check on is
fixed by their kinds and by how their queued events interleave (``(due - check, run)`` in queue
order): whether or not their messages meet on a link, only their own events run meanwhile, in
``(due, eid)`` order.  Their joint outcome is kept when all of them end at one ns (else the first
to end hands its ranks back while the others run), and a replay hands the actors of all of them
back in the recorded order, ``(run, actor)`` pairs, with one call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .event_loop import fire
from .network import Link

__all__ = ["Issue", "ClosedRun", "Kept", "Recording", "Undecided", "split", "closed", "links_free", "is_quiet",
           "quiet", "earliest_loud", "outcome"]

#: a queue entry: (due ns, eid, function, argument)
Entry = tuple[int, int, Callable[[Any], None], Any]


class Issue(NamedTuple):
    """What issuing a run did, when one actor issued all of it (else ``events`` is -1): ns from
    the issue to the check, the collectives' events it counted and the scheduling orders it
    took."""

    first: int
    events: int
    eids: int


class ClosedRun(NamedTuple):
    """The outcome of a closed run, from its check on: ns to its end, the actors in the order
    they finish, the collectives' and the network's events it scheduled, each link it used
    with the ns after the check at which it is free again, what its issue did, and the most ns
    before its end at which a hand-back event is scheduled (``lead``; -1: one may be scheduled at
    its end, or the run ends with packets, and it does not run closed among quiet events); with
    a timeline drawn, the chunk phases its one actor draws, ``(track, label, chunk, ns after the
    check, ns)`` (None: not kept, as for a run recorded event by event, which no timeline lets
    run closed)."""

    duration: int
    order: tuple
    tally_events: int
    net_events: int
    links: tuple[tuple[Link, int], ...]
    issue: Issue
    lead: int
    spans: tuple[tuple[int, str, int, int, int], ...] | None = None


class Undecided(Exception):
    """A run replayed among quiet events met a quiet event due at its end whose place among its
    hand-backs only running every event tells: run the simulation again without that rule."""


class Kept:
    """What a simulation keeps of its closed runs, per kind: the outcome (``outcomes``), every
    link a message of the kind can cross (``links``) and the kinds that cannot be timed by one
    member (``unrotated``, :mod:`rotation_runs`); whether runs may be replayed among quiet events
    (``quiet``)."""

    __slots__ = ("outcomes", "links", "unrotated", "quiet")

    def __init__(self, quiet: bool = True) -> None:
        self.outcomes: dict[tuple, ClosedRun] = {}
        self.links: dict[tuple, tuple[Link, ...]] = {}
        self.unrotated: set[tuple] = set()
        self.quiet = quiet


class Recording:
    """A run being run event by event to keep its outcome: its check (``start`` ns), the
    latest due of its own events then (``own``), the earliest due of other events then
    (``real``; among quiet events, of those not quiet) and of replayed ends (``stand_in``), the
    event counts then, what its issue did; from the first hand-back on (:meth:`hand_back`), the
    actors in the order they finish, the scheduling order the first hand-back found
    (``first_eid``), its ns (``end``), the events counted until then and the links used (None:
    one was not free again, or another event was due at the first hand-back)."""

    __slots__ = ("start", "own", "real", "stand_in", "tally_events", "net_events", "issue", "order", "first_eid",
                 "end", "links")

    def __init__(self, start: int, own: int, real: float, stand_in: float, tally_events: int, net_events: int,
                 issue: Issue):
        self.start = start
        self.issue = issue
        self.own = own
        self.real = real
        self.stand_in = stand_in
        self.tally_events = tally_events
        self.net_events = net_events
        self.order: list[Any] = []
        self.first_eid = -1
        self.end = -1
        self.links: tuple[tuple[Link, int], ...] | None = None

    def hand_back(self, ai: object, now: int, eid: int, links: tuple[Link, ...], tally_events: int,
                  net_events: int, tie: bool) -> None:
        """Actor ``ai``'s ranks (of a group: ``(run, actor)``) are handed back now (``now`` ns;
        ``eid``: the scheduling order the next event takes); at the first, before anything it starts: the events counted
        since the check (``tally_events``, ``net_events``: the counts now) and the state of
        ``links``; ``tie``: another event is due now (it is not kept then)."""
        self.order.append(ai)
        if len(self.order) > 1:
            return
        self.first_eid, self.end = eid, now
        if tie:
            return
        self.tally_events = tally_events - self.tally_events
        self.net_events = net_events - self.net_events
        used = []
        for link in links:
            if link.pending or link.waiting or link.free_at >= now:
                return
            if link.free_at >= self.start:
                used.append((link, link.free_at - self.start))
        self.links = tuple(used)


def split(queue: list[Entry], owners: tuple[object, ...],
          stand_in: tuple[Callable[..., Any], ...]) -> tuple[list[Entry], int, float, float]:
    """The entries of ``queue`` not scheduled by one of ``owners`` (a bound method of it), the
    latest due of their own, the earliest due among the others that are real events, and among
    the replayed ends (calls of a function of ``stand_in``) (ns; -1 or infinity when none)."""
    others = []
    own = -1
    real = stand = float("inf")
    ids = {id(owner) for owner in owners}
    for entry in queue:
        due, _eid, fn, _arg = entry
        if id(getattr(fn, "__self__", None)) in ids:
            own = max(own, due)
            continue
        others.append(entry)
        if getattr(fn, "__func__", None) in stand_in:
            stand = min(stand, due)
        else:
            real = min(real, due)
    return others, own, real, stand


def closed(end: int, real: float, stand_in: float) -> bool:
    """Whether nothing else runs before a run's end at ``end`` ns, the earliest other events
    being due at ``real`` (real events) and ``stand_in`` (replayed ends) ns."""
    return end <= real and end < stand_in


def links_free(links: tuple[Link, ...], now: int) -> bool:
    """Whether every link of ``links`` ended its last serialization before ``now`` ns and no
    message waits for it."""
    return all(link.free_at < now and not link.pending for link in links)


def is_quiet(entry: Entry, node_end: Callable[[Any], None], actors: set[int]) -> bool:
    """Whether queue entry ``entry`` is the end of a node (an engine event whose one callback is
    ``node_end``) of an actor of ``actors`` with one communication slot (``streams`` 1)."""
    _due, _eid, fn, arg = entry
    if fn is not fire or arg.callbacks != [node_end]:
        return False
    actor = arg.value[0]
    return actor.index in actors and actor.streams == 1


def quiet(others: list[Entry], end: int, node_end: Callable[[Any], None], actors: set[int]) -> bool:
    """Whether every entry of ``others`` due before ``end`` ns is quiet (:func:`is_quiet`)."""
    return all(entry[0] >= end or is_quiet(entry, node_end, actors) for entry in others)


def earliest_loud(others: list[Entry], node_end: Callable[[Any], None], actors: set[int]) -> float:
    """The earliest due of an entry of ``others`` that is not quiet (ns; infinity when none)."""
    return min((entry[0] for entry in others if not is_quiet(entry, node_end, actors)), default=float("inf"))


def outcome(rec: Recording, now: int, running: int, lead: int) -> ClosedRun | None:
    """The outcome of recorded run ``rec``, whose last actor is handed back now (``now`` ns, in
    the event of scheduling order ``running``; ``lead``: :attr:`ClosedRun.lead`); None when it
    did not run closed."""
    if rec.links is None or now != rec.end or now == rec.start or rec.own >= now:
        return None
    if not now < min(rec.real, rec.stand_in) or running >= rec.first_eid:
        return None
    return ClosedRun(now - rec.start, tuple(rec.order), rec.tally_events, rec.net_events, rec.links, rec.issue,
                     lead)
