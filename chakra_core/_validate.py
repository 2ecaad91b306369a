"""Validation of Chakra ETs: per-rank rules and cross-rank consistency.

Rules (each finding names the file, the node id and the rule):

per rank
  ``duplicate-id``      two nodes share an id
  ``missing-dep``       a data/ctrl dependency names an id that is not in the file
  ``cycle``             the dependencies form a cycle (the ids of one cycle are printed)
  ``invalid-type``      a node of type INVALID_NODE or an unknown type number
  ``coll-attrs``        a collective without ``comm_type`` or ``comm_size``, or an unknown comm_type
  ``p2p-attrs``         a send without ``comm_dst``/``comm_tag``/``comm_size``, a receive without
                        ``comm_src``/``comm_tag``/``comm_size``
  ``bad-size``          a negative size, or one above 1 PiB (``comm_size``, ``tensor_size``)
  ``bad-peer``          a peer rank outside the set (when more than one rank is given), a
                        negative one, or the node's own rank (when the rank is known)
  ``empty-rank``        a rank with no nodes (ASTRA-sim aborts on it)          [warning]
across ranks
  ``coll-order``        the collectives of a process group differ between member ranks in count,
                        order, type or size (ASTRA-sim matches them purely by issue order)
  ``coll-not-member``   a rank issues a collective on a group it is not a member of
  ``unmatched-p2p``     a send without the matching receive (src, dst, tag, size), or vice versa
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ._attrs import int_value
from ._graph import RankGraph
from ._schema import COMM_TYPE_NAMES, Node, NodeType
from ._traceset import TraceSet

__all__ = ["Finding", "validate", "RULES", "ABSURD_BYTES"]

ABSURD_BYTES = 1 << 50  # 1 PiB
RULES = (
    "duplicate-id", "missing-dep", "cycle", "invalid-type", "coll-attrs", "p2p-attrs",
    "bad-size", "bad-peer", "empty-rank", "coll-order", "coll-not-member", "unmatched-p2p",
)
_P2P_KEYS: dict[int, tuple[str, ...]] = {
    NodeType.COMM_SEND_NODE: ("comm_dst", "comm_tag", "comm_size"),
    NodeType.COMM_RECV_NODE: ("comm_src", "comm_tag", "comm_size"),
}
_MAX_PER_RULE = 20


@dataclass
class Finding:
    """One problem: ``severity`` is "error" or "warning"; ``node_id`` is None for whole-file rules.

    After 20 findings of one rule in one file, one summary finding stands for the rest
    (``count`` says how many).
    """

    rule: str
    file: str
    node_id: int | None
    message: str
    severity: str = "error"
    rank: int | None = None
    count: int = 1  # how many problems this finding stands for (more than 1 on a "not shown" summary)

    def __str__(self) -> str:
        where = self.file + (f":node {self.node_id}" if self.node_id is not None else "")
        return f"{where}: {self.severity}: [{self.rule}] {self.message}"

    def to_dict(self) -> dict:
        """Plain data for ``--json``."""
        return asdict(self)


def _ints(n: Node) -> dict[str, Any]:
    """The node's integer attributes, and its group name under ``_pg``."""
    out: dict[str, Any] = {}
    for a in n.attr:
        v = int_value(a)
        if v is not None:
            out[a.name] = v
        elif a.name == "pg_name" and a.WhichOneof("value") == "string_val":
            out["_pg"] = a.string_val
    if "pg_name" in out:  # a group name written in an integer slot
        out["_pg"] = str(out.pop("pg_name"))
    return out


class _RankCheck:
    """Per-node checks of one rank; gathers collectives and point-to-point ops for cross checks."""

    def __init__(self, rank: int, label: str, nranks: int, add: Callable[..., None], rank_known: bool = True):
        self.rank, self.label, self.nranks, self.add = rank, label, nranks, add
        self.rank_known = rank_known
        self.colls: dict[str, list[tuple[int, int, int]]] = defaultdict(list)  # pg -> (id, type, size)
        self.sends: list[tuple[int, int, int, int]] = []  # (dst, tag, size, id)
        self.recvs: list[tuple[int, int, int, int]] = []  # (src, tag, size, id)

    def __call__(self, n: Node) -> None:
        t = n.type
        if t == NodeType.COMP_NODE or t == NodeType.METADATA_NODE:
            return
        if t == 0 or t > 7:
            self.add("invalid-type", self.label, n.id, f"node type {t} ({'INVALID_NODE' if t == 0 else 'unknown'})",
                     rank=self.rank)
            return
        a = _ints(n)
        for key in ("comm_size", "tensor_size"):
            v = a.get(key)
            if v is not None and (v < 0 or v > ABSURD_BYTES):
                self.add("bad-size", self.label, n.id, f"{key} = {v} bytes", rank=self.rank)
        if t == NodeType.COMM_COLL_NODE:
            ct, size = a.get("comm_type"), a.get("comm_size")
            if ct is None or size is None:
                miss = " and ".join(k for k in ("comm_type", "comm_size") if a.get(k) is None)
                self.add("coll-attrs", self.label, n.id, f"collective without {miss}", rank=self.rank)
                return
            if ct not in COMM_TYPE_NAMES:
                self.add("coll-attrs", self.label, n.id, f"unknown comm_type {ct}", rank=self.rank)
                return
            pg = str(a.get("_pg", "") or "")
            self.colls["" if pg == "0" else pg].append((n.id, ct, size))  # "" and "0": all ranks
        elif t in _P2P_KEYS:
            absent = [k for k in _P2P_KEYS[t] if a.get(k) is None]
            if absent:
                kind = "send" if t == NodeType.COMM_SEND_NODE else "receive"
                self.add("p2p-attrs", self.label, n.id, f"{kind} without {', '.join(absent)}", rank=self.rank)
                return
            peer_key = "comm_dst" if t == NodeType.COMM_SEND_NODE else "comm_src"
            peer = a[peer_key]
            if peer < 0 or (self.rank_known and peer == self.rank) or (self.nranks > 1 and peer >= self.nranks):
                self.add("bad-peer", self.label, n.id,
                         f"{peer_key} = {peer} (rank {self.rank} of {self.nranks})", rank=self.rank)
                return
            rec = (peer, a["comm_tag"], a["comm_size"], n.id)
            (self.sends if t == NodeType.COMM_SEND_NODE else self.recvs).append(rec)


def validate(traces: TraceSet, cross_rank: bool = True,
             progress: Callable[[int, int], None] | None = None) -> list[Finding]:
    """Check every rank of ``traces`` (streaming) and, with ``cross_rank``, their consistency.

    ``progress(done, total)`` is called after each rank.
    """
    findings: list[Finding] = []
    counts: Counter = Counter()

    hidden: dict[tuple[str, str], Finding] = {}

    def add(rule, file, node_id, message, severity="error", rank=None):
        counts[rule, file] += 1
        n = counts[rule, file] - _MAX_PER_RULE
        if n <= 0:
            findings.append(Finding(rule, file, node_id, message, severity, rank))
        elif n == 1:
            hidden[rule, file] = Finding(rule, file, None, "", severity, rank, count=0)
            findings.append(hidden[rule, file])
        if n > 0:
            summary = hidden[rule, file]
            summary.count = n
            summary.message = f"{n} more '{rule}' finding(s) in this file not shown"

    # a single file is one rank of a job of unknown size: peers are then only checked for sign/self
    nranks = max(traces.ranks) + 1 if len(traces) > 1 else 0
    checks: dict[int, _RankCheck] = {}
    for rt in traces:
        chk = _RankCheck(rt.rank, rt.label, nranks, add, rt.rank_known)
        g = RankGraph.build(rt.batches(), visit=chk)
        checks[rt.rank] = chk
        if len(g) == 0:
            add("empty-rank", rt.label, None, "no nodes (ASTRA-sim aborts on an empty rank)", "warning", rt.rank)
        for d in g.duplicates:
            add("duplicate-id", rt.label, d, f"id {d} is used by more than one node", rank=rt.rank)
        for nid, dep in g.missing:
            add("missing-dep", rt.label, nid, f"depends on id {dep}, which is not in the file", rank=rt.rank)
        _, left = g.topo_order()
        if left:
            cyc = g.find_cycle(left)
            add("cycle", rt.label, cyc[0], "dependency cycle: " + " -> ".join(map(str, cyc + cyc[:1])),
                rank=rt.rank)
        if progress:
            progress(len(checks), len(traces))
    if cross_rank and len(traces) > 1:
        _check_collectives(traces, checks, add)
        _check_p2p(traces, checks, add)
    return findings


def _describe(c: tuple[int, int, int]) -> str:
    return f"{COMM_TYPE_NAMES.get(c[1], c[1])} of {c[2]} bytes (node {c[0]})"


def _check_collectives(traces: TraceSet, checks: dict[int, _RankCheck], add) -> None:
    groups = sorted({pg for c in checks.values() for pg in c.colls})
    for pg in groups:
        members = traces.group_members(pg)
        label = f"group {pg!r}" if pg not in ("", "0") else "the default group (all ranks)"
        for r, chk in checks.items():
            if r not in members and chk.colls.get(pg):
                add("coll-not-member", traces[r].label, chk.colls[pg][0][0],
                    f"collective on {label}, whose members are {members}", rank=r)
        present = [r for r in members if r in checks]
        if not present:
            continue
        ref = present[0]
        ref_seq = checks[ref].colls.get(pg, [])
        for r in present[1:]:
            seq = checks[r].colls.get(pg, [])
            label_r = traces[r].label
            for i, (a, b) in enumerate(zip(ref_seq, seq)):
                if a[1] != b[1] or a[2] != b[2]:
                    add("coll-order", label_r, b[0],
                        f"collective #{i + 1} on {label} is {_describe(b)} but rank {ref} issues {_describe(a)}",
                        rank=r)
                    break
            else:
                if len(seq) != len(ref_seq):
                    nid = seq[len(ref_seq)][0] if len(seq) > len(ref_seq) else None
                    add("coll-order", label_r, nid,
                        f"{len(seq)} collectives on {label} but rank {ref} issues {len(ref_seq)}", rank=r)


def _check_p2p(traces: TraceSet, checks: dict[int, _RankCheck], add) -> None:
    sends: Counter = Counter()
    recvs: Counter = Counter()
    first: dict[tuple, tuple[int, int]] = {}
    for r, chk in checks.items():
        for dst, tag, size, nid in chk.sends:
            key = (r, dst, tag, size)
            sends[key] += 1
            first.setdefault(("s",) + key, (r, nid))
        for src, tag, size, nid in chk.recvs:
            key = (src, r, tag, size)
            recvs[key] += 1
            first.setdefault(("r",) + key, (r, nid))
    for key in sorted(set(sends) | set(recvs)):
        s, v = sends[key], recvs[key]
        if s == v:
            continue
        src, dst, tag, size = key
        if s > v:
            r, nid = first[("s",) + key]
            msg = f"{s - v} send(s) {src}->{dst} tag {tag} of {size} bytes without a matching receive on rank {dst}"
        else:
            r, nid = first[("r",) + key]
            msg = f"{v - s} receive(s) {src}->{dst} tag {tag} of {size} bytes without a matching send on rank {src}"
        add("unmatched-p2p", traces[r].label, nid, msg, rank=r)
