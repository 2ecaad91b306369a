"""One member's packets in ASTRA-sim's direct all-reduce (``AllToAll.cc`` over ``Ring.cc``).

A member of a ring of P makes a packet when the chunk phase starts (P-1 of them) and one per
message it receives.  A packet is ready ``e`` ns after it is made, ``e + r`` for the P-1 made by
the first-half messages (they are reduced).  The k-th packet made goes to the peer k places on
(counting round the P-1 peers), whoever sent the message that made it; as it is sent, the member
posts its receive from the peer k places before.  Each packet that becomes ready lets the member
send its oldest unsent packet.  From its P-th send on, the member sends only once it has received
P-1 messages, and then every ready packet at once.  It is done when all 3(P-1) packets are ready
and 2(P-1) were sent.  The unaware per-member timing (:mod:`stagger`) and the congestion-aware
message run (:mod:`aware`) drive this, each with its own clock and network.
"""

from __future__ import annotations

__all__ = ["DirectMember"]


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
