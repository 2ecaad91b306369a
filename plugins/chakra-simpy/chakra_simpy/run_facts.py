"""What the closed-run side (:mod:`closed_check`, :mod:`group_check`, :mod:`replay_ends`) reads
of a message run (:mod:`message_run`), and what follows from it: the routes between its members,
the run's kind, every link its messages can cross, and its lead."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .algorithms.base import PacketMessages
from .message_phases import Phase
from .network import Link, Network

if TYPE_CHECKING:
    from .collectives import Instance

__all__ = ["RunFacts"]


@dataclass(frozen=True, eq=False, slots=True)
class RunFacts:
    """A message run as its closed-run side sees it.  :class:`message_run.MessageRun` builds it
    once; after that only the run writes to it, appending each actor to ``issued`` as it issues
    the collective.  It holds no reference to the run (the run passes itself where its identity
    matters), so a finished run is freed at once:

    - ``inst``, ``phases`` and ``phase_keys``: the instance, its chunk phases and the memo key
      of each phase's messages;
    - ``pos``: each member rank's place; ``rank_of``: each member's rank on ``net`` (the links);
    - ``issued``: the actors in the order they issued it;
    - ``on_done(inst, ai, last)``: actor ``ai``'s ranks are handed back to the engine
      (``last``: the whole collective has finished).
    """

    inst: Instance
    phases: list[Phase]
    phase_keys: list[tuple]
    pos: dict[int, int]
    rank_of: list[int]
    net: Network
    issued: list[int]
    on_done: Callable[[Instance, int, bool], None]

    def links(self, j: int, k: int) -> tuple[Link, ...]:
        """The links from member j to member k."""
        return self.net.route(self.rank_of[j], self.rank_of[k])

    def kind(self, rank_actor: list[int]) -> tuple:
        """What fixes a closed run's course from its check on (``rank_actor``: each rank's actor)."""
        n = self.inst.n
        turns = tuple(None if ph.turn is None else tuple(ph.turn.choice(c) for c in range(n)) for ph in self.phases)
        return (tuple(self.phase_keys), tuple(ph.queue for ph in self.phases), turns, n, self.inst.members,
                tuple(rank_actor[r] for r in self.inst.members), tuple(self.issued))

    def run_links(self, kind: tuple, kept: dict[tuple, tuple[Link, ...]]) -> tuple[Link, ...]:
        """Every link a message of this run can cross (kept per kind in ``kept``)."""
        got = kept.get(kind)
        if got is None:
            seen: dict[Link, None] = {}
            for ph in self.phases:
                if isinstance(ph.messages, PacketMessages):
                    lay = ph.messages.layout
                    for j in self.pos.values():
                        for k in range(1, lay.size):
                            seen.update(dict.fromkeys(self.links(j, lay.offset(j, k))))
                    continue
                for c in self._one_per_choice(ph):
                    rotated = ph.rotated(c)
                    if rotated is not None:  # member j's routes: member 0's peers moved j places on
                        offsets = rotated.peers()
                        for j in self.pos.values():
                            for o in offsets:
                                seen.update(dict.fromkeys(self.links(j, (j + o) % rotated.size)))
                        continue
                    for j in self.pos.values():
                        for to, _frm, _m, _add in ph.part(c, j, self.links)[1]:
                            for links, _k, _n in to:
                                seen.update(dict.fromkeys(links))
            got = kept[kind] = tuple(seen)
        return got

    def lead(self) -> int:
        """The most ns before its end at which a member's last event is scheduled: the delay after
        the last step of a member's part of the last phase (its first delay when it has no step);
        -1 when one of them is 0 or the last phase runs packets."""
        ph = self.phases[-1]
        if isinstance(ph.messages, PacketMessages):
            return -1
        adds = []
        for c in self._one_per_choice(ph):
            # members whose parts are member 0's rotated have its last delay
            members = [0] if ph.rotated(c) is not None else self.pos.values()
            for j in members:
                delay, steps = ph.part(c, j, self.links)
                adds.append(steps[-1][3] if steps else delay)
        return max(adds) if min(adds) > 0 else -1

    def _one_per_choice(self, ph: Phase) -> list[int]:
        """The first chunk to take each of phase ``ph``'s structures (of an alternating algorithm;
        else chunk 0): a member's part depends on its chunk's structure only (:meth:`Phase.part`)."""
        first: dict[int, int] = {}
        for c in range(self.inst.n):
            first.setdefault(0 if ph.turn is None else ph.turn.choice(c), c)
        return list(first.values())
