"""One scan per role: the record of a rank equal to an already scanned one up to its labels.

Two ranks with the same :func:`chakra_core.role_key` digest hold the same node bytes once each
group name and peer rank is replaced by its first-naming label.  The per-rank rules read
nothing else but the rank's own number (``bad-peer``, ``own-endpoint``: a peer equal to the
rank is labelled ``self`` in both) and the peers' range, so a rank of a role whose first
scanned rank (its representative) had no finding at all has none either when its own peers lie
in the set; its record for the cross-rank rules (collectives per group, sends, receives,
skeleton) is the representative's with groups and peers relabelled.  Every other rank is
scanned itself: a finding is always reported by the scan of its own rank.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from itertools import islice
from typing import TYPE_CHECKING

from chakra_core.base._errors import TraceFormatError
from chakra_core.trace._traceset import FileRank, RankTrace, TraceSet
from chakra_core.validation._rank_rules import RankCheck
from chakra_core.validation._skeleton import RankScan
from chakra_core.validation._skelrecord import K_COLL, K_RECV, K_SEND

if TYPE_CHECKING:
    from chakra_core.trace._roles import RoleKey

__all__ = ["RoleShare", "TRIAL"]

#: ranks keyed before sharing goes off when none of them was shared
TRIAL = 64


@dataclass
class _Rep:
    """A scanned rank without findings: its key, record, scan and the groups it numbered (in
    the order it first numbered them)."""

    key: RoleKey
    check: RankCheck
    scan: RankScan
    numbered: list[str]


class RoleShare:
    """The representatives of the roles met so far in one validation (file-backed sets of more
    than one rank validated by the compiled loops, ``compile_it``: the role key is a compiled
    walk)."""

    def __init__(self, traces: TraceSet, compile_it: bool):
        self.on = compile_it and len(traces) > 1 and all(isinstance(rt, FileRank) for rt in traces)
        self._reps: dict[tuple[bytes, bool], _Rep] = {}
        self._keyed = self._shared = 0
        self._traces = traces
        self._ahead: Generator[tuple[RankTrace, Callable[[], RoleKey]], None, None] | None = None

    def key(self, rt: RankTrace) -> RoleKey | None:
        """The rank's role key (None when sharing is off or the rank does not read: its own
        scan reports that); ``rt`` is the next rank of the set (keys are taken ahead, in set
        order, by :func:`chakra_core.role_keys`: within the first TRIAL ranks, then among the
        others).  Sharing goes off when the first TRIAL ranks share nothing (a set of distinct
        ranks: a key costs about a third of a scan)."""
        if self.on and self._keyed >= TRIAL and not self._shared:
            self.on = False
            self.close()
        if not self.on:
            return None
        if self._keyed in (0, TRIAL):  # keys taken ahead within the trial, then for the rest once it paid
            from chakra_core.trace._roles import role_keys  # numpy: only when sharing is on

            self.close()
            part = islice(self._traces, TRIAL) if self._keyed == 0 else islice(self._traces, TRIAL, None)
            self._ahead = role_keys(part, compile_it=True)
        assert self._ahead is not None
        self._keyed += 1
        keyed, get = next(self._ahead)
        assert keyed is rt, "ranks keyed in the order of the set"
        try:
            return get()
        except TraceFormatError:
            return None

    def close(self) -> None:
        """Stop taking keys ahead (those not started are dropped)."""
        if self._ahead is not None:
            self._ahead.close()
            self._ahead = None

    def numbering(self, key: RoleKey | None, rt: RankTrace, group_number: Callable[[str], int],
                  numbered: list[str]) -> Callable[[str], int]:
        """``group_number`` for the rank's own scan: one that also lists the groups numbered,
        when the rank may become its role's representative."""
        if key is None or (key.digest, rt.rank_known) in self._reps:
            return group_number

        def listed(pg: str) -> int:
            numbered.append(pg)
            return group_number(pg)

        return listed

    def derived(self, key: RoleKey | None, rt: RankTrace, chk: RankCheck) -> RankScan | None:
        """The scan of ``rt`` from its role's representative, its record put into ``chk`` (the
        groups numbered in the representative's order, mapped); None when the rank is to be
        scanned itself."""
        if key is None:
            return None
        rep = self._reps.get((key.digest, rt.rank_known))
        if rep is None or not all(0 <= p <= chk.max_peer for p in key.peers):
            return None
        groups = {"": "", **dict(zip(rep.key.groups, key.groups))}
        peers = {rep.check.rank: rt.rank, **dict(zip(rep.key.peers, key.peers))}
        numbers = {chk.group_number(pg): chk.group_number(groups[pg]) for pg in rep.numbered}
        _relabelled(rep.check, chk, groups, peers, numbers)
        self._shared += 1
        return replace(rep.scan)

    def offer(self, key: RoleKey | None, rt: RankTrace, chk: RankCheck, scan: RankScan, clean: bool,
              numbered: list[str]) -> None:
        """Keep a scanned rank as its role's representative when it is the first of its role,
        had no finding and names only groups its key labels."""
        if key is None or not clean or scan.skel_ptr is None or (key.digest, rt.rank_known) in self._reps:
            return
        known = {"", *key.groups}
        if all(pg in known for pg in (*chk.colls, *numbered)):
            self._reps[key.digest, rt.rank_known] = _Rep(key, chk, scan, list(dict.fromkeys(numbered)))


def _relabelled(rep: RankCheck, chk: RankCheck, groups: dict[str, str], peers: dict[int, int],
                numbers: dict[int, int]) -> None:
    """Put ``rep``'s record into ``chk`` with groups, peers and group numbers relabelled."""
    import numpy as np

    chk.colls = defaultdict(list, {groups[pg]: calls for pg, calls in rep.colls.items()})
    chk.roots = [(groups[pg], nid, ct, root) for pg, nid, ct, root in rep.roots]
    chk.sends = [(peers[p], tag, size, nid) for p, tag, size, nid in rep.sends]
    chk.recvs = [(peers[p], tag, size, nid) for p, tag, size, nid in rep.recvs]
    chk.total_us, chk.saw_group_node = rep.total_us, rep.saw_group_node
    chk.skel_ids, chk.skel_kinds = rep.skel_ids, rep.skel_kinds
    chk.skel_tag, chk.skel_size = rep.skel_tag, rep.skel_size
    a = np.frombuffer(rep.skel_a, np.int64).copy() if len(rep.skel_a) else np.zeros(0, np.int64)
    kinds = np.frombuffer(bytes(rep.skel_kinds), np.uint8)
    for kind, table in ((K_COLL, numbers), (K_SEND, peers), (K_RECV, peers)):
        rows = np.flatnonzero(kinds == kind)
        if len(rows):
            old = np.array(list(table), np.int64)
            new = np.array(list(table.values()), np.int64)
            order = np.argsort(old)
            a[rows] = new[order][np.searchsorted(old[order], a[rows])]
    chk.skel_a = array("q", a.tobytes())
