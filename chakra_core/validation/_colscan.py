"""A rank's per-node rules and its record for the set checks, from its columns.

:func:`scan_columns` reads a file-backed rank once as :func:`~chakra_core.trace._columns.node_columns`
(one compiled walk of the wire bytes) and settles the rules of :class:`._rank_rules.RankCheck`
and the dependency checks of :func:`._skeleton.scan_rank` with array operations.  It gives the
rank's record only when every node message decodes (protobuf's C decoder, a run at a time, nested
messages included) and the rank is clean and in dependency order (every dependency names an
earlier node, ids in any order; see :class:`_Slots` for how sparse they may be): then no per-node
rule has anything to say and the record is the one the per-node path builds.  Any other rank (a
finding to word, an attribute in an unusual form, a wire fault, a rank not backed by a file) is
left to the per-node path, which words every finding.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from chakra_core.base._errors import TraceFormatError
from chakra_core.io._schema import COMM_TYPE_NAMES, PG_INIT_NAME
from chakra_core.trace._traceset import FileRank, RankTrace
from chakra_core.validation._frontkernel import Frontiers
from chakra_core.validation._rank_rules import (
    ABSURD_BYTES,
    MAX_DURATION_US,
    MAX_RANK_DURATION_US,
    ROOTED,
    Call,
    RankCheck,
)
from chakra_core.validation._skeleton import RankScan
from chakra_core.validation._skelrecord import K_COLL, K_RECV, K_SEND, K_SLOT

if TYPE_CHECKING:
    from chakra_core.trace._columns import NodeColumns

__all__ = ["scan_columns"]

_INTS = ("comm_type", "comm_size", "tensor_size", "comm_src", "comm_dst", "comm_tag", "is_cpu_op", "root")
_ATTRS = _INTS + ("pg_name",)
_META, _LOAD, _STORE, _SEND, _RECV, _COLL = 1, 2, 3, 5, 6, 7
_STRING_SLOT = 29
_BROADCAST = 5
_COMM_TYPES = np.array(sorted(COMM_TYPE_NAMES), np.int64)
_ROOTED = np.array(sorted(ROOTED), np.int64)
_U64 = np.uint64
#: a table of slots by id is kept while it has at most this many slots (2 bytes each, 4 once
#: widened: ._frontkernel.Frontiers) a node,
#: plus _SLACK: sparser ids are left to the per-node path
_SLOTS_PER_NODE = 8
_SLACK = 1 << 20


def _too_sparse(span: int, count: int) -> bool:
    """Whether ids spread over ``span`` for ``count`` nodes are too sparse for a table by id."""
    return span >= _SLOTS_PER_NODE * count + _SLACK


class _Ids:
    """The ids of a rank's nodes so far: only the first while they are consecutive, then every
    run's ids as they came (8 bytes a node, never copied into a larger array)."""

    def __init__(self) -> None:
        self.first = self.last = -1
        self.count = 0
        self.runs: list[np.ndarray] | None = None
        self.starts: list[int] = []  # position of each kept run's first node

    def add(self, ids: np.ndarray) -> bool:
        """Take the next run's ids; False unless they ascend past the ones so far."""
        if len(ids) > 1 and not bool((ids[1:] > ids[:-1]).all()):
            return False
        lo, hi = int(ids[0]), int(ids[-1])
        if self.count and lo <= self.last:
            return False
        if self.count == 0:
            self.first = lo
        if self.runs is None and (hi - lo != len(ids) - 1 or (self.count and lo != self.last + 1)):
            self.runs = [np.arange(self.first, self.last + 1, dtype=_U64)] if self.count else []
            self.starts = [0] if self.count else []
        if self.runs is not None:
            self.runs.append(ids)
            self.starts.append(self.count)
        self.count += len(ids)
        self.last = hi
        return True

    def all(self) -> np.ndarray:
        """The ids so far, in file order."""
        if self.runs is None:
            return np.arange(self.first, self.last + 1, dtype=_U64) if self.count else np.zeros(0, _U64)
        return np.concatenate(self.runs) if self.runs else np.zeros(0, _U64)

    def positions(self, deps: np.ndarray) -> np.ndarray | None:
        """The positions of ``deps``; None when one is not among the ids so far."""
        if self.runs is None:
            if len(deps) and (int(deps.min()) < self.first or int(deps.max()) > self.last):
                return None
            return (deps - _U64(self.first)).astype(np.int64)
        firsts = np.array([int(r[0]) if len(r) else 0 for r in self.runs], _U64)
        which = np.searchsorted(firsts, deps, side="right") - 1
        pos = np.empty(len(deps), np.int64)
        for k in np.unique(which).tolist():
            if k < 0:
                return None
            sel = which == k
            run, want = self.runs[k], deps[sel]
            at = np.minimum(np.searchsorted(run, want), len(run) - 1)
            if not bool((run[at] == want).all()):
                return None
            pos[sel] = at + self.starts[k]
        return pos


class _Slots:
    """Which slot of the frontier table (:class:`~._frontkernel.Frontiers`) keeps each node's
    frontier: its position while the ids ascend (:class:`_Ids`); from the first run whose ids do
    not, its id less the lowest id so far (2 bytes a slot, 4 once widened; at most
    :data:`_SLOTS_PER_NODE` slots a node: the ids of a converted PyTorch rank take about 4)."""

    def __init__(self, fronts: Frontiers) -> None:
        self.fronts = fronts
        self.ids = _Ids()
        self.by_id = False
        self.lo = self.hi = 0  # the id of slot 0 and the highest id so far, once slots are by id
        self.count = 0

    def place(self, ids: np.ndarray, deps: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The slots of a run's nodes and of their dependencies, reserved; None where the
        per-node path is to run (a dependency outside the ids so far, or ids too sparse)."""
        n = len(ids)
        if not self.by_id:
            start = self.ids.count
            if self.ids.add(ids):
                pos = self.ids.positions(deps)
                if pos is None:
                    return None
                self.fronts.reserve(0, start + n)
                self.count += n
                return np.arange(start, start + n, dtype=np.int64), pos
            if not self._by_id(int(ids.min()), n):
                return None
        lo, hi = min(self.lo, int(ids.min())), max(self.hi, int(ids.max()))
        if len(deps) and (int(deps.min()) < lo or int(deps.max()) > hi):
            return None
        self.count += n
        if _too_sparse(hi - lo, self.count):
            return None
        self.lo -= self.fronts.reserve(lo - self.lo, hi - self.lo + 1)
        self.hi = hi
        base = _U64(self.lo % (1 << 64))  # slot 0 may lie under id 0: differences wrap back
        return (ids - base).astype(np.int64), (deps - base).astype(np.int64)

    def _by_id(self, low: int, n: int) -> bool:
        """Move the frontiers so far to slots by id (``low``: the lowest id of the run that does
        not ascend, of ``n`` nodes); False when the ids so far are too sparse for a table."""
        old = self.ids.all()
        self.lo = min(low, int(old[0])) if len(old) else low
        self.hi = int(old[-1]) if len(old) else low
        if _too_sparse(self.hi - self.lo, self.count + n):
            return False
        self.fronts.reslot((old - _U64(self.lo)).astype(np.int64), self.hi - self.lo + 1)
        self.ids = _Ids()
        self.by_id = True
        return True


class _Record:
    """A rank's record for the set checks, built a run at a time (put into a RankCheck at the
    end, so that a rank left to the per-node path leaves it untouched)."""

    def __init__(self) -> None:
        self.colls: defaultdict[str, list[Call]] = defaultdict(list)
        self.roots: list[tuple[str, int, int, int]] = []
        self.sends: list[tuple[int, int, int, int]] = []
        self.recvs: list[tuple[int, int, int, int]] = []
        self.total_us = 0
        self.saw_group_node = False
        self.skel_pos = array("q")
        self.ids, self.kinds = array("Q"), bytearray()
        self.a, self.tag, self.size = array("q"), array("q"), array("q")

    def put(self, chk: RankCheck) -> None:
        chk.colls, chk.roots, chk.sends, chk.recvs = self.colls, self.roots, self.sends, self.recvs
        chk.total_us, chk.saw_group_node = self.total_us, self.saw_group_node
        chk.skel_ids, chk.skel_kinds = self.ids, self.kinds
        chk.skel_a, chk.skel_tag, chk.skel_size = self.a, self.tag, self.size


def scan_columns(rt: RankTrace, chk: RankCheck) -> RankScan | None:
    """The scan of a clean, ordered, file-backed rank, its record put into ``chk``; None for any
    other rank (``chk`` untouched: the per-node path is to run).  Needs numba (the ``fast``
    extra): the caller chose the compiled loops.  Memory: one run of columns, plus 2 bytes a node
    (10 when ids ascend and are not consecutive; 2 bytes an id from the lowest to the highest
    when they do not ascend) and the skeleton."""
    if not isinstance(rt, FileRank):
        return None
    from chakra_core.trace._columns import column_runs

    rec, slots = _Record(), _Slots(Frontiers())
    try:
        for cols in column_runs(rt, _ATTRS, decoded=True):
            if len(cols) and not _scan_run(cols, chk, slots, rec):
                return None
    except TraceFormatError:
        return None
    if slots.count == 0:
        return None
    ptr, preds = slots.fronts.csr()
    rec.put(chk)
    return RankScan(count=slots.count, skel_pos=rec.skel_pos, skel_ptr=array("q", ptr.tobytes()),
                    skel_preds=array("q", preds.tobytes()))


def _scan_run(cols: NodeColumns, chk: RankCheck, slots: _Slots, rec: _Record) -> bool:
    """Check one run and add it to the record; False where the per-node path is to run."""
    if cols.flags.any():
        return False
    types = cols.types
    if types.min() < 1 or types.max() > _COLL:
        return False
    dur = cols.duration_micros
    if int(dur.max()) > MAX_DURATION_US:
        return False
    rec.total_us += int(dur.sum())  # a run's sum of durations of at most 2^40 us fits in uint64
    if rec.total_us > MAX_RANK_DURATION_US:
        return False
    start = slots.count
    placed = slots.place(cols.ids, cols.dep_ids)
    if placed is None:
        return False
    at, dep_at = placed
    comm = (types != _META) & (types != 4)
    v = _values(cols, comm)
    if v is None:
        return False
    kinds = _kinds(types, v, dur, chk)
    if kinds is None or not slots.fronts.add(dep_at, cols.dep_ptr, kinds >= 0, at):
        return False
    _record(rec, chk, cols, v, kinds, start)
    return True


def _values(cols: NodeColumns, comm: np.ndarray) -> dict[str, np.ndarray] | None:
    """Per node the integer attributes (``has_*``: present) and the group name's index into
    ``pg`` (the list of names, "" first); None when an attribute of a communication or memory
    node holds a value of another kind, or a size is out of range."""
    out: dict[str, np.ndarray] = {}
    for name in _INTS:
        col = cols.attrs[name]
        if bool((col.present & ~col.is_int & comm).any()):
            return None
        out[name] = col.ints
        out["has_" + name] = col.is_int
    for name in ("comm_size", "tensor_size"):
        x = out[name][out["has_" + name] & comm]
        if len(x) and (int(x.min()) < 0 or int(x.max()) > ABSURD_BYTES):
            return None
    pg = cols.attrs["pg_name"]
    rows = np.flatnonzero(pg.present & comm)
    if len(rows) and bool((pg.slot[rows] != _STRING_SLOT).any()):
        return None
    names = list(map(pg.others.__getitem__, rows.tolist()))
    table, pg_names = {"": 0, "0": 0}, [""]
    for s in dict.fromkeys(names):
        if s not in table:
            table[s] = len(pg_names)
            pg_names.append(s)
    number = np.zeros(len(comm), np.int64)
    number[rows] = np.fromiter(map(table.__getitem__, names), np.int64, len(names))
    out["pg"] = number
    out["pg_names"] = np.array(pg_names, object)
    return out


def _kinds(types: np.ndarray, v: dict[str, np.ndarray], dur: np.ndarray, chk: RankCheck) -> np.ndarray | None:
    """The skeleton kind of each node (-1: not in the skeleton); None where a per-node rule has a
    finding."""
    kinds = np.full(len(types), -1, np.int8)
    mem = (types == _LOAD) | (types == _STORE)
    kinds[mem & ~(v["has_is_cpu_op"] & (v["is_cpu_op"] != 0))] = K_SLOT
    coll = types == _COLL
    if coll.any():
        if not bool((v["has_comm_type"][coll] & v["has_comm_size"][coll]).all()):
            return None
        if not bool(np.isin(v["comm_type"][coll], _COMM_TYPES).all()):
            return None
        slot = coll & (v["comm_type"] == _BROADCAST) & (dur > 0)  # _rank_rules.timed_broadcast
        kinds[coll] = K_COLL
        kinds[slot] = K_SLOT
    for t, peer, own, kind in ((_SEND, "comm_dst", "comm_src", K_SEND), (_RECV, "comm_src", "comm_dst", K_RECV)):
        rows = types == t
        if not rows.any():
            continue
        if not bool((v["has_" + peer][rows] & v["has_comm_tag"][rows] & v["has_comm_size"][rows]).all()):
            return None
        p = v[peer][rows]
        if int(p.min()) < 0 or int(p.max()) > chk.max_peer:
            return None
        if chk.rank_known and bool((p == chk.rank).any()):
            return None
        o = v["has_" + own][rows]
        if chk.rank_known and bool((v[own][rows][o] != chk.rank).any()):
            return None
        kinds[rows] = kind
    return kinds


def _first_seen(groups: np.ndarray) -> list[int]:
    """The distinct values of ``groups`` in the order they first occur."""
    if not len(groups):
        return []
    uniq, first = np.unique(groups, return_index=True)
    return uniq[np.argsort(first)].tolist()


def _record(rec: _Record, chk: RankCheck, cols: NodeColumns, v: dict[str, np.ndarray], kinds: np.ndarray,
            start: int) -> None:
    """Add one run (its first node at position ``start`` of the rank) to ``rec``, as the
    per-node path records it."""
    types, ids = cols.types, cols.ids
    pg_names = v["pg_names"].tolist()
    number = np.zeros(len(pg_names), np.int64)
    coll = np.flatnonzero(types == _COLL)
    matched = coll[kinds[coll] == K_COLL]  # not a timed broadcast (RankCheck._collective)
    for g in _first_seen(v["pg"][matched]):
        rows = matched[v["pg"][matched] == g] if len(pg_names) > 1 else matched
        rec.colls[pg_names[g]].extend(zip(ids[rows].tolist(), v["comm_type"][rows].tolist(),
                                          v["comm_size"][rows].tolist()))
        number[g] = chk.group_number(pg_names[g])
    rooted = coll[v["has_root"][coll] & np.isin(v["comm_type"][coll], _ROOTED)]
    rec.roots.extend(zip(map(pg_names.__getitem__, v["pg"][rooted].tolist()), ids[rooted].tolist(),
                         v["comm_type"][rooted].tolist(), v["root"][rooted].tolist()))
    for t, peer, out in ((_SEND, "comm_dst", rec.sends), (_RECV, "comm_src", rec.recvs)):
        rows = np.flatnonzero(types == t)
        out.extend(zip(v[peer][rows].tolist(), v["comm_tag"][rows].tolist(), v["comm_size"][rows].tolist(),
                       ids[rows].tolist()))
    skel = np.flatnonzero(kinds >= 0)
    k = kinds[skel]
    a = np.zeros(len(skel), np.int64)
    tag = np.zeros(len(skel), np.int64)
    size = np.zeros(len(skel), np.int64)
    is_coll = k == K_COLL
    a[is_coll] = number[v["pg"][skel[is_coll]]]
    tag[is_coll] = v["comm_type"][skel[is_coll]]
    size[is_coll] = v["comm_size"][skel[is_coll]]
    for kind, peer in ((K_SEND, "comm_dst"), (K_RECV, "comm_src")):
        m = k == kind
        a[m] = v[peer][skel[m]]
        tag[m] = v["comm_tag"][skel[m]]
        size[m] = v["comm_size"][skel[m]]
    rec.skel_pos.frombytes((skel + start).astype(np.int64).tobytes())
    rec.ids.frombytes(ids[skel].astype(np.uint64).tobytes())
    rec.kinds.extend(k.astype(np.uint8).tobytes())
    for column, x in ((rec.a, a), (rec.tag, tag), (rec.size, size)):
        column.frombytes(x.tobytes())
    meta = np.flatnonzero(types == _META)
    rec.saw_group_node = rec.saw_group_node or any(cols.name(i) == PG_INIT_NAME for i in meta.tolist())
