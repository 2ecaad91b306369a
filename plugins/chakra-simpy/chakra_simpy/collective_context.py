"""What the collective code sees of a simulation (:class:`CollectiveContext`), where it draws
its timeline spans (:class:`SpanSink`) and what it reports back (:class:`CollectiveTally`), so
that it neither reads nor writes the engine's own state."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import simpy

    from chakra_core.system import SystemDescription

    from .actor import Actor
    from .event_loop import EventLoop
    from .network import Network
    from .planner import Planner

__all__ = ["SpanSink", "CollectiveContext", "CollectiveTally"]


class SpanSink:
    """Timeline spans ``(actor, track, what, start_ns, dur_ns)`` appended to ``spans`` (None:
    no timeline), at most ``limit`` of them."""

    __slots__ = ("spans", "limit")

    def __init__(self, spans: list | None, limit: int):
        self.spans = spans
        self.limit = limit

    def add(self, actor: int, track: int, what: tuple, start: int, dur: int) -> None:
        """Add one span unless there is no timeline or it is full."""
        spans = self.spans
        if spans is not None and len(spans) < self.limit:
            spans.append((actor, track, what, start, dur))


class CollectiveContext(NamedTuple):
    """The simulation as the collective code sees it: the SimPy environment (the congestion-aware
    mode's event loop), the system and its planner, the span sink, the actors and the actor
    standing for each rank (``actors[rank_actor[r]]``), the shared links (congestion-aware mode,
    else None), how to end a node now (``end_node(actor, node)``), the most per-member
    evaluations of a staggered collective (``stagger_limit``) and whether communication replays
    its recorded durations."""

    env: simpy.Environment | EventLoop
    sd: SystemDescription
    planner: Planner
    spans: SpanSink
    actors: list[Actor]
    rank_actor: list[int]
    network: Network | None
    end_node: Callable[[Actor, int], None]
    stagger_limit: int
    replay: bool
    #: the engine's callback ending a node at its event (congestion-aware mode: :func:`closed_runs.quiet`)
    node_end: Callable | None = None


@dataclass
class CollectiveTally:
    """What the collective code did: SimPy events it scheduled, chunk phase events, and the
    collectives timed per rank, approximated by a barrier, with members held until the last
    member issued them, run message by message, left off the shared links, or run as their custom
    implementation."""

    events: int = 0
    phase_events: int = 0
    per_rank: int = 0
    approximated: int = 0
    held: int = 0
    by_message: int = 0
    unshared: int = 0
    custom_runs: int = 0
