"""A rank's per-node rules and its record for the set checks, from its columns.

:func:`scan_columns` reads a file-backed rank once as :func:`~chakra_core.trace._columns.node_columns`
(one compiled walk of the wire bytes) and settles the rules of :class:`._rank_rules.RankCheck`
and the dependency checks of :func:`._skeleton.scan_rank` with array operations.  It gives the
rank's record only when the rank is clean and ordered (ids ascend, every dependency names an
earlier node): then no per-node rule has anything to say and the record is the one the per-node
path builds.  Any other rank (a finding to word, an attribute in an unusual form, a wire fault,
a rank not backed by a file) is left to the per-node path, which words every finding.
"""

from __future__ import annotations

from array import array
from collections import defaultdict

import numpy as np

from chakra_core.base._errors import TraceFormatError
from chakra_core.io._schema import COMM_TYPE_NAMES, PG_INIT_NAME
from chakra_core.trace._columns import NodeColumns, node_columns
from chakra_core.trace._traceset import FileRank, RankTrace
from chakra_core.validation._deadlock import K_COLL, K_RECV, K_SEND, K_SLOT
from chakra_core.validation._frontkernel import OK, skeleton_csr
from chakra_core.validation._rank_rules import ABSURD_BYTES, MAX_DURATION_US, MAX_RANK_DURATION_US, RankCheck
from chakra_core.validation._skeleton import RankScan

__all__ = ["scan_columns"]

_INTS = ("comm_type", "comm_size", "tensor_size", "comm_src", "comm_dst", "comm_tag", "is_cpu_op")
_ATTRS = _INTS + ("pg_name",)
_META, _LOAD, _STORE, _SEND, _RECV, _COLL = 1, 2, 3, 5, 6, 7
_STRING_SLOT = 29
_BROADCAST = 5
#: nodes past which a uint64 sum of durations of at most 2^40 us could wrap
_MAX_NODES = 1 << 23
_COMM_TYPES = np.array(sorted(COMM_TYPE_NAMES), np.int64)


def scan_columns(rt: RankTrace, chk: RankCheck) -> RankScan | None:
    """The scan of a clean, ordered, file-backed rank, its record put into ``chk``; None for any
    other rank (``chk`` untouched: the per-node path is to run)."""
    if not isinstance(rt, FileRank):
        return None
    try:
        cols = node_columns(rt, _ATTRS)
    except TraceFormatError:
        return None
    n = len(cols)
    if n == 0 or n > _MAX_NODES or cols.flags.any():
        return None
    types = cols.types
    if types.min() < 1 or types.max() > _COLL:
        return None
    dur = cols.duration_micros
    if int(dur.max()) > MAX_DURATION_US or int(dur.sum()) > MAX_RANK_DURATION_US:
        return None
    dep_pos = _dependency_positions(cols)
    if dep_pos is None:
        return None
    comm = (types != _META) & (types != 4)
    v = _values(cols, comm)
    if v is None:
        return None
    kinds = _kinds(types, v, dur, chk)
    if kinds is None:
        return None
    status, ptr, preds = skeleton_csr(dep_pos, cols.dep_ptr, kinds >= 0)
    if status != OK:
        return None
    _record(chk, cols, v, kinds, int(dur.sum()))
    skel = np.flatnonzero(kinds >= 0)
    return RankScan(count=n, skel_pos=array("q", skel.astype(np.int64).tobytes()),
                    skel_ptr=array("q", ptr.tobytes()), skel_preds=array("q", preds.tobytes()))


def _dependency_positions(cols: NodeColumns) -> np.ndarray | None:
    """The file position of each dependency; None unless ids ascend and every dependency names
    an earlier node that is in the file."""
    ids, deps = cols.ids, cols.dep_ids
    if len(ids) > 1 and not bool((ids[1:] > ids[:-1]).all()):
        return None
    owner = np.repeat(ids, np.diff(cols.dep_ptr))
    if not bool((deps < owner).all()):
        return None
    pos = np.searchsorted(ids, deps)
    if not bool((ids[np.minimum(pos, len(ids) - 1)] == deps).all()):
        return None
    return pos.astype(np.int64)


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
    names = [pg.others[i] for i in rows.tolist()]
    table = {"": 0, "0": 0}
    number = np.zeros(len(comm), np.int64)
    number[rows] = [table.setdefault(s, len(table) - 1) for s in names]
    out["pg"] = number
    out["pg_names"] = np.array([""] + [s for s in table if s not in ("", "0")], object)
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
        slot = coll & (v["comm_type"] == _BROADCAST) & (dur > 0)
        kinds[coll] = K_COLL
        kinds[slot] = K_SLOT
    for t, peer, own, kind in ((_SEND, "comm_dst", "comm_src", K_SEND), (_RECV, "comm_src", "comm_dst", K_RECV)):
        rows = types == t
        if not rows.any():
            continue
        if not bool((v["has_" + peer][rows] & v["has_comm_tag"][rows] & v["has_comm_size"][rows]).all()):
            return None
        p = v[peer][rows]
        if int(p.min()) < 0 or (chk.nranks > 1 and int(p.max()) >= chk.nranks):
            return None
        if chk.rank_known and bool((p == chk.rank).any()):
            return None
        o = v["has_" + own][rows]
        if chk.rank_known and bool((v[own][rows][o] != chk.rank).any()):
            return None
        kinds[rows] = kind
    return kinds


def _record(chk: RankCheck, cols: NodeColumns, v: dict[str, np.ndarray], kinds: np.ndarray, total: int) -> None:
    """Put the rank's record into ``chk``, as the per-node path builds it."""
    types, ids = cols.types, cols.ids
    pg_names = v["pg_names"].tolist()
    coll = np.flatnonzero(types == _COLL)
    colls: defaultdict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for nid, ct, size, g in zip(ids[coll].tolist(), v["comm_type"][coll].tolist(), v["comm_size"][coll].tolist(),
                                v["pg"][coll].tolist()):
        colls[pg_names[g]].append((nid, ct, size))
    chk.colls = colls
    number = np.zeros(len(pg_names), np.int64)
    seen = v["pg"][coll[kinds[coll] == K_COLL]]
    if len(seen):
        uniq, first = np.unique(seen, return_index=True)
        for g in uniq[np.argsort(first)].tolist():
            number[g] = chk.group_number(pg_names[g])
    for t, peer, out in ((_SEND, "comm_dst", chk.sends), (_RECV, "comm_src", chk.recvs)):
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
    chk.skel_ids = array("Q", ids[skel].astype(np.uint64).tobytes())
    chk.skel_kinds = bytearray(k.astype(np.uint8).tobytes())
    chk.skel_a, chk.skel_tag, chk.skel_size = (array("q", x.tobytes()) for x in (a, tag, size))
    chk.total_us = total
    meta = np.flatnonzero(types == _META)
    chk.saw_group_node = any(cols.name(i) == PG_INIT_NAME for i in meta.tolist())
