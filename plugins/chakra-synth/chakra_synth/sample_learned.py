"""Sampling one rank class of a ``learned`` model (see docs/synth.md, The learned model).

Each step expands the block grammar with the requested counts.  Communication slots give one
node each (kind, group or peer; sizes in the fitted order, cycled when the slot repeats more
often than in the source).  Each instance of a computation segment is drawn
anew: an operator count around the fitted one, op classes (kind and duration magnitude) from the
segment's second-order chain (first-order where it has no row) mixed
with its kind mix (weight ``level``), durations from each class's log-normal fit in the segment
(its sigma widened by the level), rescaled to the segment's total: the fitted total times its
share of its serial stretch (the segments between two communication nodes that form one chain
keep their summed time, :meth:`_Sampler._groups`) and a small noise factor.  Communication
durations, which the simulators model from bytes (but a broadcast's), vary around their slot's
mean in pairs that keep its time.
Dependencies follow the fitted offsets (of the slot's occurrence where they differ) through a
map from source positions to drawn nodes (a
drawn node that stands for no source node depends on the one before), so every dependency
names an earlier node.  Structure (counts, kinds, sizes) comes from one random stream per class,
timing from one per timing variant and renaming, so the variants of a class communicate alike.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from chakra_core import CommType

from .emit import ClassStream, NodeBatch, Role, static_bytes
from .expand import Expansion
from .kinds import comm_type_number, node_label, type_number
from .quantiles import lerp_rows
from .tables import Padded, stat_rows

__all__ = ["learned_stream", "learned_variants", "Noise"]

BATCH = 8192
#: the share of a step's computation time that its shortest segments, drawn freely, may hold
SMALL = 0.005


class Noise:
    """The spreads a privacy ``level`` (0 to 1) sets: ``mix`` (weight of the kind mix against
    the chain), ``length`` (log-normal sigma of a segment's operator count), ``duration``
    (log-normal sigma of one computation's duration before its segment is rescaled), ``total``
    (normal sigma of a segment's total, relative), ``share`` (log-normal sigma of a segment's
    share of the time of the segments between the same two communication nodes), ``comm``
    (the spread of a replayed communication node's duration around its slot's mean: a
    broadcast, whose recorded duration the simulators replay) and ``comm_free`` (the same for
    every other communication node, whose time the simulators model from its bytes).  A
    communication slot's occurrences are drawn in pairs, ``1 + tanh(u)`` and ``1 - tanh(u)``
    times the mean with ``u`` uniform within the spread, so each pair keeps the slot's time."""

    def __init__(self, level: float):
        self.mix = level
        self.length = 0.3 * level
        self.duration = 0.1 + 1.0 * level
        self.total = 0.03 * level
        self.share = 4.0 * min(level, 0.5) ** 0.5
        self.comm = 0.02 + 0.05 * level
        self.comm_free = 0.1 + 2.0 * level ** 0.5


class _Segments:
    """A class's segments as arrays: lengths, chains, mixes and totals of one variant."""

    def __init__(self, segs: Sequence[dict[str, Any]], variant: int):
        self.length = np.array([s["length"] for s in segs], dtype=np.int64)
        self.first = [_op(s["first"]) for s in segs]
        self.total = np.array([s["total_by_rank"][variant] if "total_by_rank" in s else s["total"] for s in segs],
                              dtype=np.float64)
        self.times = [{_op(k): (float(v[0]), float(v[1])) for k, v in s["times"].items()} for s in segs]
        self.mix_kinds = [[_op(k) for k in s["mix"]] for s in segs]
        self.mix_c = [_cumulative(s["mix"].values()) for s in segs]
        self.next = [{_op(a): ([_op(b) for b in row], _cumulative(row.values())) for a, row in s["next"].items()}
                     for s in segs]
        self.next2 = [{tuple(_op(x) for x in ab.split(",")): ([_op(c) for c in row], _cumulative(row.values()))
                       for ab, row in s["next2"].items()} for s in segs]


def _op(key: str) -> tuple[int, int]:
    """An op class ``"KIND.MAGNITUDE"`` as ``(kind, magnitude)``."""
    kind, _, magnitude = key.partition(".")
    return int(kind), int(magnitude)


def _cumulative(counts) -> list[float]:
    """Cumulative probabilities of ``counts``, for bisection."""
    c = np.cumsum(np.asarray(list(counts), dtype=np.float64))
    return (c / c[-1]).tolist()


class _Step:
    """One step being drawn: the source positions (slots), the drawn node each position maps to
    (``where``; a position with none maps to the node before) and the nodes."""

    def __init__(self, seq: list[int], first_id: int):
        self.seq, self.first_id = seq, first_id
        self.where = [-1] * len(seq)
        self.nodes: list[tuple] = []

    def add(self, position: int, node: tuple) -> None:
        """Append ``node``, drawn for source ``position``."""
        self.where[position] = len(self.nodes)
        self.nodes.append(node)

    def skip(self, start: int, stop: int) -> None:
        """Source positions ``start..stop-1`` drew no node: they map to the last node."""
        for p in range(start, stop):
            self.where[p] = len(self.nodes) - 1

    def targets(self, p: int, offsets: list[int]) -> list[int]:
        """Absolute ids of the nodes standing for ``p - offset`` (the previous step's last node
        for positions before this step)."""
        out = {self.first_id + self.where[p - o] if p - o >= 0 else self.first_id - 1 for o in offsets}
        return sorted(d for d in out if d >= 1)


class _Sampler:
    """The state of one class's draws; :meth:`batches` yields its nodes."""

    def __init__(self, model: dict[str, Any], w: dict[str, Any], cls: dict[str, Any], counts: Sequence[int],
                 rngs: tuple[np.random.Generator, np.random.Generator], noise: Noise, variant: int,
                 statics: tuple[np.ndarray, np.ndarray]):
        self.exp = Expansion(cls["motifs"], counts)
        self.step = int(cls["step"])
        slots = cls["slots"]
        nkinds = len(model["kinds"])
        self.segment = np.array([s.get("segment", -1) for s in slots], dtype=np.int64)
        self.segs = _Segments(cls["segments"], variant)
        self.data = [s.get("data_seq") or [s["data"]] for s in slots]
        self.ctrl = [s.get("ctrl_seq") or [s["ctrl"]] for s in slots]
        self.offsets = [sorted({o for rows in (d, c) for r in rows for o in r}) for d, c in zip(self.data, self.ctrl)]
        self.comm_mean = [s["mean_us_by_rank"][variant] if "mean_us_by_rank" in s else s.get("mean_us", 0.0)
                          for s in slots]
        replayed = {k for k, kind in enumerate(model["kinds"]) if comm_type_number(kind) == CommType.BROADCAST}
        self.comm_sigma = [noise.comm if s.get("kind") in replayed else noise.comm_free for s in slots]
        stats = w["kind_stats"]
        self.tables = {name: stat_rows(stats, nkinds, name) for name in ("duration", "size", "num_ops")}
        self.size_step = np.array([stats.get(str(k), {}).get("size_step", 1) for k in range(nkinds)],
                                  dtype=np.int64)
        self.exact = Padded([s.get("size_exact") for s in slots])
        self.tags = Padded([s.get("tags") for s in slots])
        self.seen = np.zeros(len(slots), dtype=np.int64)
        self.paired = np.zeros(len(slots), dtype=np.float64)
        self.struct_rng, self.time_rng = rngs
        self.noise = noise
        self.static_of_slot, self.role_of_slot = statics

    def _table(self, name: str, kinds: np.ndarray, u: np.ndarray) -> np.ndarray:
        t = self.tables[name]
        out = np.full(len(kinds), -1, dtype=np.int64)
        ok = t.present()[kinds]
        if ok.any():
            out[ok] = np.rint(np.maximum(lerp_rows(t.table, t.lengths, kinds[ok], u[ok]), 0)).astype(np.int64)
        return out

    def _durations(self, seg: int, ops: list[tuple[int, int]]) -> np.ndarray:
        """Per op class, its log-normal fit in the segment with the level's sigma added."""
        fits = self.segs.times[seg]
        mean = np.array([fits[o][0] for o in ops], dtype=np.float64)
        sigma = np.array([fits[o][1] for o in ops], dtype=np.float64)
        rng = self.time_rng
        sd = np.sqrt(sigma ** 2 + self.noise.duration ** 2)
        return mean * np.exp(rng.normal(0.0, 1.0, len(ops)) * sd - sd ** 2 / 2)

    def _kinds(self, seg: int, n: int) -> list[tuple[int, int]]:
        rng, segs, lam = self.struct_rng, self.segs, self.noise.mix
        mk, mc = segs.mix_kinds[seg], segs.mix_c[seg]
        draws = rng.random(2 * n).tolist()
        prev = segs.first[seg] if draws[0] >= lam else mk[min(bisect_right(mc, draws[1]), len(mk) - 1)]
        out = [prev]
        chain, chain2 = segs.next[seg], segs.next2[seg]
        for k in range(1, n):
            row = chain2.get((out[-2], prev)) if k > 1 else None
            row = row or chain.get(prev)
            ks, cs = (mk, mc) if row is None or draws[2 * k] < lam else row
            prev = ks[min(bisect_right(cs, draws[2 * k + 1]), len(ks) - 1)]
            out.append(prev)
        return out

    def _segment(self, seg: int, share: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One drawn instance of segment ``seg`` whose total is ``share`` times the fitted one:
        kinds, durations, sizes, num_ops."""
        n0 = int(self.segs.length[seg])
        sd = self.noise.length
        n = max(1, int(round(n0 * float(np.exp(self.struct_rng.normal(0.0, sd) - sd ** 2 / 2))))) if sd > 0 else n0
        classes = self._kinds(seg, n)
        kinds = np.array([k for k, _m in classes], dtype=np.int64)
        u = self.struct_rng.random(n)
        size = self._table("size", kinds, u)
        step = self.size_step[kinds]
        size = np.where(size > 0, np.maximum(np.rint(size / step), 1).astype(np.int64) * step, size)
        ops = self._table("num_ops", kinds, u)
        raw = self._durations(seg, classes)
        total = self.segs.total[seg] * share * max(0.0, 1.0 + self.time_rng.normal(0.0, self.noise.total))
        return kinds, _rescale(raw, total), size, ops

    def _comm(self, s: int) -> tuple[int, int, int]:
        """Duration, size and tag of the next node of communication slot ``s``."""
        j = int(self.seen[s])
        if j % 2 == 0:
            self.paired[s] = float(np.tanh(self.time_rng.uniform(-1.0, 1.0) * self.comm_sigma[s]))
        dur = int(np.rint(self.comm_mean[s] * (1.0 + self.paired[s] * (1 if j % 2 == 0 else -1))))
        size = int(self.exact.table[s, j % self.exact.lengths[s]]) if self.exact.lengths[s] else -1
        tag = int(self.tags.table[s, j % self.tags.lengths[s]]) if self.tags.lengths[s] else -1
        return dur, size, tag

    def _step(self, first_id: int) -> list[tuple]:
        """The nodes of one step: ``(static, role, duration, size, num_ops, tag, data, ctrl)``
        with absolute dependency ids."""
        seq = np.concatenate(list(self.exp.body(self.step)) or [np.zeros(0, dtype=np.int64)]).tolist()
        st = _Step(seq, first_id)
        shares = iter(self._shares(seq))
        i = 0
        while i < len(seq):
            s = seq[i]
            seg = int(self.segment[s])
            if seg < 0:
                dur, size, tag = self._comm(s)
                data, ctrl = self._deps(st, i)
                st.add(i, (int(self.static_of_slot[s]), int(self.role_of_slot[s]), dur, size, -1, tag, data, ctrl))
                self.seen[s] += 1
                i += 1
            else:
                i += self._segment_nodes(st, i, seg, next(shares))
        return st.nodes

    def _shares(self, seq: list[int]) -> list[float]:
        """Per segment instance of a step, in order, the factor on its fitted total: log-normal
        draws rescaled so that each group of segments keeps its summed total (module docstring).
        The shortest segments, together at most :data:`SMALL` of the step's computation time,
        are drawn freely: a factor uniform in ``1 +- min(1, share)`` (where the step is a chain,
        they move it by at most that share)."""
        groups = self._groups(seq)
        sd = self.noise.share
        fitted = [self.segs.total[g] for g in groups]
        draws = [np.exp(self.time_rng.normal(0.0, sd, len(g))) if sd > 0 else np.ones(len(g)) for g in groups]
        flat = np.concatenate(fitted) if fitted else np.zeros(0)
        order = np.argsort(flat, kind="stable")
        free = np.zeros(len(flat), dtype=bool)
        free[order] = np.cumsum(flat[order]) <= SMALL * float(flat.sum())
        out: list[float] = []
        for t, f in zip(fitted, draws):
            drawn = float((f * t).sum())
            shares = f * (float(t.sum()) / drawn) if drawn > 0 else np.ones(len(t))
            own = free[len(out):len(out) + len(t)]
            spread = 1.0 + min(sd, 1.0) * (2.0 * self.time_rng.random(len(t)) - 1.0)
            out += np.where(own, spread, shares).tolist()
        return out

    def _groups(self, seq: list[int]) -> list[list[int]]:
        """The segment instances of a step in serial stretches between two communication nodes.
        A node *waits* on a dependency that is not already an ancestor of the node before it
        (through the chain of nodes that each depend on the one before); a segment whose first
        node waits or does not depend on the node before starts a stretch, and so does one after
        a node that a later node waits on, so time moves only where nothing else starts or ends
        on it."""
        chain = np.zeros(len(seq), dtype=np.int64)
        cut = np.zeros(len(seq) + 1, dtype=bool)
        for q, s in enumerate(seq):
            offsets = self.offsets[s]
            serial = q > 0 and 1 in offsets
            chain[q] = chain[q - 1] if serial else q
            waits = [q - o for o in offsets if o > 1 and q - o < chain[q]]
            cut[q] |= not serial or bool(waits)
            for t in waits:
                cut[max(t, -1) + 1] = True
        groups: list[list[int]] = []
        prev = -1
        i = 0
        while i < len(seq):
            seg = int(self.segment[seq[i]])
            if seg < 0:
                prev = -1
                i += 1
                continue
            if prev < 0 or cut[prev + 1:i + 1].any():
                groups.append([])
            groups[-1].append(seg)
            prev = i
            i += int(self.segs.length[seg])
        return groups

    def _deps(self, st: _Step, p: int) -> tuple[list[int], list[int]]:
        """Data and control dependencies of the node drawn for source position ``p`` (its slot's
        offsets for this occurrence; the previous step's last node for a root)."""
        s = st.seq[p]
        j = int(self.seen[s])
        data, ctrl = (st.targets(p, rows[j % len(rows)]) for rows in (self.data[s], self.ctrl[s]))
        if not data and not ctrl and st.first_id > 1:
            ctrl = [st.first_id - 1]
        return data, ctrl

    def _segment_nodes(self, st: _Step, i: int, seg: int, share: float) -> int:
        """Draw one instance of segment ``seg`` at source position ``i`` (its total times
        ``share``); return its source length."""
        n0 = int(self.segs.length[seg])
        kinds, durs, sizes, ops = self._segment(seg, share)
        n = len(kinds)
        last_o = -1
        for k in range(n):
            o = k * n0 // n
            if o != last_o:
                st.skip(i + last_o + 1, i + o)
                data, ctrl = self._deps(st, i + o)
                last_o = o
            else:
                data, ctrl = [st.first_id + len(st.nodes) - 1], []
            st.add(i + o, (int(kinds[k]), 0, int(durs[k]), int(sizes[k]), int(ops[k]), -1, data, ctrl))
        st.skip(i + last_o + 1, i + n0)
        self.seen[st.seq[i:i + n0]] += 1
        return n0

    def batches(self) -> Iterator[NodeBatch]:
        """Every node of the class, in batches of about :data:`BATCH`."""
        produced = 0
        pending: list[tuple] = []
        pending_first = 1
        for _ in range(self.exp.counts[self.step]):
            nodes = self._step(produced + 1)
            produced += len(nodes)
            pending += nodes
            while len(pending) >= BATCH:
                yield _batch(pending[:BATCH], pending_first)
                pending = pending[BATCH:]
                pending_first += BATCH
        if pending:
            yield _batch(pending, pending_first)


def _rescale(raw: np.ndarray, total: float) -> np.ndarray:
    """``raw`` scaled to sum to ``total``, rounded to integers that keep the rounded sum."""
    s = float(raw.sum())
    x = raw * (total / s) if s > 0 else np.full(len(raw), total / len(raw))
    out = np.floor(x).astype(np.int64)
    left = int(round(total)) - int(out.sum())
    if left > 0:
        out[np.argsort(out - x)[:left]] += 1
    return out


def _batch(nodes: list[tuple], first_id: int) -> NodeBatch:
    cols = list(zip(*nodes))
    arrays = [np.array(c, dtype=np.int64) for c in cols[:6]]
    dptr = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in cols[6]], out=dptr[1:])
    cptr = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in cols[7]], out=cptr[1:])
    dids = np.fromiter((d for row in cols[6] for d in row), dtype=np.int64, count=int(dptr[-1]))
    cids = np.fromiter((c for row in cols[7] for c in row), dtype=np.int64, count=int(cptr[-1]))
    static, role, dur, size, ops, tag = arrays
    return NodeBatch(first_id, static, dur, size, ops, tag, role.astype(np.uint16), dptr, dids, cptr, cids)


def learned_variants(cls: dict[str, Any]) -> int:
    """Timing variants of a class: one per source rank when its segment totals or communication
    durations differ by rank."""
    differ = any("total_by_rank" in s for s in cls["segments"]) or any("mean_us_by_rank" in s for s in cls["slots"])
    return len(cls["members"]) if differ else 1


def learned_stream(model: dict[str, Any], w: dict[str, Any], cls: dict[str, Any], counts: Sequence[int],
                   seed: np.random.SeedSequence, noise: Noise, variant: int = 0, position: int = 0) -> ClassStream:
    """The :class:`ClassStream` of one class: statics are the kinds (computation) followed by one
    per communication slot (its root), roles those of the communication slots.  Structure comes
    from ``seed`` (alike for every tile position of the class), timing from ``seed``, the
    ``variant`` and the ``position`` (the n-th group of tile positions of the class)."""
    kinds = model["kinds"]
    statics = [static_bytes(node_label(kinds, k), type_number(kinds[k]), bool(kinds[k]["cpu"]),
                            comm_type_number(kinds[k]), -1) for k in range(len(kinds))]
    types = [type_number(k) for k in kinds]
    comm_types = [comm_type_number(k) for k in kinds]
    roles: list[Role] = [("", None)]
    role_index: dict[Role, int] = {}
    static_of_slot, role_of_slot = [], []
    for s in cls["slots"]:
        if "segment" in s:
            static_of_slot.append(-1)
            role_of_slot.append(0)
            continue
        k = int(s["kind"])
        static_of_slot.append(len(statics))
        statics.append(static_bytes(node_label(kinds, k), types[k], bool(kinds[k]["cpu"]), comm_types[k],
                                    int(s.get("root", -1))))
        types.append(types[k])
        comm_types.append(comm_types[k])
        key: Role = (str(s["role"][0]), s["role"][1])
        if key not in role_index:
            role_index[key] = len(roles)
            roles.append(key)
        role_of_slot.append(role_index[key])
    arrays = (np.array(static_of_slot, dtype=np.int64), np.array(role_of_slot, dtype=np.int64))

    def batches() -> Iterator[NodeBatch]:
        key = (*seed.spawn_key, variant, *([position] if position else []))
        own = np.random.SeedSequence(seed.entropy, spawn_key=key)
        rngs = (np.random.default_rng(seed), np.random.default_rng(own))
        return _Sampler(model, w, cls, counts, rngs, noise, variant, arrays).batches()
    return ClassStream(statics, types, comm_types, roles, batches)
