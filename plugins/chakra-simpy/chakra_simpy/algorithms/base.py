"""The interface every collective algorithm implements, and the shapes it hands back.

An :class:`Algorithm` answers four questions about one chunk phase of a collective kind (``AR``,
``RS``, ``AG``, ``A2A``) with ``d`` bytes entering it, on the members of a
:class:`~chakra_simpy.layouts.MemberLayout`:

- :meth:`~Algorithm.cost`: its closed form with equal starts (congestion-unaware, lockstep);
- :meth:`~Algorithm.member_phase`: the phase per member (a :class:`MemberPhase`), for members
  that do not move in lockstep (:mod:`member_timing`);
- :meth:`~Algorithm.messages`: the messages each member sends and awaits, for the
  congestion-aware mode (:mod:`message_run`);
- the member layout it runs on is given to it; :attr:`~Algorithm.alternates` says whether its
  members take one of two structures in turn, chunk by chunk (a :class:`TreeTurn` tells which).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, overload

from chakra_core.system import Dimension

if TYPE_CHECKING:
    from ..layouts import MemberLayout

__all__ = ["Algorithm", "Implementation", "TreeTurn", "MemberPhase", "Link", "MessageStep", "Part", "numbered",
           "RotatedParts", "StepMessages", "PacketMember", "PacketMessages", "Messages"]

#: ``link(distance)``: the ``(Dimension, hops)`` a message to the member that many places away
#: is charged on
Link = Callable[[int], tuple[Dimension, int]]


class TreeTurn(NamedTuple):
    """Which of an alternating algorithm's two structures a chunk takes on one dimension: chunk
    ``c`` takes the first when ``(base + c * visits + visit)`` is even (``base``: such phases the
    dimension ran before this collective; ``visits``: per chunk; ``visit``: this one's place)."""

    base: int
    visits: int
    visit: int

    def choice(self, chunk: int) -> int:
        """0 (the first structure) or 1 for chunk ``chunk`` (0-based)."""
        return (self.base + chunk * self.visits + self.visit) % 2


class MemberPhase(Protocol):
    """A chunk phase timed per member: the queue (dimension) it waits in, the evaluations per
    member per chunk that ``stagger_limit`` counts, and every member's finish time."""

    queue: int

    @property
    def work(self) -> int:
        """Evaluations per member per chunk."""

    def run(self, start: list[int], chunk: int) -> list[int]:
        """Finish time (ns) of every member of chunk ``chunk``, each started at ``start[j]``;
        starts all later by ``t`` give finishes all later by ``t`` (a plan is reused shifted:
        :class:`..member_timing.FinishPlans`)."""


#: one step of a member: (members sent to, in order; members received from; bytes; ns after)
MessageStep = tuple[tuple[int, ...], tuple[int, ...], int, int]
#: a member's part of a chunk phase: ns before its first step, and its steps with every peer
#: paired with the number of messages to (from) it in the steps before
Part = tuple[int, list[tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...], int, int]]]


def numbered(delay: int, steps: list[MessageStep]) -> Part:
    """A member's part: ``steps`` after ``delay`` ns, with each peer numbered, so that a message
    is told apart from the others between the same two members in one chunk phase."""
    sent: dict[int, int] = {}
    got: dict[int, int] = {}
    return delay, [(_counted(to, sent), _counted(frm, got), m, add) for to, frm, m, add in steps]


def _counted(peers: tuple[int, ...], seen: dict[int, int]) -> tuple[tuple[int, int], ...]:
    """Each peer paired with the messages counted for it in ``seen`` before this step; ``seen``
    then counts one more for each (a peer named twice in one step has one number)."""
    if len(peers) == 1:  # the usual step: one peer
        k = peers[0]
        n = seen.get(k, 0)
        seen[k] = n + 1
        return ((k, n),)
    out = tuple([(k, seen.get(k, 0)) for k in peers])
    for k in peers:
        seen[k] = seen.get(k, 0) + 1
    return out


class RotatedParts(Sequence[Part]):
    """Every member's part of a chunk phase on one ring of ``size`` members in index order
    (member j sends to member ``(j + 1) % size``, not to a member of another ring) where member
    j's part is member 0's (``first``) with every peer moved j places on: member 0's part is
    built at once, another member's when it is asked for.  A message run of such phases may be
    timed by member 0 alone (:mod:`..rotation_runs`)."""

    __slots__ = ("size", "first", "made")

    def __init__(self, size: int, first: Part):
        self.size = size
        self.first = first
        self.made: dict[int, Part] = {0: first}

    def __len__(self) -> int:
        return self.size

    def peers(self) -> set[int]:
        """The members member 0 sends to (member j sends to each moved j places on)."""
        return {k for to, _frm, _m, _add in self.first[1] for k, _n in to}

    @overload
    def __getitem__(self, j: int) -> Part: ...

    @overload
    def __getitem__(self, j: slice) -> Sequence[Part]: ...

    def __getitem__(self, j: int | slice) -> Part | Sequence[Part]:
        """Member ``j``'s part (built on first use), or the parts of a slice of members."""
        if isinstance(j, slice):
            return [self[i] for i in range(self.size)[j]]
        got = self.made.get(j)
        if got is None:
            if not 0 <= j < self.size:
                raise IndexError(j)
            size = self.size
            delay, steps = self.first
            got = self.made[j] = (delay, [(tuple([((k + j) % size, n) for k, n in to]),
                                           tuple([((k + j) % size, n) for k, n in frm]), m, add)
                                          for to, frm, m, add in steps])
        return got


class StepMessages(NamedTuple):
    """Every member's part (by member index) of a chunk phase run step by step; an alternating
    algorithm gives one sequence per structure (``choices``, picked by a :class:`TreeTurn`)."""

    choices: list[Sequence[Part]]


class PacketMember(Protocol):
    """One member of a chunk phase run packet by packet (:class:`PacketMessages`)."""

    @property
    def done(self) -> bool:
        """Whether the member has finished the chunk phase."""

    def start(self) -> list[int]:
        """The phase starts: ns until each packet it makes then is ready."""

    def packet_ready(self) -> list[int]:
        """A packet became ready: the peers (``k`` places on) of the packets sent now."""

    def post(self, k: int) -> bool:
        """Post the receive from the peer ``k`` places before; True when its message had
        already arrived (then :meth:`receive`)."""

    def arrive(self, k: int) -> bool:
        """A message from the peer ``k`` places before arrived; True when its receive was
        posted (then :meth:`receive`)."""

    def receive(self) -> int:
        """A message is received: ns until the packet it makes is ready."""


class PacketMessages(NamedTuple):
    """A chunk phase whose members send packets as they become ready: a packet to the member
    ``k`` places on is ``m`` bytes; ``member()`` makes one member's state."""

    layout: MemberLayout
    m: int
    member: Callable[[], PacketMember]


Messages = StepMessages | PacketMessages


class Implementation(NamedTuple):
    """One entry of a system's ``*-implementation`` list as the registry reads it: the name as
    given, its algorithm, its window (``direct8``: 8) and whether it is a ``one*`` variant (one
    logical ring over every NPU)."""

    name: str
    algorithm: Algorithm
    window: int | None
    all_npus: bool


class Algorithm(ABC):
    """One collective algorithm, registered under :attr:`name` (its ASTRA-sim name)."""

    #: the name in the system's ``*-implementation`` lists (``one`` variants and a window
    #: suffix are told apart by the registry)
    name: str = ""
    #: members take one of two structures in turn (a :class:`TreeTurn`), and finish a chunk
    #: phase at different times even when they start it together
    alternates: bool = False

    def phase_kind(self, kind: str) -> str:
        """The kind the algorithm runs where a plan asks for ``kind`` (itself unless the
        algorithm runs another one in its place)."""
        return kind

    def check_all_npus(self, impl: Implementation, dims: tuple[Dimension, ...]) -> None:  # noqa: B027
        """Raise a ConfigError when the ``one*`` variant ``impl`` over every NPU of ``dims``
        is not modelled (every one is, unless the algorithm says otherwise)."""

    @abstractmethod
    def cost(self, kind: str, impl: Implementation, p: int, link: Link, d: int, e: int,
             local_mem_bw: float) -> int:
        """ns of one chunk phase on a ring of ``p`` members started together (``impl``: the
        entry of the implementation list, for its window and for messages)."""

    @abstractmethod
    def member_phase(self, kind: str, data: int, lay: MemberLayout, queue: int, e: int, local_mem_bw: float,
                     turn: TreeTurn | None) -> MemberPhase:
        """The chunk phase per member on ``lay`` (``queue``: the dimension queue it waits in;
        ``turn``: for an alternating algorithm)."""

    @abstractmethod
    def messages(self, kind: str, data: int, lay: MemberLayout, e: int, local_mem_bw: float) -> Messages:
        """The messages of every member of one chunk phase on ``lay``."""
