"""One rank's statistics (:func:`chakra_core.trace._stats.compute_stats`) from its columns: a run
of nodes at a time (:func:`._columns.column_runs`, 1 MiB of the file), the counts and sums as
array operations and the longest path by :class:`._pathkernel.PathRuns` (ids ascending) or, for
a rank whose ids do not, by :class:`._pathsorted.SortedPath` in a second pass, so that memory
stays flat (the path's 12 bytes a node, 16 for ids out of order, and one run's columns).
Values are those of the node-by-node tally: the attributes read as :func:`get_int` reads them,
sums as Python integers.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from chakra_core.io._schema import COMM_TYPE_NAMES, NodeType
from chakra_core.trace._graph import PathStream
from chakra_core.trace._pathkernel import PathRuns
from chakra_core.trace._pathsorted import SortedPath
from chakra_core.trace._traceset import FileRank

if TYPE_CHECKING:
    from chakra_core.trace._columns import AttrColumn, NodeColumns

__all__ = ["RankTally", "tally_columns"]

_COMP, _SEND, _RECV, _COLL = (int(t) for t in (NodeType.COMP_NODE, NodeType.COMM_SEND_NODE,
                                                NodeType.COMM_RECV_NODE, NodeType.COMM_COLL_NODE))
_NAMES = {int(t): t.name for t in NodeType}


class RankTally:
    """What one rank adds to the statistics: node count, counts by type name and of unknown
    type numbers, collectives by kind ({"count", "bytes"}), compute microseconds and
    communication bytes, and the longest path so far (``path``: a :class:`PathRuns`, from the
    first run whose ids do not ascend a :class:`SortedPath` (its first pass), or the
    :class:`PathStream` of a rank read node by node; None when not asked, as it starts;
    ``overflow``: the position where it passed 2^63-1 us, else -1)."""

    def __init__(self) -> None:
        self.nodes = 0
        self.by_type: Counter = Counter()
        self.unknown: Counter = Counter()
        self.colls: dict[str, dict[str, int]] = {}
        self.compute_us = 0
        self.comm_bytes = 0
        self.path: PathRuns | SortedPath | PathStream | None = None
        self.overflow = -1

    def add(self, cols: NodeColumns) -> None:
        """Count one run of columns."""
        self.nodes += len(cols)
        types, counts = np.unique(cols.types, return_counts=True)
        for t, c in zip(types.tolist(), counts.tolist()):
            self.by_type[_NAMES.get(t, str(t))] += c
            if t not in _NAMES:
                self.unknown[str(t)] += c
        comp = cols.types == _COMP
        self.compute_us += _total(cols.duration_micros[comp])
        comm = np.flatnonzero((cols.types == _SEND) | (cols.types == _RECV) | (cols.types == _COLL))
        if len(comm):
            self._comm(cols, comm)
        if isinstance(self.path, PathRuns) and self.overflow < 0:
            self.overflow = self.path.add(cols.ids, cols.dep_ptr, cols.dep_ids, cols.duration_micros)
            if self.path.unordered:  # ids out of order: the path is taken in two passes
                self.path = SortedPath(self.path.ids())
                self.path.collect(cols.ids)
        elif isinstance(self.path, SortedPath):
            self.path.collect(cols.ids)

    def _comm(self, cols: NodeColumns, rows: np.ndarray) -> None:
        """The communication nodes ``rows`` of a run: bytes and kinds."""
        sizes = _ints(cols.attrs["comm_size"], rows, 0)
        self.comm_bytes += _total(sizes)
        types = cols.types[rows]
        kinds = _ints(cols.attrs["comm_type"], rows, -1)
        for mask, kind in ((types == _SEND, "SEND"), (types == _RECV, "RECV")):
            if mask.any():
                self.add_comm(kind, int(mask.sum()), _total(sizes[mask]))
        coll = types == _COLL
        for ct in np.unique(kinds[coll]).tolist():
            mask = coll & (kinds == ct)
            self.add_comm(COMM_TYPE_NAMES.get(ct, f"UNKNOWN_{ct}"), int(mask.sum()), _total(sizes[mask]))

    def add_comm(self, kind: str, count: int, size: int) -> None:
        """Count ``count`` communication nodes of ``kind`` moving ``size`` bytes."""
        c = self.colls.setdefault(kind, {"count": 0, "bytes": 0})
        c["count"] += count
        c["bytes"] += size


def _ints(col: AttrColumn, rows: np.ndarray, default: int) -> np.ndarray:
    """``col.get_int(i, default) or 0`` of ``rows`` (with ``default`` 0 or -1) as an object
    array when a value is past int64, else int64."""
    values = np.where(col.is_int[rows], col.ints[rows], default)
    wide = [(k, col.get_int(i, default)) for k, i in enumerate(rows.tolist()) if i in col.others]
    if wide:
        values = values.astype(object)
        for k, v in wide:
            values[k] = v
    return values


def _total(values: np.ndarray) -> int:
    """The exact sum of integers (a Python int)."""
    if not len(values):
        return 0
    if values.dtype != object:
        lo, hi = int(values.min()), int(values.max())
        if max(-lo, hi) * len(values) < (1 << 63):
            return int(values.sum(dtype=np.int64 if lo < 0 else np.uint64))
    return sum(values.tolist())


def tally_columns(rt: Any, longest_path: bool) -> RankTally | None:
    """The rank's tally from its columns (every node message decoded whole as well, so that a
    damaged one is not passed over); None for a rank not read from an ``.et`` file."""
    if type(rt) is not FileRank:
        return None
    from chakra_core.trace._columns import column_runs  # needs numba

    tally = RankTally()
    if longest_path:
        tally.path = PathRuns(compile_it=True)  # column_runs runs its loops compiled too
    for cols in column_runs(rt, ("comm_size", "comm_type"), decoded=True):
        tally.add(cols)
    return tally
