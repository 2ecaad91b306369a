"""Cross-rank validation rules: process groups, collective order, p2p matching, deadlocks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from chakra_core.io._schema import COMM_TYPE_NAMES
from chakra_core.trace._traceset import TraceSet
from chakra_core.validation._rank_rules import Call, RankCheck
from chakra_core.validation._skelrecord import K_COLL, Skeleton, Wait

if TYPE_CHECKING:
    from chakra_core.validation._deadlock import Outcome

__all__ = ["check_groups", "check_collectives", "check_p2p", "check_deadlocks"]

Add = Callable[..., None]


def _group_label(pg: str) -> str:
    return f"group {pg!r}" if pg else "the default group (all ranks)"


def check_groups(traces: TraceSet, groups: Mapping[str, list[int]], checks: dict[int, RankCheck],
                 add: Add) -> None:
    """``pg-bad-rank`` for group members outside the set, ``pg-undefined`` for collectives on a
    group the set does not define, ``coll-root`` for a root outside its collective's group."""
    label = traces[traces.ranks[0]].label
    nranks = max(traces.ranks) + 1 if len(traces) > 1 else 0
    for name, ranks in groups.items():
        bad = [r for r in ranks if r < 0 or (nranks and r >= nranks)]
        twice = sorted(r for r, c in Counter(ranks).items() if c > 1)
        if bad:
            add("pg-bad-rank", label, None, f"process group {name!r} names rank {bad[0]}, "
                f"outside the set of {len(traces)} rank(s)", rank=traces.ranks[0])
        elif twice:
            add("pg-bad-rank", label, None, f"process group {name!r} lists rank {twice[0]} twice",
                rank=traces.ranks[0])
    if len(traces) == 1:
        _one_of_many(traces.ranks[0], label, groups, add)
    for r, chk in checks.items():
        for pg, seq in chk.colls.items():
            if pg and pg not in groups:
                add("pg-undefined", chk.label, seq[0][0], f"{len(seq)} collective(s) on process group "
                    f"{pg!r}, which the set does not define", rank=r)
    _roots(traces, groups, checks, add)


def _roots(traces: TraceSet, groups: Mapping[str, list[int]], checks: dict[int, RankCheck], add: Add) -> None:
    """``coll-root``, a warning: a broadcast, reduce, gather or scatter whose ``root`` (a global
    rank) is not a member of its group.  A group of every rank is known only for a set of more
    than one rank; an undefined group is ``pg-undefined``'s."""
    members: dict[str, frozenset[int] | None] = {}
    for r, chk in checks.items():
        for pg, nid, ct, root in chk.roots:
            if pg not in members:
                every = len(traces) > 1 and (not pg or pg in groups)
                listed = groups.get(pg) if pg else None
                members[pg] = frozenset(listed or (traces.ranks if every else ())) or None
            inside = members[pg]
            if inside is not None and root not in inside:
                shown = sorted(inside)
                add("coll-root", chk.label, nid, f"{COMM_TYPE_NAMES[ct]} with root {root}, which is not a member "
                    f"of {_group_label(pg)} (its {len(shown)} ranks: {_few(shown)}): the emulator refuses it; "
                    "the simulators do not read the root", severity="warning", rank=r)


def _few(ranks: list[int]) -> str:
    """Up to 8 ranks, then how many more."""
    return ", ".join(map(str, ranks[:8])) + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")


def _one_of_many(rank: int, label: str, groups: Mapping[str, list[int]], add: Add) -> None:
    """``partial-set``, a warning: the set's one rank has process groups that name other ranks
    (one rank of a larger job, checked alone; a simulator needs them all)."""
    others = sorted({r for ranks in groups.values() for r in ranks if r >= 0 and r != rank})
    if others:
        add("partial-set", label, None, f"the set holds rank {rank} only, but its process groups name "
            f"{len(others)} other rank(s), up to rank {others[-1]}: one rank of a larger job, checked alone "
            "(the cross-rank rules need the others; a simulator refuses it without them)", severity="warning",
            rank=rank)


def _describe(c: Call) -> str:
    if c[1] is None:
        return f"a collective whose comm_type or comm_size cannot be read (node {c[0]})"
    return f"{COMM_TYPE_NAMES.get(c[1], c[1])} of {c[2]} bytes (node {c[0]})"


def check_collectives(traces: TraceSet, checks: dict[int, RankCheck], add: Add) -> None:
    """``coll-not-member`` and ``coll-order``: every member issues the same collectives.

    Each group is checked against the ranks that use it (indexed once), not against every rank,
    so a set of thousands of ranks and groups costs their number, not their product."""
    users: dict[str, list[int]] = {}
    for r, chk in checks.items():
        for pg in chk.colls:
            users.setdefault(pg, []).append(r)
    for pg in sorted(users):
        members = traces.group_members(pg)
        inside = set(members)
        label = _group_label(pg)
        for r in users[pg]:
            chk = checks[r]
            if r not in inside and chk.colls.get(pg):
                add("coll-not-member", chk.label, chk.colls[pg][0][0],
                    f"collective on {label}, whose members are {members}", rank=r)
        present = [r for r in members if r in checks]
        if present:
            _same_sequence(pg, present, checks, add)


def _same_sequence(pg: str, present: list[int], checks: dict[int, RankCheck], add: Add) -> None:
    label = _group_label(pg)
    ref = present[0]
    ref_seq = checks[ref].colls.get(pg, [])
    for r in present[1:]:
        seq = checks[r].colls.get(pg, [])
        if seq == ref_seq:  # the same ids, types and sizes (one comparison in C)
            continue
        for i, (a, b) in enumerate(zip(ref_seq, seq)):
            # one that cannot be read (type None: a coll-attrs finding already) differs from none
            if (a[1] != b[1] or a[2] != b[2]) and a[1] is not None and b[1] is not None:
                add("coll-order", checks[r].label, b[0],
                    f"collective #{i + 1} on {label} is {_describe(b)} but rank {ref} issues {_describe(a)}",
                    rank=r)
                break
        else:
            if len(seq) > len(ref_seq):
                add("coll-order", checks[r].label, seq[len(ref_seq)][0],
                    f"{len(seq)} collectives on {label} but rank {ref} issues {len(ref_seq)}", rank=r)
            elif len(seq) < len(ref_seq):
                # the finding sits on the first collective of ``ref`` that ``r`` lacks
                add("coll-order", checks[ref].label, ref_seq[len(seq)][0],
                    f"collective #{len(seq) + 1} on {label} ({_describe(ref_seq[len(seq)])}) is not "
                    f"issued by rank {r}, which issues {len(seq)}", rank=ref)


def check_p2p(traces: TraceSet, checks: dict[int, RankCheck], add: Add) -> None:
    """``unmatched-p2p``: as many sends as receives for each (src, dst, tag, size)."""
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


def check_deadlocks(checks: dict[int, RankCheck], skels: dict[int, Skeleton], pg_names: list[str],
                    members: list[tuple[int, ...]], add: Add, streams: int = 1, compile_it: bool = True) -> None:
    """``deadlock`` for ranks that wait on each other, ``never-reached`` for a wait on a rank
    that finishes without the matching collective or send, in the reference run of the set;
    where it finishes, ``may-deadlock`` (a warning) for the waits of the run with late messages
    (see :mod:`._deadlock`; ``compile_it``: whether its loop runs compiled)."""
    from chakra_core.validation._deadlock import run_abstract  # numpy: loaded for sets of more than one rank

    reference, *late = run_abstract(skels, members, streams, compile_it)
    waits = _WaitReport(checks, skels, pg_names, add)
    if reference.waits:
        waits.report(reference)
    elif late and late[0].waits:
        waits.report(late[0])


class _WaitReport:
    """Words the waits of one run of the deadlock search as findings."""

    def __init__(self, checks: dict[int, RankCheck], skels: dict[int, Skeleton], pg_names: list[str], add: Add):
        self.checks, self.skels, self.pg_names, self.add = checks, skels, pg_names, add

    def what(self, w: Wait) -> str:
        """The node rank ``w.rank`` waits at."""
        s = self.skels[w.rank]
        i = w.index
        if s.kinds[i] == K_COLL:
            ct = COMM_TYPE_NAMES.get(s.tags[i], s.tags[i])
            return f"node {s.ids[i]} ({ct} #{w.seq + 1} on {_group_label(self.pg_names[s.peer_or_group[i]])})"
        return f"node {s.ids[i]} (receive from rank {s.peer_or_group[i]}, tag {s.tags[i]}, {s.sizes[i]} bytes)"

    def report(self, run: Outcome) -> None:
        """``never-reached`` and ``deadlock`` findings of ``run``; of a run other than the
        reference (whose ``order`` is named), each a ``may-deadlock`` warning saying so."""
        def add(rule: str, w: Wait, message: str, involved: list[tuple[int, int]]) -> None:
            if run.order:
                rule, message = "may-deadlock", (f"{message} (with {run.order}, as the lengths of transfers can "
                                                 "make it; the set finishes with messages at once: whether the "
                                                 "simulator finishes depends on timing)")
            self.add(rule, self.checks[w.rank].label, self.skels[w.rank].ids[w.index], message,
                     "warning" if run.order else "error", w.rank, involved)

        edges: dict[int, list[tuple[int, Wait]]] = {}
        for w in run.waits:
            gone = [r for r in w.ranks if r in run.finished]
            if gone:
                add("never-reached", w, f"rank {w.rank} {self.what(w)} waits for rank(s) {_few(gone)}, which finish "
                    "without reaching it", [(w.rank, self.skels[w.rank].ids[w.index])])
            edges.setdefault(w.rank, []).extend((r, w) for r in w.ranks if r not in run.finished)
        for comp in _cycles(edges):
            cycle = _one_cycle(comp, edges)
            hops = [f"rank {w.rank} {self.what(w)} waits for rank {nxt}" for w, nxt in cycle]
            ranks = sorted({w.rank for w, _ in cycle})
            more = f" ({len(comp)} ranks wait on each other in all)" if len(comp) > len(ranks) else ""
            listed = hops[:8] + ([f"... {len(hops) - 8} more"] if len(hops) > 8 else [])
            add("deadlock", cycle[0][0], f"ranks {_few(ranks)} wait on each other: " + "; ".join(listed) + more,
                [(w.rank, self.skels[w.rank].ids[w.index]) for w, _ in cycle])


def _cycles(edges: dict[int, list[tuple[int, Wait]]]) -> list[list[int]]:
    """The strongly connected components with a cycle (Tarjan, iterative), by lowest rank."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            succ = edges.get(v, [])
            if k < len(succ):
                work.append((v, k + 1))
                w = succ[k][0]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return sorted(out)


def _one_cycle(comp: list[int], edges: dict[int, list[tuple[int, Wait]]]) -> list[tuple[Wait, int]]:
    """A shortest cycle of waits through the lowest rank of ``comp``: (wait, rank waited for)."""
    inside = set(comp)
    start = comp[0]
    via: dict[int, tuple[int, Wait]] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w, wait in edges.get(v, []):
                if w not in inside:
                    continue
                if w == start:
                    path = [(wait, w)]
                    while v != start:
                        u, uw = via[v]
                        path.append((uw, v))
                        v = u
                    return path[::-1]
                if w not in via:
                    via[w] = (v, wait)
                    nxt.append(w)
        frontier = nxt
    raise AssertionError("a strongly connected component without a cycle")
