"""Turn a finished simulation into spans, and from them the Result's per-rank rows, critical
path and timeline (the core's analysis: :func:`chakra_core.breakdown`,
:func:`chakra_core.critical_path`, :func:`chakra_core.write_timeline`)."""

from __future__ import annotations

from bisect import bisect_left

import numpy as np

from chakra_core import IDLE_NAME, SPAN_KINDS, SpanBuilder, Spans, breakdown, critical_path

from .beside import both
from .engine import Sim
from .program import COMM_NAME, K_COLL, K_COMP, K_MEM, K_NOP, K_RECV, K_SEND, R_COMM, R_CPU
from .replayed import REPLAYED_BY, replayed_nodes

__all__ = ["build_spans", "rank_rows", "path_summary"]

_TRACKS = ("cpu", "compute", "comm", "other")


def _kind_codes(kind: np.ndarray, res: np.ndarray) -> np.ndarray:
    """SPAN_KINDS index of each node from the program's kind and resource."""
    code = np.full(len(kind), SPAN_KINDS.index("other"), np.uint8)
    comp = kind == K_COMP
    code[comp & (res == R_CPU)] = SPAN_KINDS.index("cpu")
    code[comp & (res != R_CPU)] = SPAN_KINDS.index("compute")
    code[comp & (res == R_COMM)] = SPAN_KINDS.index("collective")  # a broadcast replaying its duration
    for k, name in ((K_MEM, "memory"), (K_COLL, "collective"), (K_SEND, "send"), (K_RECV, "recv"),
                    (K_NOP, "other")):
        code[kind == k] = SPAN_KINDS.index(name)
    return code


#: :func:`_kind_codes` of every (kind, resource) pair of bytes, looked up by ``[kind, resource]``
_KIND_CODES = _kind_codes(np.repeat(np.arange(256, dtype=np.uint8), 256),
                          np.tile(np.arange(256, dtype=np.uint8), 256)).reshape(256, 256)


def build_spans(sim: Sim, kept: bool = True) -> Spans:
    """One span per node of every simulated rank (times in ns), with bytes, group, peer,
    algorithm and the match of collectives (by issue order per group) and of send/receive pairs
    (by order per source, destination, tag and size), and the collective chunk phases recorded
    for the timeline on per-dimension queue tracks; with ``kept`` (the spans are kept for the
    Result or a timeline) also the node names and the dependency flows across tracks, which the
    per-rank rows and the critical path do not read (:func:`path_summary` names the path's nodes)."""
    b = SpanBuilder(nranks=len(sim.rank_actor))
    tracks = [b.intern("tracks", t) for t in _TRACKS]
    matches = _Matches()
    algorithms = {(s["collective"], "" if s["group"] == "all" else s["group"]): "; ".join(s["phases"])
                  for s in sim.coll.stats.values()}
    sizes = [len(a.prog) for a in sim.actors]
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64).tolist()
    cols = _empty_columns(offsets[-1])
    cols["rank"] = np.array([a.rank for a in sim.actors], np.int64).repeat(sizes)
    bounds = list(zip(sim.actors, offsets[:-1], offsets[1:]))
    both(lambda: _time_columns(cols, bounds, np.asarray(tracks, np.int32)),
         lambda: _fill_rest(b, bounds, cols, kept, matches, algorithms, sim.replay), offsets[-1])
    if offsets[-1]:
        b.extend(cols)
    if kept:
        _dependency_flows(b, sim, offsets)
    _queue_phases(b, sim)
    return b.build()


def _fill_rest(b: SpanBuilder, bounds: list[tuple], cols: dict[str, np.ndarray], names: bool, matches: _Matches,
               algorithms: dict, replay: bool) -> None:
    """Fill the names, communication columns and stand-for ranks of every actor's rows (with
    ``replay``, ``comm=replay``, every communication span replayed its recorded duration)."""
    for a, lo, hi in bounds:
        prog = a.prog
        if len(a.ranks) > 1:
            b.ranks_of[a.rank] = list(a.ranks)
        if lo == hi:
            continue
        at = {k: v[lo:hi] for k, v in cols.items()}
        if names:
            at["name"][:] = _names_of(b, prog)
        else:  # the recorded idle gaps keep their name: the per-rank rows count them as idle
            at["name"][:] = b.intern("names", "")
            at["name"][prog.named(IDLE_NAME)] = b.intern("names", IDLE_NAME)
        _comm_columns(b, a, np.frombuffer(a.start, np.int64), matches, algorithms, at)
        if replay:
            at["replayed"][np.isin(np.frombuffer(prog.kind, np.uint8), (K_COLL, K_SEND, K_RECV))] = 1


def _time_columns(cols: dict[str, np.ndarray], bounds: list[tuple], track_of: np.ndarray) -> None:
    """Fill ``start_ns``, ``dur_ns``, ``track``, ``kind`` and ``node_id`` of every actor's
    rows (``bounds``: actor, first row, end row)."""
    for a, lo, hi in bounds:
        prog = a.prog
        start = np.frombuffer(a.start, np.int64)
        cols["start_ns"][lo:hi] = start
        np.subtract(np.frombuffer(a.end, np.int64), start, out=cols["dur_ns"][lo:hi])
        cols["track"][lo:hi] = track_of[np.frombuffer(prog.cat, np.uint8)]
        cols["kind"][lo:hi] = _KIND_CODES[np.frombuffer(prog.kind, np.uint8), np.frombuffer(prog.resource, np.uint8)]
        cols["node_id"][lo:hi] = np.frombuffer(prog.ids, np.uint64)


def _names_of(b: SpanBuilder, prog) -> np.ndarray:
    """The interned name of every node of ``prog`` ("node ID" for a node without one)."""
    names = prog.names(np.arange(len(prog)))
    return np.asarray([b.intern("names", nm or f"node {i}") for nm, i in zip(names, prog.ids)], np.int32)


def _empty_columns(n: int) -> dict[str, np.ndarray]:
    """The span columns of ``n`` spans: communication columns at their defaults (0 bytes, -1),
    the others to be filled."""
    return {"start_ns": np.empty(n, np.int64), "dur_ns": np.empty(n, np.int64), "track": np.empty(n, np.int32),
            "kind": np.empty(n, np.uint8), "node_id": np.empty(n, np.int64), "name": np.empty(n, np.int32),
            "bytes": np.zeros(n, np.int64), "group": np.full(n, -1, np.int32), "algorithm": np.full(n, -1, np.int32),
            "peer": np.full(n, -1, np.int64), "match": np.full(n, -1, np.int64),
            "comm_type": np.full(n, -1, np.int64), "replayed": np.zeros(n, np.uint8)}


class _Matches:
    """Match numbers shared by all actors: a collective's by group and issue order, a
    send/receive pair's by source, destination, tag, size and order."""

    def __init__(self) -> None:
        self.count = 0
        self.coll: dict[str, np.ndarray] = {}
        self.p2p: dict[tuple, int] = {}

    def collectives(self, pg: str, n: int) -> np.ndarray:
        """The match numbers of the first ``n`` collectives of group ``pg``."""
        have = self.coll.get(pg, np.empty(0, np.int64))
        if n > len(have):
            more = np.arange(self.count, self.count + n - len(have))
            self.count += len(more)
            have = self.coll[pg] = np.concatenate((have, more))
        return have[:n]

    def pair(self, key: tuple) -> int:
        """The match number of the send/receive pair ``key``."""
        m = self.p2p.get(key)
        if m is None:
            m = self.p2p[key] = self.count
            self.count += 1
        return m


def _comm_columns(b: SpanBuilder, a, start: np.ndarray, matches: _Matches,
                  algorithms: dict[tuple[str, str], str], cols: dict[str, np.ndarray]) -> None:
    """Fill the communication columns (``cols``: the actor's rows) of the actor's collectives,
    sends, receives and memory operations."""
    extra = a.prog.extra
    if not extra:
        return
    nodes = np.fromiter(extra, np.int64, len(extra))
    nodes = nodes[np.lexsort((nodes, start[nodes]))]  # issue order
    kind = np.frombuffer(a.prog.kind, np.uint8)[nodes]
    mem = nodes[kind == K_MEM].tolist()
    cols["bytes"][mem] = [extra[i].size for i in mem]
    coll = nodes[kind == K_COLL]
    if len(coll):
        _coll_columns(b, coll, [extra[i] for i in coll.tolist()], matches, algorithms, cols)
    _replayed_columns(b, replayed_nodes(a.prog), extra, cols)
    seq: dict[tuple, int] = {}
    for i in nodes[(kind == K_SEND) | (kind == K_RECV)].tolist():
        other, tag, nbytes = extra[i]
        k = a.prog.kind[i]
        wire = ("p2p", *((a.rank, other) if k == K_SEND else (other, a.rank)), tag, nbytes, k)
        n = seq[wire] = seq.get(wire, -1) + 1
        cols["bytes"][i] = nbytes
        cols["peer"][i] = other
        cols["match"][i] = matches.pair((*wire[:-1], n))


def _coll_columns(b: SpanBuilder, coll: np.ndarray, extra: list[tuple], matches: _Matches,
                  algorithms: dict[tuple[str, str], str], cols: dict[str, np.ndarray]) -> None:
    """The columns of collectives ``coll`` (in issue order; ``extra``: their comm type, bytes,
    group and invocation): the k-th of a group is match ``matches.collectives(group, ..)[k]``."""
    comm_types, sizes, groups = list(zip(*extra))[:3]
    ct = np.array(comm_types, np.int64)
    cols["comm_type"][coll] = ct
    cols["bytes"][coll] = np.array(sizes, np.int64)
    table: dict[str, int] = {}
    code = np.array([table.setdefault(pg, len(table)) for pg in groups], np.int64)
    for pg, c in table.items():
        sel = coll[code == c]
        cols["match"][sel] = matches.collectives(pg, len(sel))
        cols["group"][sel] = b.intern("strings", pg or "all")
    names = list(table)
    for c, t in sorted(set(zip(code.tolist(), ct.tolist()))):
        algo = algorithms.get((COMM_NAME[t], names[c]))
        if algo:
            cols["algorithm"][coll[(code == c) & (ct == t)]] = b.intern("strings", algo)


def _replayed_columns(b: SpanBuilder, nodes: np.ndarray, extra: dict, cols: dict[str, np.ndarray]) -> None:
    """The columns of collectives ``nodes`` that replayed their recorded duration
    (:mod:`.replayed`): comm type, bytes and group as any collective's, algorithm
    :data:`.replayed.REPLAYED_BY`, ``replayed`` 1, and no match (no member waits for another)."""
    if not len(nodes):
        return
    args = [extra[i] for i in nodes.tolist()]
    cols["comm_type"][nodes] = [x.comm_type for x in args]
    cols["bytes"][nodes] = [x.size for x in args]
    cols["group"][nodes] = [b.intern("strings", x.pg or "all") for x in args]
    cols["algorithm"][nodes] = b.intern("strings", REPLAYED_BY)
    cols["replayed"][nodes] = 1


def _dependency_flows(b: SpanBuilder, sim: Sim, offsets: list[int]) -> None:
    """A flow for every dependency between nodes on different tracks of a rank."""
    for a, base in zip(sim.actors, offsets):
        prog = a.prog
        if not len(prog):
            continue
        ptr = np.frombuffer(prog.child_ptr, np.int64)
        kids = np.frombuffer(prog.child_idx, np.int64)
        parent = np.repeat(np.arange(len(prog)), np.diff(ptr))
        cat = np.frombuffer(bytes(prog.cat), np.uint8)
        cross = cat[parent] != cat[kids]
        b.flows(parent[cross] + base, kids[cross] + base, "dependency")


def _queue_phases(b: SpanBuilder, sim: Sim) -> None:
    """Collective chunk phases the engine recorded (its timeline list) on per-dimension queues."""
    for ai, tid, what, start, dur in sim.timeline or []:
        if tid < 10:
            continue
        label, chunk, key = what
        b.add(sim.actors[ai].rank, f"dim {tid - 10} queue", start, dur, f"{label} chunk {chunk}", "phase",
              group=key[0] or "all")


def rank_rows(spans: Spans, actors) -> list[dict]:
    """One dict per rank (ns): the core's breakdown (``compute_ns`` is CPU and accelerator
    compute; the four parts sum to ``finish_ns``) plus ``nodes``; a rank without nodes finishes at 0."""
    rows = {row["rank"]: row for row in breakdown(spans, [r for a in actors for r in a.ranks])}
    for a in actors:
        for r in a.ranks:
            rows[r]["nodes"] = len(a.prog)
            if not rows[r]["ops"]:
                rows[r]["simulated_as"] = a.rank
    return [rows[r] for r in sorted(rows)]


def path_summary(spans: Spans, sim: Sim, limit: int, named: bool) -> dict:
    """The core's cross-rank critical path as JSON; without ``named`` spans, the names of the
    nodes on the path are taken from the programs first."""
    cp = critical_path(spans)
    if not named:
        on_path = sorted(set(cp.span.tolist()) - {-1})
        table = {name: k for k, name in enumerate(spans.names)}
        codes = []
        for name in _names_on(spans, sim, on_path):
            k = table.get(name)
            if k is None:
                k = table[name] = len(spans.names)
                spans.names.append(name)
            codes.append(k)
        spans.name[on_path] = codes
    return cp.to_dict(spans, limit)


def _names_on(spans: Spans, sim: Sim, at: list[int]) -> list[str]:
    """The names of the spans at ``at`` (ascending; build_spans' order: actor after actor,
    every node of each, then spans of no node) from the programs ("node ID" for none)."""
    out: list[str] = []
    lo = base = 0
    for a in sim.actors:
        end = base + len(a.prog)
        hi = bisect_left(at, end, lo)
        if hi > lo:
            names = a.prog.names(np.asarray(at[lo:hi], np.int64) - base)
            out += [nm or f"node {i}" for nm, i in zip(names, spans.node_id[at[lo:hi]].tolist())]
        lo, base = hi, end
    if lo < len(at):
        out += [f"node {i}" for i in spans.node_id[at[lo:]].tolist()]
    return out
