"""Per-rank (or per class of identical ranks) simulation state and time accounting."""

from __future__ import annotations

from array import array

import numpy as np

from .program import R_COMM, R_CPU, Program

__all__ = ["Actor"]


class Actor:
    """One simulated rank standing for ``ranks`` (its class of identical ranks).

    Holds the working copy of in-degrees, per-resource ready heaps (node index = id order) and
    free slots, the number of nodes in flight, per-node start/end times and the predecessor that made each node start
    (``why``: a dependency or the node that freed the resource), and accumulates busy time:
    ``cpu_ns``, ``compute_ns`` (accelerator compute), ``comm_ns`` (any communication or memory
    op in flight), ``overlap_ns`` (compute and communication at once) and ``busy_ns``.
    """

    __slots__ = ("index", "prog", "rank", "ranks", "indeg", "ready", "free", "start", "end",
                 "why", "readyby", "last_rel", "done", "finish", "seq", "last_t", "active",
                 "cpu_ns", "compute_ns", "comm_ns", "overlap_ns", "busy_ns", "n", "inflight",
                 "chain_heads", "views", "streams")

    def __init__(self, index: int, prog: Program, ranks: list[int], streams: int):
        n = len(prog)
        self.index = index
        self.prog = prog
        self.rank = prog.rank
        self.ranks = ranks
        self.indeg = array("l", prog.indeg)
        self.ready: list[list[int]] = [[], [], [], []]
        self.free = [1, streams, streams, 1 << 30]
        #: compute and communication ops in flight at most
        self.streams = streams
        self.start = array("q", bytes(8 * n))
        self.end = array("q", bytes(8 * n))
        self.why = array("l", [-1]) * n
        self.readyby = array("l", [-1]) * n
        self.last_rel = [-1, -1, -1, -1]
        self.done = 0
        self.finish = 0
        self.seq: dict[str, int] = {}
        self.last_t = 0
        self.active = [0, 0, 0, 0]  # cpu, compute, comm, none
        self.cpu_ns = self.compute_ns = self.comm_ns = self.overlap_ns = self.busy_ns = 0
        self.n = n
        self.inflight = 0
        self.chain_heads: list[tuple] = []
        #: numpy views of start, end, readyby, why and indeg (for whole chains at once)
        self.views = tuple(np.frombuffer(x, np.int64) for x in (self.start, self.end, self.readyby, self.why,
                                                                 self.indeg))

    def account(self, now: int) -> None:
        """Add the time since the last change to the busy counters."""
        dt = now - self.last_t
        if dt:
            act = self.active
            cpu, comp, comm = act[R_CPU], act[1], act[R_COMM]
            if comp:
                self.compute_ns += dt
                if comm:
                    self.overlap_ns += dt
            if comm:
                self.comm_ns += dt
            if cpu:
                self.cpu_ns += dt
            if cpu or comp or comm:
                self.busy_ns += dt
            self.last_t = now
