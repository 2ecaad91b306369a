"""Abstract execution of a whole trace set: which ranks wait on each other forever.

The model is the simulator's (``chakra-simpy``) with every computation taking no time:

- a node starts when all its dependencies have finished; nodes other than communication and
  memory ops finish at once;
- each rank has ``streams`` communication slots (the simulator's option, 1 by default as NCCL's
  one stream per communicator): of the ready collectives, sends and memory ops, the one with the
  smallest id starts when a slot is free; a send or memory op frees it at once, a collective
  holds it until it completes;
- the k-th collective a rank starts on a group is the k-th of every member, and completes when
  all members have started theirs;
- sends are eager; a receive completes once the matching send (same source, destination, tag
  and size, first in first out) has started.

Ranks left unfinished wait on other ranks; a cycle of such waits is a deadlock, a wait on a rank
that has finished is a collective or send that rank never reaches.  State is integer arrays per
rank, sized by the skeleton (:mod:`._skeleton`), not by the node count.
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass
from heapq import heappop, heappush

__all__ = ["K_COLL", "K_SEND", "K_RECV", "K_SLOT", "Skeleton", "Wait", "run_abstract"]

K_COLL, K_SEND, K_RECV, K_SLOT = range(4)


@dataclass
class Skeleton:
    """One rank's skeleton: per node its id, kind and ``(a, tag, size)`` (``a`` = peer rank, or
    the group number of a collective), and the skeleton nodes it waits for (CSR)."""

    ids: array
    kinds: bytearray
    peer_or_group: array
    tags: array
    sizes: array
    ptr: array
    preds: array


@dataclass
class Wait:
    """Rank ``rank`` is stuck at skeleton node ``index`` waiting for ``ranks``."""

    rank: int
    index: int
    ranks: list[int]
    seq: int = 0  # for a collective: which one on its group (0-based)


class _Run:
    """The state of one abstract execution."""

    def __init__(self, skels: dict[int, Skeleton], members: list[tuple[int, ...]], streams: int):
        self.skels = skels
        self.members = members
        self.indeg = {r: array("q", (s.ptr[i + 1] - s.ptr[i] for i in range(len(s.ids)))) for r, s in skels.items()}
        self.succ = {r: _successors(s) for r, s in skels.items()}
        self.done = dict.fromkeys(skels, 0)
        self.heap: dict[int, list[tuple[int, int]]] = {r: [] for r in skels}
        self.free = dict.fromkeys(skels, streams)  # free communication slots
        self.seq: dict[tuple[int, int], int] = {}
        self.arrived: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.sends: dict[tuple[int, int, int, int], deque] = {}
        self.recvs: dict[tuple[int, int, int, int], deque] = {}
        self.finished: list[tuple[int, int]] = []
        self.pump: deque[int] = deque()
        self.queued: set[int] = set()

    def start(self) -> None:
        for r, s in self.skels.items():
            ind = self.indeg[r]
            for i in range(len(s.ids)):
                if ind[i] == 0:
                    self.ready(r, i)
            self._queue(r)
        self.drain()

    def _queue(self, r: int) -> None:
        if r not in self.queued:
            self.queued.add(r)
            self.pump.append(r)

    def ready(self, r: int, i: int) -> None:
        s = self.skels[r]
        if s.kinds[i] != K_RECV:
            heappush(self.heap[r], (s.ids[i], i))
            self._queue(r)
            return
        key = (s.peer_or_group[i], r, s.tags[i], s.sizes[i])
        sent = self.sends.get(key)
        if sent:
            sent.popleft()
            self.finished.append((r, i))
        else:
            self.recvs.setdefault(key, deque()).append(i)

    def drain(self) -> None:
        while self.finished or self.pump:
            while self.finished:
                r, i = self.finished.pop()
                self.done[r] += 1
                ind = self.indeg[r]
                ptr, kids = self.succ[r]
                for c in kids[ptr[i]:ptr[i + 1]]:
                    ind[c] -= 1
                    if ind[c] == 0:
                        self.ready(r, c)
            if self.pump:
                r = self.pump.popleft()
                self.queued.discard(r)
                self.issue(r)

    def issue(self, r: int) -> None:
        s, heap = self.skels[r], self.heap[r]
        while self.free[r] > 0 and heap:
            _, i = heappop(heap)
            k = s.kinds[i]
            if k == K_COLL:
                self._arrive(r, i)
            elif k == K_SEND:
                key = (r, s.peer_or_group[i], s.tags[i], s.sizes[i])
                waiting = self.recvs.get(key)
                if waiting:
                    self.finished.append((key[1], waiting.popleft()))
                else:
                    self.sends.setdefault(key, deque()).append(i)
                self.finished.append((r, i))
            else:
                self.finished.append((r, i))
            if self.finished:
                return self._queue(r)  # finish what that released before choosing the next node

    def _arrive(self, r: int, i: int) -> None:
        g = self.skels[r].peer_or_group[i]
        k = self.seq.get((r, g), 0)
        self.seq[r, g] = k + 1
        self.free[r] -= 1
        at = self.arrived.setdefault((g, k), [])
        at.append((r, i))
        if len(at) == len(self.members[g]):
            del self.arrived[g, k]
            for rr, ii in at:
                self.free[rr] += 1
                self.finished.append((rr, ii))
                self._queue(rr)

    def waits(self) -> list[Wait]:
        """What each unfinished rank waits for: its collectives in progress and its receives."""
        out: list[Wait] = []
        for (g, k), at in self.arrived.items():
            have = {r for r, _ in at}
            missing = [m for m in self.members[g] if m not in have]
            out.extend(Wait(r, i, missing, k) for r, i in at)
        for (src, dst, _, _), q in self.recvs.items():
            out.extend(Wait(dst, i, [src]) for i in q)
        return sorted(out, key=lambda w: (w.rank, self.skels[w.rank].ids[w.index]))


def _successors(s: Skeleton) -> tuple[array, array]:
    n = len(s.ids)
    count = array("q", bytes(8 * (n + 1)))
    for p in s.preds:
        count[p + 1] += 1
    for i in range(n):
        count[i + 1] += count[i]
    fill = array("q", count[:-1])
    kids = array("q", bytes(8 * len(s.preds)))
    for i in range(n):
        for j in range(s.ptr[i], s.ptr[i + 1]):
            p = s.preds[j]
            kids[fill[p]] = i
            fill[p] += 1
    return count, kids


def run_abstract(skels: dict[int, Skeleton], members: list[tuple[int, ...]],
                 streams: int = 1) -> tuple[list[Wait], set[int]]:
    """Run the set; the waits of the ranks left unfinished, and the ranks that finished.

    ``members[g]`` are the ranks of group number ``g``; ``streams`` the communication slots
    per rank.
    """
    run = _Run(skels, members, streams)
    run.start()
    finished = {r for r, s in skels.items() if run.done[r] == len(s.ids)}
    return run.waits(), finished
