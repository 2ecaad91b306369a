"""Collectives that run alone on their links, timed once and replayed (congestion-aware mode).

A message-run collective runs *closed* when, at its *check* (``start`` ns: just before its
first own event, ahead of every other event of that ns):

- every member issued it at the same ns, its first own event is due after that ns (so none
  has run at the check), and no timeline is drawn (no spans to place);
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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .network import Link

__all__ = ["Issue", "ClosedRun", "Kept", "Recording", "split", "closed", "links_free", "outcome"]

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
    with the ns after the check at which it is free again, and what its issue did."""

    duration: int
    order: tuple[int, ...]
    tally_events: int
    net_events: int
    links: tuple[tuple[Link, int], ...]
    issue: Issue


class Kept:
    """What a simulation keeps of its closed runs, per kind: the outcome (``outcomes``) and every
    link a message of the kind can cross (``links``)."""

    __slots__ = ("outcomes", "links")

    def __init__(self) -> None:
        self.outcomes: dict[tuple, ClosedRun] = {}
        self.links: dict[tuple, tuple[Link, ...]] = {}


class Recording:
    """A run being run event by event to keep its outcome: its check (``start`` ns), the
    latest due of its own events then (``own``), the earliest due of other events then
    (``real``) and of replayed ends (``stand_in``), the event counts then, what its issue did;
    from the first hand-back on (:meth:`hand_back`), the actors in the order they finish, the
    scheduling order the first hand-back found (``first_eid``), its ns (``end``), the events
    counted until then and the links used (None: one was not free again)."""

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
        self.order: list[int] = []
        self.first_eid = -1
        self.end = -1
        self.links: tuple[tuple[Link, int], ...] | None = None

    def hand_back(self, ai: int, now: int, eid: int, links: tuple[Link, ...], tally_events: int,
                  net_events: int) -> None:
        """Actor ``ai``'s ranks are handed back now (``now`` ns; ``eid``: the scheduling order
        the next event takes); at the first, before anything it starts: the events counted
        since the check (``tally_events``, ``net_events``: the counts now) and the state of
        ``links``."""
        self.order.append(ai)
        if len(self.order) > 1:
            return
        self.first_eid, self.end = eid, now
        self.tally_events = tally_events - self.tally_events
        self.net_events = net_events - self.net_events
        used = []
        for link in links:
            if link.pending or link.waiting or link.free_at >= now:
                return
            if link.free_at >= self.start:
                used.append((link, link.free_at - self.start))
        self.links = tuple(used)


def split(queue: list[Entry], owner: object, stand_in: Callable[..., Any]) -> tuple[list[Entry], int, float, float]:
    """The entries of ``queue`` not scheduled by ``owner`` (a bound method of it), the latest
    due of its own, the earliest due among the others that are real events, and among the
    replayed ends (calls of ``stand_in``) (ns; -1 or infinity when none)."""
    others = []
    own = -1
    real = stand = float("inf")
    for entry in queue:
        due, _eid, fn, _arg = entry
        if getattr(fn, "__self__", None) is owner:
            own = max(own, due)
            continue
        others.append(entry)
        if getattr(fn, "__func__", None) is stand_in:
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


def outcome(rec: Recording, now: int, running: int) -> ClosedRun | None:
    """The outcome of recorded run ``rec``, whose last actor is handed back now (``now`` ns, in
    the event of scheduling order ``running``); None when it did not run closed."""
    if rec.links is None or now != rec.end or now == rec.start or rec.own >= now:
        return None
    if not now < min(rec.real, rec.stand_in) or running >= rec.first_eid:
        return None
    return ClosedRun(now - rec.start, tuple(rec.order), rec.tally_events, rec.net_events, rec.links, rec.issue)
