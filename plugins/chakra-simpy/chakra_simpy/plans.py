"""Collective plans: chunks and the phases each chunk goes through, per dimension queue.

A plan is ``(chunks, phases, ring)`` where ``phases`` is a list of ``(queue, Cost, label)``;
every chunk goes through the same phases in order (ASTRA-sim gives the remainder chunk the full
chunk size too).  ``queue`` is the network dimension whose queue the phase waits in (group
rings use dimension 0's queue, as ASTRA-sim does).  ``per_phase`` lists ``(kind, bytes in,
dimension, implementation)`` per phase (dimension None: a ring over a group), from which
:mod:`perrank` (or :mod:`dbt` for doubleBinaryTree phases) times every member; None for the
one* variants.
"""

from __future__ import annotations

from collections.abc import Sequence

from chakra_core import ConfigError
from chakra_core.system import SystemDescription, algorithm_base

from .timing import (
    Cost,
    chunking,
    final_size,
    net,
    one_phase_cost,
    peer_hops,
    phase_cost,
    ring_group_cost,
)

__all__ = ["Planner", "KIND_NAME", "MAX_CHUNKS", "DBT", "dbt_visits", "uses_dbt"]

#: ASTRA-sim's name of the double binary tree all-reduce.
DBT = "doubleBinaryTree"

#: most chunks one collective may split into (each chunk phase is an event; beyond this a
#: mistyped preferred-dataset-splits would exhaust memory instead of failing).
MAX_CHUNKS = 1 << 20

KIND_NAME = {"AR": "all-reduce", "RS": "reduce-scatter", "AG": "all-gather", "A2A": "all-to-all"}
_LONG = {"AR": "all_reduce", "RS": "reduce_scatter", "AG": "all_gather", "A2A": "all_to_all"}


def dbt_visits(per_phase: Sequence | None) -> dict[int, int]:
    """Double-binary-tree phases per chunk, by dimension, of a plan's ``per_phase`` list."""
    out: dict[int, int] = {}
    for _kind, _data, d, impl in per_phase or ():
        if d is not None and algorithm_base(impl)[0] == DBT:
            out[d] = out.get(d, 0) + 1
    return out


def uses_dbt(sd: SystemDescription) -> bool:
    """Whether a world all-reduce can take a double binary tree on ``sd`` (its members then
    finish at different times)."""
    impl = sd.implementation("all_reduce")
    return any(algorithm_base(x)[0] == DBT and sd.dimensions[d].npus_count > 1
               for d, x in enumerate(impl[:len(sd.dimensions)]))


class Planner:
    """Builds (and caches) collective plans for one system description."""

    def __init__(self, sd: SystemDescription):
        self.sd = sd
        self.dims = sd.dimensions
        self.total = sd.npus
        self._cache: dict = {}
        self._coords = [sd.coords(r) for r in range(self.total)]

    def hop(self, a: int, b: int):
        """``(Dimension, hops)`` of the physical path from rank ``a`` to rank ``b``."""
        d, h = peer_hops(self.dims, self._coords[a], self._coords[b])
        return self.dims[d], h

    def p2p_cost(self, a: int, b: int, size: int) -> int:
        """ns of a message of ``size`` bytes from rank ``a`` to rank ``b`` (congestion-unaware):
        ``net(size)`` on the lowest differing dimension, no endpoint delay, no chunking."""
        d, h = peer_hops(self.dims, self._coords[a], self._coords[b])
        return net(self.dims[d], size, h)

    def one_star_phases(self, kind: str, size: int) -> list[tuple[str, int, int, str]]:
        """``per_phase`` of a one* collective of ``size`` bytes on a one-dimensional network:
        its ring over every NPU in rank order is the dimension's ring, so it is the dimension's
        algorithm (for the congestion-aware mode, which runs it message by message)."""
        _n, c = chunking(kind, size, self.sd.preferred_dataset_splits, self.total)
        return [(kind, c, 0, self.sd.implementation(_LONG[kind])[0])]

    def plan(self, kind: str, size: int, involved: tuple[bool, ...] | None,
             members: tuple[int, ...] | None) -> tuple[int, list[tuple[int, Cost, str]], tuple | None]:
        """Plan of a collective of ``kind`` (AR, RS, AG, A2A) and ``size`` bytes.

        ``members`` None: all ranks, over the network dimensions; else a ring over the members.
        """
        key = (kind, size, involved, members)
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = self._plan(kind, size, involved, members)
        return got

    def _plan(self, kind, size, involved, members):
        sd = self.sd
        n, c = chunking(kind, size, sd.preferred_dataset_splits, self.total)
        if n > MAX_CHUNKS:
            raise ConfigError(f"a {KIND_NAME[kind]} of {size} bytes splits into {n} chunks "
                              f"(preferred-dataset-splits {sd.preferred_dataset_splits}); the simpy "
                              f"backend times at most {MAX_CHUNKS} chunks per collective: lower "
                              "preferred-dataset-splits", sd.sources.get("system"),
                              "key 'preferred-dataset-splits'")
        if n == 0:
            return 0, [], None
        if members is not None:
            if len(members) < 2:
                return 0, [], None
            cost = ring_group_cost(kind, list(members), self.hop, c, sd.local_mem_bw)
            return n, [(0, cost, f"{KIND_NAME[kind]} ring over group")], [(kind, c, None, "ring")]
        impl = sd.implementation(_LONG[kind])
        ndims = min(len(impl), len(self.dims))
        active = [d for d in range(ndims) if self.dims[d].npus_count > 1
                  and (involved is None or d >= len(involved) or involved[d])]
        if not impl:
            raise ConfigError(f"no '{KIND_NAME[kind]}-implementation' in the system description",
                              sd.sources.get("system"))
        if impl[0].startswith("one"):
            if any(not x.startswith("one") for x in impl[:ndims]):
                raise ConfigError(f"'{KIND_NAME[kind]}-implementation' mixes one* and per-dimension "
                                  "algorithms; ASTRA-sim stops at the first one*", sd.sources.get("system"))
            cost = one_phase_cost(kind, impl[0], self.dims, c, sd.endpoint_delay, sd.local_mem_bw)
            return n, [(0, cost, f"{KIND_NAME[kind]} over all NPUs ({impl[0]})")], None
        steps: list[tuple[str, int]] = []
        if kind == "AR" and sd.collective_optimization == "localBWAware" and active:
            last = active[-1]
            steps = [("RS", d) for d in active if d < last] + [("AR", last)]
            steps += [("AG", d) for d in reversed(active) if d < last]
        elif kind == "AG":
            steps = [("AG", d) for d in reversed(active)]
        else:
            steps = [(kind, d) for d in active]
        if (ndims < len(self.dims) and algorithm_base(impl[ndims - 1])[0] == DBT
                and any(d == ndims - 1 for _k, d in steps)):
            raise ConfigError(f"doubleBinaryTree on the last entry of an '{KIND_NAME[kind]}-implementation' "
                              "list shorter than the network: ASTRA-sim builds that dimension's trees over "
                              "the wrong ranks and crashes; give one entry per dimension",
                              sd.sources.get("system"))
        phases = []
        rings: list = []
        data = c
        for k, d in steps:
            dim = self.dims[d]
            label = f"{KIND_NAME[k]} on dim {d} ({impl[d]})"
            if algorithm_base(impl[d])[0] == DBT and k != "AR":
                # ASTRA-sim runs a full tree all-reduce wherever the plan visits this dimension
                label = f"all-reduce on dim {d} ({impl[d]}, in place of {KIND_NAME[k]})"
                k = "AR"
            cost = phase_cost(k, impl[d], dim, data, sd.endpoint_delay, sd.local_mem_bw)
            phases.append((d, cost, label))
            rings.append((k, data, d, impl[d]))
            data = final_size(k, data, dim.npus_count)
        return (n if phases else 0), phases, rings
