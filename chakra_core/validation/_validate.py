"""Validation of Chakra ETs: per-rank rules and cross-rank consistency.

Rules (each finding names the file, the node id where there is one, and the rule; the table
in docs/validation.md says why each matters):

per rank
  ``duplicate-id``      two nodes share an id
  ``missing-dep``       a data/ctrl dependency names an id that is not in the file
  ``cycle``             the dependencies form a cycle (the ids of one cycle are printed)
  ``invalid-type``      a node of type INVALID_NODE
  ``unknown-type``      a node type this schema does not know (a newer schema's)       [warning]
  ``unknown-attr``      an attribute of a kind this schema does not know, on a
                        communication or memory node (the attributes validation reads)  [warning]
  ``coll-attrs``        a collective without ``comm_type`` or ``comm_size``, or an unknown comm_type
  ``p2p-attrs``         a send without ``comm_dst``/``comm_tag``/``comm_size``, a receive without
                        ``comm_src``/``comm_tag``/``comm_size``
  ``bad-size``          a negative size, or one above 1 PiB (``comm_size``, ``tensor_size``)
  ``bad-peer``          a peer rank outside the set (when more than one rank is given), a
                        negative one, or the node's own rank (when the rank is known)
  ``own-endpoint``      a send whose ``comm_src`` (a receive whose ``comm_dst``) is present and is
                        not the rank of its file (when the rank is known)
  ``bad-duration``      a node longer than 2^40 us, or a rank whose durations add up past 2^50 us
  ``empty-rank``        a rank with no nodes (ASTRA-sim aborts on it)          [warning]
across ranks
  ``pg-unparseable``    the set's ``process_groups`` description cannot be read
  ``pg-bad-rank``       a process group names a rank outside the set, a negative one, or one twice
  ``pg-undefined``      a collective on a process group the set does not define
  ``partial-set``       a set of one rank whose process groups name other ranks  [warning]
  ``coll-order``        the collectives of a process group differ between member ranks in count,
                        order, type or size (ASTRA-sim matches them purely by issue order)
  ``coll-not-member``   a rank issues a collective on a group it is not a member of
  ``coll-root``         a broadcast, reduce, gather or scatter whose ``root`` is not a member of its
                        group (the emulator refuses it)                          [warning]
  ``unmatched-p2p``     a send without the matching receive (src, dst, tag, size), or vice versa
  ``deadlock``          ranks that wait on each other forever (an abstract execution of the set)
  ``never-reached``     a collective or receive waits for a rank that finishes without reaching it
  ``may-deadlock``      either of the two when messages arrive late, as the lengths of transfers
                        can make them, where the reference order finishes        [warning]

``cross_rank=False`` skips the rules that compare ranks; the group rules (``pg-*``,
``partial-set``, ``coll-root``) still run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from chakra_core.base._errors import TraceFormatError
from chakra_core.base._jitchoice import compiled_worthwhile
from chakra_core.trace._traceset import PG_ATTR, FileRank, RankTrace, TraceSet
from chakra_core.validation._finding import Finding
from chakra_core.validation._rank_rules import ABSURD_BYTES, MAX_DURATION_US, MAX_RANK_DURATION_US, RankCheck
from chakra_core.validation._roleshare import RoleShare
from chakra_core.validation._set_rules import check_collectives, check_deadlocks, check_groups, check_p2p
from chakra_core.validation._skeleton import RankScan, scan_rank
from chakra_core.validation._skelrecord import Skeleton

__all__ = ["Finding", "validate", "validate_as", "compiled_pays", "COMPILED_FROM",
           "RULES", "ABSURD_BYTES", "MAX_DURATION_US", "MAX_RANK_DURATION_US",
           "CROSS_RANK_STATUS"]

#: what a progress bar of :func:`validate` shows once every rank is read
CROSS_RANK_STATUS = "now across ranks"

RULES = (
    "duplicate-id", "missing-dep", "cycle", "invalid-type", "unknown-type", "unknown-attr",
    "coll-attrs", "p2p-attrs", "bad-size", "bad-peer", "own-endpoint", "empty-rank", "coll-order", "coll-not-member",
    "coll-root", "unmatched-p2p",
    "bad-duration", "pg-unparseable", "pg-bad-rank", "pg-undefined", "partial-set", "deadlock", "never-reached",
    "may-deadlock",
)
#: errors that leave the meaning of the set unclear: no abstract execution is run after them
_UNCLEAR = frozenset({
    "duplicate-id", "missing-dep", "cycle", "coll-attrs", "p2p-attrs", "bad-peer",
    "pg-unparseable", "pg-bad-rank", "pg-undefined", "coll-not-member",
})
_MAX_PER_RULE = 20
#: a set of ``.et`` files from this size on is checked by the compiled loops even when numba is
#: not loaded yet (loading it and its first calls cost about 0.6 s of CPU and 130 MB: what the
#: per-node path takes for about 8 MiB of a multi-rank set, and for more of a single rank)
COMPILED_FROM = 8 << 20



class _Collector:
    """Gathers findings, at most 20 per rule and file plus one summary for the rest."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.counts: Counter = Counter()
        self.hidden: dict[tuple[str, str], Finding] = {}

    def __call__(self, rule: str, file: str, node_id: int | None, message: str, severity: str = "error",
                 rank: int | None = None, involved: list[tuple[int, int]] | None = None) -> None:
        self.counts[rule, file] += 1
        n = self.counts[rule, file] - _MAX_PER_RULE
        if n <= 0:
            self.findings.append(Finding(rule, file, node_id, message, severity, rank, involved=involved or []))
            return
        if n == 1:
            self.hidden[rule, file] = Finding(rule, file, None, "", severity, rank, count=0)
            self.findings.append(self.hidden[rule, file])
        summary = self.hidden[rule, file]
        summary.count = n
        summary.message = f"{n} more '{rule}' finding(s) in this file not shown"

    def total(self) -> int:
        """How many findings were added so far (shown or not)."""
        return sum(self.counts.values())

    def unclear(self) -> bool:
        """Whether an error so far leaves the meaning of the set unclear."""
        return any(rule in _UNCLEAR for rule, _ in self.counts)


def validate(traces: TraceSet, cross_rank: bool = True,
             progress: Callable[[int, int], None] | None = None, *,
             groups: Mapping[str, Sequence[int]] | None = None, streams: int = 1) -> list[Finding]:
    """Check every rank of ``traces`` (streaming) and, with ``cross_rank``, their consistency
    (without it, of the set's rules only those of its process groups).

    ``progress(done, total)`` is called after each rank.  ``groups`` adds process groups to
    the set's own (and wins over them, as a simulator's comm-group file); ``streams`` is the
    number of communication ops in flight per rank that the deadlock search assumes.
    """
    return validate_as(traces, compiled_pays(traces), cross_rank, progress, groups=groups, streams=streams)


def compiled_pays(traces: TraceSet) -> bool:
    """Whether :func:`validate` runs the compiled loops on ``traces``: numba installed, and the
    set is at least :data:`COMPILED_FROM` bytes of files, or not all files, or numba is loaded
    already (:func:`~chakra_core.base._jitchoice.compiled_worthwhile`)."""
    files = [rt.file for rt in traces if isinstance(rt, FileRank)]
    return compiled_worthwhile(files, 0 if len(files) < len(traces) else COMPILED_FROM)


def validate_as(traces: TraceSet, compile_it: bool, cross_rank: bool = True,
                progress: Callable[[int, int], None] | None = None, *,
                groups: Mapping[str, Sequence[int]] | None = None, streams: int = 1) -> list[Finding]:
    """:func:`validate` by the compiled loops (``compile_it``: numba must be installed) or by the
    per-node path and the loops run as Python (the same findings)."""
    add = _Collector()
    pg_names: list[str] = [""]
    checks, skels = _check_ranks(traces, add, pg_names, progress, compile_it)
    if traces.ranks:
        _check_set(traces, checks, skels, pg_names, add, groups, streams, compile_it, cross_rank)
    return add.findings


def _check_ranks(traces: TraceSet, add: _Collector, pg_names: list[str], progress: Callable[[int, int], None] | None,
                 compile_it: bool = True) -> tuple[dict[int, RankCheck], dict[int, Skeleton]]:
    """Read each rank once (as columns by the compiled loops when ``compile_it``; node by node
    otherwise, and where a rule has a finding): per-rank rules, and each rank's record for the
    set checks.  A rank of a role already read without a finding is not scanned again: its record
    is that rank's relabelled (:mod:`._roleshare`)."""
    # a single file is one rank of a job of unknown size: peers are then only checked for sign/self
    nranks = max(traces.ranks) + 1 if len(traces) > 1 else 0
    pg_number = {"": 0}

    def group_number(pg: str) -> int:
        k = pg_number.get(pg)
        if k is None:
            k = pg_number[pg] = len(pg_names)
            pg_names.append(pg)
        return k

    checks: dict[int, RankCheck] = {}
    skels: dict[int, Skeleton] = {}
    roles = RoleShare(traces, compile_it)
    scan_columns = _column_scan() if compile_it else None
    try:
        for rt in traces:
            key = roles.key(rt)
            before = add.total()
            numbered: list[str] = []
            chk = RankCheck(rt.rank, rt.label, nranks, add, roles.numbering(key, rt, group_number, numbered),
                            rt.rank_known)
            scan = (roles.derived(key, rt, chk) or (scan_columns and scan_columns(rt, chk))
                    or scan_rank(rt.batches, chk))
            checks[rt.rank] = chk
            _structure_findings(add, rt, scan)
            if scan.skel_ptr is not None and scan.skel_preds is not None:
                skels[rt.rank] = chk.skeleton(scan.skel_ptr, scan.skel_preds)
            roles.offer(key, rt, chk, scan, add.total() == before, numbered)
            if progress:
                progress(len(checks), len(traces))
    finally:
        roles.close()  # the role keys taken ahead, on threads
    return checks, skels


def _structure_findings(add: _Collector, rt: RankTrace, scan: RankScan) -> None:
    """The findings of a rank's dependency structure: empty, repeated ids, missing dependencies,
    a cycle."""
    if scan.count == 0:
        add("empty-rank", rt.label, None, "no nodes (ASTRA-sim aborts on an empty rank)", "warning", rt.rank)
    for d in scan.duplicates:
        add("duplicate-id", rt.label, d, f"id {d} is used by more than one node", rank=rt.rank)
    for nid, dep in scan.missing:
        add("missing-dep", rt.label, nid, f"depends on id {dep}, which is not in the file", rank=rt.rank)
    if scan.cycle:
        cyc = scan.cycle
        add("cycle", rt.label, cyc[0], "dependency cycle: " + " -> ".join(map(str, cyc + cyc[:1])), rank=rt.rank)


def _column_scan() -> Callable[[RankTrace, RankCheck], RankScan | None]:
    """:func:`._colscan.scan_columns`, loaded (with numpy) only for the compiled loops."""
    from chakra_core.validation._colscan import scan_columns

    return scan_columns


def _check_set(traces: TraceSet, checks: dict[int, RankCheck], skels: dict[int, Skeleton], pg_names: list[str],
               add: _Collector, extra: Mapping[str, Sequence[int]] | None, streams: int, compile_it: bool,
               cross_rank: bool) -> None:
    """The rules of the set's process groups and, with ``cross_rank``, those that compare ranks,
    the deadlock search last."""
    groups = _groups(traces, checks, add, extra)
    compare = cross_rank and len(traces) > 1
    if compare:
        check_p2p(traces, checks, add)
    if groups is None:  # membership is unknown
        return
    view = TraceSet(list(traces), groups, traces.source) if extra else traces
    check_groups(view, groups, checks, add)
    if compare:
        check_collectives(view, checks, add)
        if not add.unclear() and len(skels) == len(traces):
            members = [tuple(view.group_members(pg)) for pg in pg_names]
            check_deadlocks(checks, skels, pg_names, members, add, streams, compile_it)


def _groups(traces: TraceSet, checks: dict[int, RankCheck], add: _Collector,
            extra: Mapping[str, Sequence[int]] | None) -> dict[str, list[int]] | None:
    """The set's process groups and ``extra``; a ``pg-unparseable`` finding and None when the
    set's cannot be read.

    A set of files with neither a named group nor a group description has none: that is known
    without another pass over the first rank.
    """
    first = traces[traces.ranks[0]]
    more = {k: list(v) for k, v in (extra or {}).items()}
    if (hasattr(first, "raw") and not checks[first.rank].saw_group_node
            and not any(pg for c in checks.values() for pg in c.colls)
            and not any(a.name == PG_ATTR for rt in traces for a in rt.metadata().attr)):
        return more
    try:
        return {**traces.process_groups, **more}
    except TraceFormatError as e:  # on the rank whose file it names
        rank = next((rt.rank for rt in traces if rt.label == e.where), traces.ranks[0])
        add("pg-unparseable", e.where or traces.source, None, e.message, rank=rank)
        return None
