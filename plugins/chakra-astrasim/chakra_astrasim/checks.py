"""Cross-rank checks the exporter cannot fix, reported as warnings: collective order per group
and send/recv pairing.  Both run as the ranks stream by, keeping memory flat."""

from __future__ import annotations

from collections import Counter

from chakra_core import CommType

from .report import ExportReport

__all__ = ["OrderCheck", "check_p2p"]


def _describe(seq: list[tuple[int, int]], k: int) -> str:
    return "none" if k >= len(seq) else f"{CommType(seq[k][0]).name} {seq[k][1]} B"


class OrderCheck:
    """Do all members of a group issue the same collectives (kind, size) in the same order?

    ASTRA-sim matches collectives by issue order (ready nodes in ascending id order) and would
    hang or pair the wrong ones.  Each rank's sequence is compared, when it is converted, with
    that of the first member seen; only the reference sequences are kept.
    """

    def __init__(self, members: dict[str, frozenset[int]], report: ExportReport):
        self.members = members
        self.report = report
        self.ref: dict[str, tuple[int, list[tuple[int, int]]]] = {}
        self.seen: dict[str, set[int]] = {}
        self.bad: set[str] = set()

    def add(self, rank: int, collectives: dict[str, list[tuple[int, int, int]]]) -> None:
        """Record the collectives ``{group: [(node_id, comm_type, comm_size)]}`` of ``rank``."""
        for pg, items in collectives.items():
            seq = [(k, s) for _, k, s in sorted(items)]
            self.seen.setdefault(pg, set()).add(rank)
            ref = self.ref.get(pg)
            if ref is None:
                self.ref[pg] = (rank, seq)
            elif pg not in self.bad and seq != ref[1]:
                self._warn(pg, rank, seq, *ref)

    def finish(self) -> None:
        """Report members that issued no collective on a group where others did."""
        for pg, (ref_rank, ref) in self.ref.items():
            if pg in self.bad or not ref:
                continue
            missing = sorted(set(self.members.get(pg, ())) - self.seen[pg])
            if missing:
                self._warn(pg, missing[0], [], ref_rank, ref)

    def _warn(self, pg: str, rank: int, seq: list, ref_rank: int, ref: list) -> None:
        k = next((i for i, (a, b) in enumerate(zip(ref, seq)) if a != b), min(len(ref), len(seq)))
        self.bad.add(pg)
        self.report.changed["groups_with_differing_collectives"] += 1
        self.report.warn(f"group {pg or 'all ranks'}: rank {rank} issues {len(seq)} collectives, rank "
                         f"{ref_rank} {len(ref)}; first difference at collective #{k + 1} "
                         f"({_describe(seq, k)} vs {_describe(ref, k)}) - ASTRA-sim matches them by order")


def check_p2p(p2p: Counter, report: ExportReport) -> None:
    """Warn about sends without a matching recv and the reverse (matched on src, dst, tag, size)."""
    for (src, dst, tag, size), n in sorted(p2p.items()):
        if n:
            report.changed["p2p_unmatched"] += abs(n)
            what = "send(s) without a recv" if n > 0 else "recv(s) without a send"
            report.warn(f"{abs(n)} {what}: {src} -> {dst}, tag {tag}, {size} B")
