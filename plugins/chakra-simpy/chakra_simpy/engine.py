"""The discrete-event core on SimPy: node issue and completion, resources, memory, p2p.

Every timed thing is one SimPy timeout whose callback finishes it: a node, a point-to-point
message, a collective chunk phase on one dimension (see :mod:`collectives`).  Nodes that
become ready are issued in ascending id order as soon as their resource (one CPU op, ``streams``
accelerator compute ops, ``streams`` communication ops) has a free slot.  Only SimPy's public
API is used (``Environment.timeout``, ``Event.callbacks``, ``Event.value``).  The
congestion-aware mode runs on :class:`event_loop.EventLoop` instead, which runs events in SimPy's
order and lets the network and the message runs schedule calls without event objects, and leave
out the events nothing waits for (:mod:`network`).
"""

from __future__ import annotations

from collections import deque
from heapq import heappop, heappush

import numpy as np
import simpy
from simpy.events import Event

from chakra_core import ChakraError, chosen
from chakra_core.system import SystemDescription

from .actor import Actor
from .classify import MAX_NS, MemoryArgs, MessageArgs
from .collective_context import CollectiveContext, SpanSink
from .collectives import Collectives
from .compute_chains import fill_chain
from .event_loop import EventLoop, Timeout
from .member_timing import WORK_LIMIT
from .network import Network
from .planner import planner_for
from .program import K_COLL, K_MEM, K_RECV, K_SEND, R_NONE

__all__ = ["Sim"]


class Sim:
    """A simulation of ``actors`` (one per class of identical ranks) on system ``sd``.

    ``rank_actor[r]`` is the actor index standing for rank r; ``groups`` maps pg_name to its
    ranks; ``aware`` selects the congestion-aware timing; ``timeline`` a list to append
    ``(actor, tid, name, start_ns, dur_ns)`` spans to (or None), at most ``max_spans``;
    ``stagger_limit`` the most chunk x step x member evaluations of a staggered collective;
    ``replay`` times communication by the recorded durations (``-O comm=replay``) instead of
    the network; ``compile_it`` times compute chains by the compiled loop (numba), else as Python.
    """

    def __init__(self, actors: list[Actor], rank_actor: list[int], sd: SystemDescription,
                 groups: dict[str, tuple[int, ...]], aware: bool, timeline: list | None,
                 max_spans: int, stagger_limit: int = WORK_LIMIT, replay: bool = False, compile_it: bool = False):
        loop = EventLoop() if aware else None
        self.env: simpy.Environment | EventLoop = simpy.Environment() if loop is None else loop
        self.actors = actors
        self.rank_actor = rank_actor
        self.sd = sd
        self.planner = planner_for(sd)
        self.timeline = timeline
        self.max_spans = max_spans
        self.replay = replay
        #: compute chains as one event (:meth:`_run_chain`); not in the congestion-aware mode,
        #: whose link sharing depends on the order of messages starting at one instant
        self.chains = not aware
        self.fill_chain = chosen(fill_chain, compile_it)
        #: the shared links of the congestion-aware mode (:mod:`network`)
        self.network = None if loop is None else Network(loop, sd.dimensions,
                                                         [sd.coords(r) for r in range(sd.npus)])
        #: SimPy events this engine scheduled (the network and the collectives count their own)
        self.events = 0
        self.sends: dict[tuple, deque] = {}
        self.recvs: dict[tuple, deque] = {}
        self.mem_free: dict[int, int] = {}
        ctx = CollectiveContext(self.env, sd, self.planner, SpanSink(timeline, max_spans), actors, rank_actor,
                                self.network, self.end_node, stagger_limit, replay, self._on_end)
        self.coll = Collectives(ctx, groups)

    @property
    def simpy_events(self) -> int:
        """SimPy events scheduled in all: the engine's, the network's and the collectives'."""
        return self.events + self.coll.tally.events + (self.network.events if self.network else 0)

    # -- scheduling -------------------------------------------------------------------
    def after(self, a: Actor, i: int, delay: int) -> Event | Timeout:
        """End node ``i`` of actor ``a`` ``delay`` ns from now (one SimPy event, returned)."""
        ev = self.env.timeout(delay, (a, i))
        ev.callbacks.append(self._on_end)
        self.events += 1
        return ev

    def _on_end(self, ev) -> None:
        a, i = ev.value
        self.end_node(a, i)

    def run(self, start_ns: list[int] | None = None) -> None:
        """Run to the end, actor k from ``start_ns[k]`` (default 0); raise ChakraError with a
        deadlock report if ranks are left waiting."""
        for k, a in enumerate(self.actors):
            first = (a.views[4] == 0).nonzero()[0]  # ascending: each list is a heap
            res = np.frombuffer(a.prog.resource, np.uint8)[first]
            for r, heap in enumerate(a.ready):
                heap.extend(first[res == r].tolist())
            start = start_ns[k] if start_ns else 0
            if start:
                a.last_t = start
                ev = self.env.timeout(start, a)
                ev.callbacks.append(lambda ev: self.issue(ev.value))
                self.events += 1
            else:
                self.issue(a)
        self.env.run()
        if any(a.done < a.n for a in self.actors):
            raise ChakraError(self.deadlock_report())

    # -- nodes --------------------------------------------------------------------------
    def issue(self, a: Actor) -> None:
        """Start ready nodes in id order while their resource has a free slot; a compute chain
        that is then the only node of the rank in flight runs as one event (its first node's
        own event is voided)."""
        ready, free = a.ready, a.free
        for r in range(4):
            h = ready[r]
            while h and free[r] > 0:
                i = heappop(h)
                free[r] -= 1
                self.start_node(a, i)
        heads = a.chain_heads
        if heads:
            if a.inflight == 1 and len(heads) == 1:
                i, ev = heads[0]
                ev.callbacks.clear()  # its end comes with the chain's
                self.events -= 1
                self._run_chain(a, i, a.start[i])
            heads.clear()

    def start_node(self, a: Actor, i: int) -> None:
        """Start node ``i``: time it, or hand it to the collective / p2p / memory models."""
        now = int(self.env.now)
        prog = a.prog
        if now > MAX_NS:
            self._past_int64(a, i)
        a.start[i] = now
        a.inflight += 1
        rb = a.readyby[i]
        res = prog.resource[i]
        ready_t = a.end[rb] if rb >= 0 else 0
        a.why[i] = a.last_rel[res] if (now > ready_t and res != R_NONE) else rb
        cat = prog.cat[i]
        if cat != R_NONE:
            a.account(now)
            a.active[cat] += 1
        k = prog.kind[i]
        if k == K_COLL:
            self.coll.arrive(a, i)
        elif k == K_SEND:
            self._send(a, i)
        elif k == K_RECV:
            self._recv(a, i)
        elif k == K_MEM:
            self.after(a, i, self._mem_time(a, i, now))
        elif self.chains and prog.chain_next[i] >= 0:
            # may run as a chain, decided at the end of :meth:`issue`
            a.chain_heads.append((i, self.after(a, i, prog.dur[i])))
        else:
            self.after(a, i, prog.dur[i])

    def _run_chain(self, a: Actor, i: int, now: int) -> None:
        """Run the compute chain from node ``i`` as one event, filling in each node's times.

        Exact: nothing else of the rank is in flight once its ready nodes were issued, so
        nothing can make another of its nodes ready before the chain ends, and each next node of
        the chain, the only one its predecessor releases, is issued at once unless a node
        already waiting for the resource has a smaller id (the chain stops before it).
        """
        prog = a.prog
        first = prog.chain_pos[i]
        waiting = a.ready[prog.resource[i]]
        start, end, readyby, why, indeg = a.views
        last, t = self.fill_chain(start, end, readyby, why, indeg, prog.chain_seq, prog.chain_cum, first,
                                  prog.chain_end[first], waiting[0] if waiting else -1, now)
        last, t = int(last), int(t)
        if t < 0:
            self._past_int64(a, int(prog.chain_seq[last]))
        if last > first:
            a.done += last - first
            tl = self.timeline
            if tl is not None and len(tl) < self.max_spans:
                nodes = prog.chain_seq[first:last + 1]
                k = min(self.max_spans - len(tl), last - first)
                ends = end[nodes[:k]]
                starts = start[nodes[:k]]
                tl += zip([a.index] * k, [prog.cat[i]] * k, nodes[:k].tolist(), starts.tolist(),
                          (ends - starts).tolist())
        self.after(a, int(prog.chain_seq[last]), t - now)

    def _past_int64(self, a: Actor, i: int) -> None:
        raise ChakraError(f"node {a.prog.ids[i]}: simulated time passes 2**63-1 ns "
                          "(durations or system delays too large)", a.prog.label)

    def end_node(self, a: Actor, i: int) -> None:
        """Finish node ``i`` now: free its resource, release its children, issue more."""
        now = int(self.env.now)
        prog = a.prog
        if now > MAX_NS:
            self._past_int64(a, i)
        a.end[i] = now
        a.inflight -= 1
        res = prog.resource[i]
        cat = prog.cat[i]
        if cat != R_NONE:
            a.account(now)
            a.active[cat] -= 1
        if res != R_NONE:
            a.free[res] += 1
            a.last_rel[res] = i
        a.done += 1
        tl = self.timeline
        if tl is not None and len(tl) < self.max_spans:
            tl.append((a.index, cat, i, a.start[i], now - a.start[i]))
        ptr = prog.child_ptr
        kids = prog.child_idx
        indeg = a.indeg
        ready = a.ready
        pres = prog.resource
        for j in range(ptr[i], ptr[i + 1]):
            c = kids[j]
            indeg[c] -= 1
            if indeg[c] == 0:
                a.readyby[c] = i
                heappush(ready[pres[c]], c)
        self.issue(a)
        if a.done == a.n:
            a.finish = now
            a.account(now)

    # -- memory -------------------------------------------------------------------------
    def _mem_time(self, a: Actor, i: int, now: int) -> int:
        mem = self.sd.remote_memory
        if mem.memory_type == "NO_MEMORY_EXPANSION":
            return a.prog.dur[i]
        args = a.prog.extra[i]
        assert isinstance(args, MemoryArgs)
        size = args.size
        t = int(mem.remote_mem_latency + size / mem.remote_mem_bw)
        if mem.memory_type == "PER_NPU_MEMORY_EXPANSION":
            return t
        server = a.rank // mem.num_npus_per_node if mem.memory_type == "PER_NODE_MEMORY_EXPANSION" else 0
        start = max(now, self.mem_free.get(server, 0))
        self.mem_free[server] = start + t
        return start + t - now

    # -- point to point -----------------------------------------------------------------
    @staticmethod
    def _message(a: Actor, i: int) -> MessageArgs:
        args = a.prog.extra[i]
        assert isinstance(args, MessageArgs)
        return args

    def _check_peer(self, a: Actor, i: int, peer: int) -> None:
        if not 0 <= peer < len(self.rank_actor) or peer == a.rank:
            raise ChakraError(f"node {a.prog.ids[i]}: bad peer rank {peer}", a.prog.label)

    def _send(self, a: Actor, i: int) -> None:
        peer, tag, size = self._message(a, i)
        self._check_peer(a, i, peer)
        if self.replay:
            self._replay_send(a, i, (a.rank, peer, tag, size))
            return
        key = (a.rank, peer, tag, size)
        if self.network is not None:
            self.network.send(a.rank, peer, size, self._delivered, (a, i, key))
            return
        delay = self.planner.p2p_cost(a.rank, peer, size)
        self.after(a, i, delay)
        waiting = self.recvs.get(key)
        if waiting:
            ra, ri = waiting.popleft()
            self.after(ra, ri, delay)
        else:
            self.sends.setdefault(key, deque()).append(int(self.env.now) + delay)

    def _delivered(self, sent: tuple[Actor, int, tuple]) -> None:
        """A send's message reached its destination (congestion-aware mode): the send (node
        ``i`` of actor ``a``; ``sent`` = ``(a, i, key)``) ends, and the first receive waiting
        for it, else the next receive posted."""
        a, i, key = sent
        self.end_node(a, i)
        waiting = self.recvs.get(key)
        if waiting:
            ra, ri = waiting.popleft()
            self.end_node(ra, ri)
        else:
            self.sends.setdefault(key, deque()).append(int(self.env.now))

    def _recv(self, a: Actor, i: int) -> None:
        peer, tag, size = self._message(a, i)
        self._check_peer(a, i, peer)
        key = (peer, a.rank, tag, size)
        if self.replay:
            self._replay_recv(a, i, key)
            return
        sent = self.sends.get(key)
        if sent:
            arrival = sent.popleft()
            self.after(a, i, max(0, arrival - int(self.env.now)))
        else:
            self.recvs.setdefault(key, deque()).append((a, i))

    def _replay_send(self, a: Actor, i: int, key: tuple) -> None:
        """``comm=replay``: a send lasts its recorded duration (gloo sends eagerly); its receive,
        if already posted, lasts its own recorded duration from its posting, but not less than
        until now."""
        now = int(self.env.now)
        self.after(a, i, a.prog.dur[i])
        waiting = self.recvs.get(key)
        if waiting:
            b, j, t = waiting.popleft()
            self.after(b, j, max(t + b.prog.dur[j] - now, 0))
        else:
            self.sends.setdefault(key, deque()).append((a, i, now))

    def _replay_recv(self, a: Actor, i: int, key: tuple) -> None:
        """``comm=replay``: a receive lasts its recorded duration, after its send was issued."""
        sent = self.sends.get(key)
        if sent:
            sent.popleft()
            self.after(a, i, a.prog.dur[i])
        else:
            self.recvs.setdefault(key, deque()).append((a, i, int(self.env.now)))

    # -- deadlock -----------------------------------------------------------------------
    def deadlock_report(self) -> str:
        """One paragraph naming the ranks left waiting, their nodes and groups."""
        now = int(self.env.now)
        parts = []
        parts += self.coll.waiting_report()
        for key, q in self.recvs.items():
            for a, i, *_ in q:
                parts.append(f"rank {a.rank} node {a.prog.ids[i]} waits for a send from rank {key[0]} "
                             f"(tag {key[2]}, {key[3]} bytes) that never comes")
        for key, q in self.sends.items():
            if q:
                parts.append(f"{len(q)} send(s) from rank {key[0]} to rank {key[1]} (tag {key[2]}, "
                             f"{key[3]} bytes) never received")
        stuck = [a for a in self.actors if a.done < len(a.prog)]
        blocked = []
        for a in stuck[:5]:
            left = [a.prog.ids[i] for i in range(len(a.prog)) if a.indeg[i] > 0][:5]
            if left:
                nodes = f"node{'s' * (len(left) > 1)} {', '.join(map(str, left))}"
                blocked.append(f"rank {a.rank}: {nodes} never became ready")
        if not parts and blocked:
            parts.append("a dependency cycle")
        shown = parts[:6] + blocked
        more = f" (+{len(parts) - 6} more)" if len(parts) > 6 else ""
        nstuck = sum(len(a.ranks) for a in stuck)
        return f"deadlock at {now} ns: {nstuck} rank(s) cannot finish: " + "; ".join(shown) + more
