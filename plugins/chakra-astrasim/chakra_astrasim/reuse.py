"""Convert each distinct rank once.

In data-parallel and generated sets most ranks hold byte-identical node messages.  A rank's
conversion depends on its own rank number only through point-to-point peers and group
membership, so a rank whose input bytes equal an earlier rank's (and that has no send/recv and
belongs to the same groups) reuses that rank's converted bytes and report counts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from chakra_core.schema import Node
from chakra_core.traceset import RankTrace

from .plan import Plan
from .report import ExportReport
from .workload import convert_rank

__all__ = ["Converted", "RankReuse"]


@dataclass
class Converted:
    """One converted rank as written: serialized nodes, collectives per group, p2p messages."""

    raw: list[bytes]
    collectives: dict[str, list[tuple[int, int, int]]]
    sends: list[tuple[int, int, int, int]]
    recvs: list[tuple[int, int, int, int]]
    delta: ExportReport


class RankReuse:
    """Converts ranks, reusing the result of an identical earlier rank (at most ``limit`` kept)."""

    def __init__(self, plan: Plan, report: ExportReport, limit: int = 16):
        self.plan = plan
        self.report = report
        self.limit = limit
        self.cache: dict[bytes, Converted] = {}
        self.reused = 0

    def convert(self, rank: int, rt: RankTrace) -> Converted:
        """The converted ``rank`` (``raw`` is empty when no node is left)."""
        raw_fn = getattr(rt, "raw", None)
        if raw_fn is not None:
            raws, nodes = list(raw_fn()), None
        else:
            nodes = list(rt.nodes())
            raws = [n.SerializeToString() for n in nodes]
        h = hashlib.blake2b(digest_size=20)
        for b in raws:
            h.update(len(b).to_bytes(5, "little"))
            h.update(b)
        key = h.digest()
        hit = self.cache.get(key)
        if hit is not None and all(rank in self.plan.members[pg] for pg in hit.collectives):
            self.report.absorb(hit.delta)
            self.reused += 1
            return hit
        if nodes is None:
            nodes = [Node.FromString(b) for b in raws]
        delta = ExportReport()
        res = convert_rank(rank, nodes, self.plan, delta, rt.label)
        out = Converted([n.SerializeToString() for n in res.nodes], res.collectives, res.sends,
                        res.recvs, delta)
        self.report.absorb(delta)
        if out.raw and not out.sends and not out.recvs and len(self.cache) < self.limit:
            self.cache[key] = out
        return out
