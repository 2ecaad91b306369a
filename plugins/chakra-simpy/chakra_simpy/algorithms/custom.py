"""Custom collectives: a collective run as its own Chakra ET per rank (ASTRA-sim's Collective API).

The system's ``*-implementation-custom`` key (``*-implementation-chakra`` in ASTRA-sim before June
2025) names a path prefix, resolved by the system description; rank r's part of the
collective is ``PREFIX.r.et``, a graph of COMM_SEND, COMM_RECV and COMP nodes.  As ASTRA-sim's
``ChakraImpl`` does, every node whose dependencies are done is issued at once (no resource
limits inside the collective), a send of ``comm_size`` bytes takes ``net(size)`` on the lowest
dimension where the two ranks differ (the point-to-point cost, no endpoint delay), a receive
completes when its message has arrived (matched by source, destination, tag and size, in
order), and a COMP node takes ``duration_micros * 1000`` ns (0: 1 ns).  The workload's
``comm_size`` is not used: the ET's messages are the collective.  Each member finishes when the
last node of its own ET does, so members can finish at different times.
"""

from __future__ import annotations

from collections import deque
from heapq import heappop, heappush

from chakra_core import TraceFormatError, custom_collective
from chakra_core.system import SystemDescription

from ..classify import MessageArgs
from ..planner import Planner
from ..program import K_COMP, K_SEND, Program, load_program

__all__ = ["CustomCollective"]


class CustomCollective:
    """The per-rank ETs of one custom collective kind (read on first use)."""

    def __init__(self, kind: str, prefix: str, sd: SystemDescription, planner: Planner):
        self.kind = kind
        self.prefix = prefix
        self.sd = sd
        self.planner = planner
        self._progs: list[Program] | None = None

    def programs(self) -> list[Program]:
        """Rank r's part, for every rank of the network, checked first as
        :func:`chakra_core.custom_collective` checks every consumer's."""
        if self._progs is None:
            traces = custom_collective(self.sd, self.kind, self.planner.total)
            self._progs = [load_program(rt, self.sd) for rt in traces]
        return self._progs

    def finish(self, issue: list[int]) -> list[int]:
        """Finish time (ns) of every rank's part, rank r having issued it at ``issue[r]``."""
        run = _Run(self, issue)
        run.run()
        left = [(k, q) for k, q in run.waiting.items() if q]
        if left:
            (src, dst, tag, size), q = left[0]
            raise TraceFormatError(f"the custom {self.kind}: rank {dst} waits for a message from rank {src} "
                                   f"(tag {tag}, {size} bytes) that its ET never sends",
                                   f"{self.prefix}.{dst}.et", f"node {run.progs[dst].ids[q[0][1]]}")
        return run.done


class _Run:
    """One run of every rank's part of a custom collective: nodes issued as soon as their
    dependencies are done, messages matched by source, destination, tag and size in order."""

    def __init__(self, coll: CustomCollective, issue: list[int]):
        self.coll = coll
        self.issue = issue
        self.progs = coll.programs()
        self.indeg = [list(p.indeg) for p in self.progs]
        self.done = list(issue)
        self.events: list[tuple[int, int, int, int]] = []  # (time, order, rank, node)
        self.order = 0
        self.sent: dict[tuple, deque] = {}  # (src, dst, tag, size) -> arrival times
        self.waiting: dict[tuple, deque] = {}  # (src, dst, tag, size) -> (rank, node, start)

    def run(self) -> None:
        """Run every part to its end (``done``: each rank's finish time)."""
        for r, prog in enumerate(self.progs):
            for i in range(len(prog)):
                if self.indeg[r][i] == 0:
                    self.start(r, i, self.issue[r])
        events = self.events
        while events:
            t, _o, r, i = heappop(events)
            self.done[r] = max(self.done[r], t)
            prog = self.progs[r]
            deg = self.indeg[r]
            for j in range(prog.child_ptr[i], prog.child_ptr[i + 1]):
                c = prog.child_idx[j]
                deg[c] -= 1
                if deg[c] == 0:
                    self.start(r, c, t)

    def start(self, r: int, i: int, now: int) -> None:
        """Issue node ``i`` of rank ``r`` at ``now``."""
        prog = self.progs[r]
        k = prog.kind[i]
        if k == K_COMP:
            self.push(now + max(prog.dur[i], 1), r, i)
        elif k == K_SEND:
            self._send(r, i, now)
        else:
            self._recv(r, i, now)

    def _send(self, r: int, i: int, now: int) -> None:
        prog = self.progs[r]
        peer, tag, size = _message(prog, i)
        end = now + self.coll.planner.p2p_cost(r, peer, size)
        key = (r, peer, tag, size)
        q = self.waiting.get(key)
        if q:
            rr, ii, t0 = q.popleft()
            self.push(max(end, t0), rr, ii)
        else:
            self.sent.setdefault(key, deque()).append(end)
        self.push(end, r, i)

    def _recv(self, r: int, i: int, now: int) -> None:
        prog = self.progs[r]
        peer, tag, size = _message(prog, i)
        key = (peer, r, tag, size)
        q = self.sent.get(key)
        if q:
            self.push(max(q.popleft(), now), r, i)
        else:
            self.waiting.setdefault(key, deque()).append((r, i, now))

    def push(self, t: int, r: int, i: int) -> None:
        """Node ``i`` of rank ``r`` ends at ``t``."""
        heappush(self.events, (t, self.order, r, i))
        self.order += 1


def _message(prog: Program, i: int) -> MessageArgs:
    args = prog.extra[i]
    assert isinstance(args, MessageArgs)
    return args
