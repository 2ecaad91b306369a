"""Sampling one rank class of a structural model, batch by batch (see docs/synth.md)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .emit import ClassStream, NodeBatch, Role, static_bytes
from .expand import Expansion
from .kinds import comm_type_number, node_label, type_number
from .quantiles import affine_permutations, lerp_rows
from .tables import Padded, csr, gather_rows, stat_rows

__all__ = ["class_stream", "variants", "BATCH"]

#: nodes per generated batch
BATCH = 8192


class _Sampler:
    """The arrays of one class's slots and the state of the stratified draws."""

    def __init__(self, workload: dict[str, Any], cls: dict[str, Any], counts: Sequence[int],
                 rngs: tuple[np.random.Generator, np.random.Generator], jitter: float, nkinds: int, variant: int):
        slots = cls["slots"]
        self.exp = Expansion(cls["motifs"], counts)
        self.step = int(cls["step"])
        self.kind = np.array([s["kind"] for s in slots], dtype=np.int64)
        self.knots = {name: Padded([_knots(s, name, variant) for s in slots])
                      for name in ("duration", "size", "num_ops")}
        self.exact = Padded([s.get("size_exact") for s in slots])
        self.tags = Padded([s.get("tags") for s in slots])
        stats = workload["kind_stats"]
        self.tables = {name: stat_rows(stats, nkinds, name) for name in ("duration", "size", "num_ops")}
        self.size_step = np.array([stats.get(str(k), {}).get("size_step", 1) for k in range(nkinds)],
                                  dtype=np.int64)
        inst, owner = self.exp.instances(self.step, len(slots))
        self.occ = np.maximum(inst[owner], 1)
        self.shared_rng, self.rng = rngs
        motif_a, motif_b = affine_permutations(np.maximum(inst, 1), self.shared_rng)
        self.perm_a, self.perm_b = motif_a[owner], motif_b[owner]  # one order per motif: its slots move together
        self.data = csr([s["data"] for s in slots])
        self.ctrl = csr([s["ctrl"] for s in slots])
        self.root = np.array([not s["data"] and not s["ctrl"] for s in slots], dtype=bool)
        self.seen = np.zeros(len(slots), dtype=np.int64)
        self.jitter = jitter

    def _occurrence(self, s: np.ndarray) -> np.ndarray:
        """The index of each node among its slot's occurrences so far."""
        order = np.argsort(s, kind="stable")
        ss = s[order]
        first = np.r_[0, np.flatnonzero(ss[1:] != ss[:-1]) + 1]
        start = np.repeat(first, np.diff(np.r_[first, len(ss)]))
        j = np.empty(len(s), dtype=np.int64)
        j[order] = self.seen[ss] + (np.arange(len(ss)) - start)
        self.seen += np.bincount(s, minlength=len(self.seen))
        return j

    def _number(self, name: str, s: np.ndarray, v: np.ndarray) -> np.ndarray:
        knots, table = self.knots[name], self.tables[name]
        k = self.kind[s]
        ok = knots.present()[s] & table.present()[k]
        out = np.full(len(s), -1, dtype=np.int64)
        if ok.any():
            u = lerp_rows(knots.table, knots.lengths, s[ok], v[ok])
            out[ok] = np.rint(np.maximum(lerp_rows(table.table, table.lengths, k[ok], u), 0)).astype(np.int64)
        return out

    def _size(self, s: np.ndarray, v: np.ndarray, j: np.ndarray) -> np.ndarray:
        out = self._number("size", s, v)
        step = self.size_step[self.kind[s]]
        out = np.where(out > 0, np.maximum(np.rint(out / step), 1).astype(np.int64) * step, out)
        exact = self.exact.present()[s]
        if exact.any():
            se = s[exact]
            out[exact] = self.exact.table[se, j[exact] % self.exact.lengths[se]].astype(np.int64)
        return out

    def _deps(self, csr_rows: tuple[np.ndarray, np.ndarray], s: np.ndarray, ids: np.ndarray,
              extra_owner: np.ndarray | None = None, extra: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
        owner, offs = gather_rows(csr_rows[0], csr_rows[1], s)
        dep = ids[owner] - offs
        keep = dep >= 1
        owner, dep = owner[keep], dep[keep]
        if extra_owner is not None and extra is not None and len(extra_owner):
            owner = np.concatenate([owner, extra_owner])
            dep = np.concatenate([dep, extra])
            order = np.argsort(owner, kind="stable")
            owner, dep = owner[order], dep[order]
        ptr = np.zeros(len(s) + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner, minlength=len(s)), out=ptr[1:])
        return ptr, dep

    def batch(self, s: np.ndarray, first_id: int, step_first: int, roles: np.ndarray) -> NodeBatch:
        """The nodes of slots ``s`` with ids from ``first_id`` (their step starts at ``step_first``)."""
        j = self._occurrence(s)
        c = self.occ[s]
        stratum = (self.perm_a[s] * (j % c) + self.perm_b[s]) % c
        v = (stratum + 0.5 + self.jitter * (self.rng.random(len(s)) - 0.5)) / c
        v_shared = (stratum + 0.5 + self.jitter * (self.shared_rng.random(len(s)) - 0.5)) / c
        ids = first_id + np.arange(len(s), dtype=np.int64)
        extra_owner = extra = None
        if step_first > 1:
            extra_owner = np.flatnonzero(self.root[s])
            extra = np.full(len(extra_owner), step_first - 1, dtype=np.int64)
        dptr, dids = self._deps(self.data, s, ids)
        cptr, cids = self._deps(self.ctrl, s, ids, extra_owner, extra)
        tags = self.tags.present()[s]
        tag = np.full(len(s), -1, dtype=np.int64)
        if tags.any():
            st = s[tags]
            tag[tags] = self.tags.table[st, j[tags] % self.tags.lengths[st]].astype(np.int64)
        return NodeBatch(first_id, s, self._number("duration", s, v), self._size(s, v_shared, j),
                         self._number("num_ops", s, v), tag, roles[s], dptr, dids, cptr, cids)

    def batches(self, roles: np.ndarray) -> Iterator[NodeBatch]:
        """Every node of the class, in batches of about :data:`BATCH`."""
        next_id = 1
        for _ in range(self.exp.counts[self.step]):
            step_first = next_id
            pending: list[np.ndarray] = []
            size = 0
            for arr in self.exp.body(self.step):
                pending.append(arr)
                size += len(arr)
                while size >= BATCH:
                    flat = np.concatenate(pending)
                    yield self.batch(flat[:BATCH], next_id, step_first, roles)
                    next_id += BATCH
                    pending, size = [flat[BATCH:]], len(flat) - BATCH
            if size:
                yield self.batch(np.concatenate(pending), next_id, step_first, roles)
                next_id += size


def _knots(slot: dict[str, Any], name: str, variant: int) -> list[float] | None:
    """A slot's knots of ``name`` for timing variant ``variant`` (the pooled ones when the
    class's ranks do not differ)."""
    by_rank = slot.get(name + "_by_rank")
    return by_rank[variant] if by_rank else slot.get(name)


def variants(cls: dict[str, Any]) -> int:
    """How many timing variants a class has: one per source rank when their numbers differ."""
    differ = any(k.endswith("_by_rank") for s in cls["slots"] for k in s)
    return len(cls["members"]) if differ else 1


def class_stream(model: dict[str, Any], workload: dict[str, Any], cls: dict[str, Any], counts: Sequence[int],
                 seed: np.random.SeedSequence, jitter: float, variant: int = 0) -> ClassStream:
    """The :class:`ClassStream` of one class with motif ``counts``, with the durations and
    ``num_ops`` of timing variant ``variant`` (sizes are the same in every variant: ``seed``
    draws them, ``seed`` spawned by the variant draws the rest)."""
    kinds = model["kinds"]
    roles: list[Role] = [("", None)]
    role_index: dict[Role, int] = {}
    slot_roles = []
    statics = []
    for s in cls["slots"]:
        r = s["role"]
        key: Role | None = (str(r[0]), r[1]) if r is not None else None
        slot_roles.append(0 if key is None else role_index.setdefault(key, len(roles)))
        if key is not None and len(roles) == slot_roles[-1]:
            roles.append(key)
        k = kinds[s["kind"]]
        statics.append(static_bytes(node_label(kinds, s["kind"]), type_number(k), bool(k["cpu"]),
                                    comm_type_number(k), int(s.get("root", -1))))
    role_arr = np.array(slot_roles, dtype=np.uint16)

    def batches() -> Iterator[NodeBatch]:
        own = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, variant))
        rngs = (np.random.default_rng(seed), np.random.default_rng(own))
        sampler = _Sampler(workload, cls, counts, rngs, jitter, len(kinds), variant)
        return sampler.batches(role_arr)
    return ClassStream(statics, [type_number(kinds[s["kind"]]) for s in cls["slots"]],
                       [comm_type_number(kinds[s["kind"]]) for s in cls["slots"]], roles, batches)
