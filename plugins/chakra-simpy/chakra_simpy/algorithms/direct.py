"""The direct algorithm (ASTRA-sim's ``direct``, ``AllToAll.cc`` over ``Ring.cc``).

Every member sends to all P-1 others of its ring at once (``m = d // P``; all-gather ``d``),
charged by the farthest peer: reduce-scatter 2 endpoint delays, 1 step, 1 reduction; all-gather
and all-to-all 2 delays, 1 step.  The all-reduce runs packet by packet (:class:`DirectMember`):
a member of a ring of P makes a packet when the chunk phase starts (P-1 of them) and one per
message it receives.  A packet is ready ``e`` ns after it is made, ``e + r`` for the P-1 made by
the first-half messages (they are reduced).  The k-th packet made goes to the peer k places on
(counting round the P-1 peers), whoever sent the message that made it; as it is sent, the member
posts its receive from the peer k places before.  Each packet that becomes ready lets the member
send its oldest unsent packet.  From its P-th send on, the member sends only once it has received
P-1 messages, and then every ready packet at once.  It is done when all 3(P-1) packets are ready
and 2(P-1) were sent.  With equal starts this is :func:`direct_all_reduce`; the per-member timing
(:class:`DirectPhase`) and the congestion-aware message run (:mod:`message_run`) drive the
packets, each with its own clock and network.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush

import numpy as np

from chakra_core import ConfigError

from ..formulas import chain_cost, link_net, net, red
from ..layouts import MemberLayout
from .base import Algorithm, Implementation, Link, PacketMessages, StepMessages, TreeTurn, numbered

__all__ = ["Direct", "DirectMember", "DirectPhase", "direct_all_reduce"]


def direct_all_reduce(nets: list[int], e: int, r: int) -> int:
    """One chunk phase of ASTRA-sim's direct all-reduce with equal starts (ns); ``nets[k-1]``:
    the message to (and from) the peer ``k`` places on, ``r`` the reduction of one message.

    The P-1 first-half messages leave after ``e``.  Each arrival, earliest first, makes a
    second-half packet ready ``e + r`` later, and the k-th one made goes to the peer k places on,
    whoever sent the k-th arrival.  None leaves before all P-1 have arrived: one ready earlier
    leaves at the first ready time at or after the last arrival.  The phase ends ``e`` after the
    last second-half message arrives."""
    arrive = sorted(e + x for x in nets)
    ready = [t + e + r for t in arrive]
    gate = min(t for t in ready if t >= arrive[-1])
    return max(max(t, gate) + x for t, x in zip(ready, nets)) + e


class Direct(Algorithm):
    """The direct algorithm (module docstring); a window below P-1 is not modelled."""

    name = "direct"

    def cost(self, kind: str, impl: Implementation, p: int, link: Link, d: int, e: int,
             local_mem_bw: float) -> int:
        """All P-1 messages at once, charged by the farthest peer (all-reduce:
        :func:`direct_all_reduce`, with one cost for every peer)."""
        if impl.window is not None and impl.window < p - 1:
            raise ConfigError(f"'{impl.name}' with a window below P-1 = {p - 1} is not modelled by the "
                              "simpy backend; use 'direct'")
        m = d if kind == "AG" else d // p
        if kind == "AR":
            nets = [net(dim_k, m, h_k) for dim_k, h_k in (link(k) for k in range(1, p))]
            return direct_all_reduce(nets, e, red(m, local_mem_bw))
        dim, h = max((link(k) for k in range(1, p)), key=lambda dh: (net(dh[0], m, dh[1]), dh[1]))
        reds = red(m, local_mem_bw) if kind == "RS" else 0
        return chain_cost(e, 2, [(m, dim, h)], reds).fixed

    def member_phase(self, kind: str, data: int, lay: MemberLayout, queue: int, e: int, local_mem_bw: float,
                     turn: TreeTurn | None) -> DirectPhase:
        """Every member's message from each peer on its own incoming link (:class:`DirectPhase`)."""
        p = lay.size
        m = data if kind == "AG" else data // p
        cin = np.array([[link_net(lay.link(j, p - o), m) for o in range(1, p)] for j in range(len(lay.index))],
                       np.int64)
        r = red(m, local_mem_bw) if kind in ("AR", "RS") else 0
        return DirectPhase(queue, e, lay.slices, cin, e + r, kind == "AR")

    def messages(self, kind: str, data: int, lay: MemberLayout, e: int,
                 local_mem_bw: float) -> StepMessages | PacketMessages:
        """To the members 1, 2, ..., P-1 places on, in that order, from all of them (ASTRA-sim's
        direct algorithm turns its receiver round the ring); an all-reduce packet by packet."""
        p = lay.size
        if kind == "AR":
            m = data // p
            r = red(m, local_mem_bw)
            return PacketMessages(lay, m, lambda: DirectMember(p, e, r))
        m = data if kind == "AG" else data // p
        add = e + (red(m, local_mem_bw) if kind == "RS" else 0)
        parts = []
        for j in range(len(lay.index)):
            peers = tuple(lay.offset(j, o) for o in range(1, p))
            parts.append(numbered(e, [(peers, peers, m, add)]))
        return StepMessages([parts])


class DirectMember:
    """The packet state of one member of a ring of ``p`` (``e``, ``r``: endpoint delay and
    reduction of one message, ns)."""

    __slots__ = ("n", "e", "r", "made", "sent", "ready", "got", "posted", "waiting")

    def __init__(self, p: int, e: int, r: int):
        self.n = p - 1
        self.e, self.r = e, r
        self.made = self.sent = self.ready = self.got = 0
        self.posted: dict[int, int] = {}  # k -> receives from the peer k places before, not matched
        self.waiting: dict[int, int] = {}  # k -> its messages arrived before their receive

    def start(self) -> list[int]:
        """The chunk phase starts: its first P-1 packets are made; returns the ns until each is
        ready."""
        return [self.make() for _ in range(self.n)]

    def make(self) -> int:
        """Make the next packet; returns the ns until it is ready."""
        k = self.made
        self.made += 1
        return self.e + (self.r if self.n <= k < 2 * self.n else 0)

    def packet_ready(self) -> list[int]:
        """A packet became ready: the peers (k places on) of the packets sent now, in order."""
        self.ready += 1
        if self.sent >= self.n and self.got < self.n:
            return []
        out = []
        for _ in range(1 if self.sent < self.n else self.n):
            if self.sent == 2 * self.n or self.ready == self.sent or self.made == self.sent:
                break
            out.append(self.sent % self.n + 1)
            self.sent += 1
        return out

    @property
    def done(self) -> bool:
        """Whether the member has finished the chunk phase."""
        return self.sent == 2 * self.n and self.ready == 3 * self.n

    def post(self, k: int) -> bool:
        """Post the receive from the peer ``k`` places before; True when its message had arrived
        (it is received now: call :meth:`receive`)."""
        return _match(self.waiting, self.posted, k)

    def arrive(self, k: int) -> bool:
        """A message from the peer ``k`` places before arrived; True when its receive was posted
        (it is received now: call :meth:`receive`)."""
        return _match(self.posted, self.waiting, k)

    def receive(self) -> int:
        """A message is received: it makes a packet; returns the ns until that one is ready."""
        self.got += 1
        return self.make()


def _match(other: dict[int, int], mine: dict[int, int], k: int) -> bool:
    """Take one of ``other[k]`` if there is one (True), else add one to ``mine[k]``."""
    if other.get(k):
        other[k] -= 1
        return True
    mine[k] = mine.get(k, 0) + 1
    return False


class DirectPhase:
    """A direct chunk phase per member: every member sends to the P-1 others of its ring after
    ``e``; member j's message from the member o places before it takes ``cin[j, o-1]`` ns and
    counts from when j posted its receive (when it sent to that member).  Without ``second``
    (reduce-scatter, all-gather, all-to-all) a member ends ``add`` ns after its last arrival.
    With ``second`` (all-reduce) the members run ASTRA-sim's direct all-reduce event by event
    (:func:`_members_all_reduce`).  With equal starts both are the closed forms of
    :meth:`Direct.cost`."""

    __slots__ = ("queue", "e", "slices", "cin", "add", "second")

    def __init__(self, queue: int, e: int, slices: list[list[int]], cin: np.ndarray, add: int, second: bool):
        self.queue = queue
        self.e = e
        self.slices = [np.asarray(sl, np.int64) for sl in slices]
        self.cin = cin
        self.add = add
        self.second = second

    @property
    def work(self) -> int:
        """Messages per member per chunk (what ``stagger_limit`` counts)."""
        return self.cin.shape[1] * (2 if self.second else 1)

    def run(self, start: list[int], chunk: int) -> list[int]:
        """Finish time (ns) of every member."""
        st = np.asarray(start, np.int64)
        out = np.empty(len(start), np.int64)
        for members in self.slices:
            if self.second:
                out[members] = _members_all_reduce(st[members].tolist(), self.cin[members].tolist(), self.e,
                                                  self.add - self.e)
            else:
                out[members] = self._one_step(st[members] + self.e, self.cin[members])
        return out.tolist()

    def _one_step(self, send: np.ndarray, cin: np.ndarray) -> np.ndarray:
        """Finish of the members of one ring (in ring order) sending at ``send``."""
        p = len(send)
        back = (np.arange(p)[:, None] - np.arange(1, p)[None, :]) % p  # back[q, o-1]: o places before q
        return np.maximum(send[back] + cin, send[:, None]).max(axis=1) + self.add


def _members_all_reduce(start: list[int], cin: list[list[int]], e: int, r: int) -> list[int]:
    """Finish of every member of one ring (in ring order) of ASTRA-sim's direct all-reduce
    started at ``start``, packet by packet (:class:`DirectMember`); ``cin[j][k-1]``: ns
    of member j's message from the member k places before it."""
    p = len(start)
    members = [DirectMember(p, e, r) for _ in range(p)]
    finish = [0] * p
    events = [(t, q, q, 0) for q, t in enumerate(start)]  # (time, order, member, what: 0 start,
    heapify(events)  # 1 a packet ready, 2 + k a message from k places before)
    order = p

    def later(t: int, q: int, what: int) -> None:
        nonlocal order
        heappush(events, (t, order, q, what))
        order += 1

    while events:
        t, _o, q, what = heappop(events)
        me = members[q]
        if what == 0:
            for delay in me.start():
                later(t + delay, q, 1)
        elif what == 1:
            for k in me.packet_ready():
                dst = (q + k) % p
                later(t + cin[dst][k - 1], dst, 2 + k)
                if me.post(k):
                    later(t + me.receive(), q, 1)
            if me.done:
                finish[q] = t
        elif me.arrive(what - 2):
            later(t + me.receive(), q, 1)
    return finish
