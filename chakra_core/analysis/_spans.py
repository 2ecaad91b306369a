"""Columnar spans: what a backend measured or simulated, one row per timed operation.

Every analysis (per-rank breakdown, cross-rank critical path, report, diff) and every timeline
reads :class:`Spans`; a simulator or an emulator builds them with :class:`SpanBuilder` from its own
records.  Columns are numpy arrays indexed by span; strings (names, tracks, groups, algorithms)
are interned in tables and the columns hold their indices.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chakra_core.base._errors import TraceFormatError

__all__ = ["Spans", "SpanBuilder", "SPAN_KINDS", "FLOW_KINDS", "OP_KINDS", "COMPUTE_KINDS", "COMM_KINDS", "IS_COMM",
           "GAP_KIND"]

#: what a span is; ``phase`` marks a part of a collective drawn on a queue track (a chunk on one
#: network dimension), which the analyses do not count again
SPAN_KINDS = ("compute", "cpu", "memory", "collective", "send", "recv", "other", "phase")
#: what a flow arrow joins: a dependency across tracks, the members of a collective, a send and its receive
FLOW_KINDS = ("dependency", "collective", "p2p")
COMPUTE_KINDS = (0, 1)
COMM_KINDS = (3, 4, 5)
#: per kind code (uint8): whether it is communication
IS_COMM = np.isin(np.arange(256), COMM_KINDS)
#: the kinds of operations (everything but ``phase``)
OP_KINDS = (0, 1, 2, 3, 4, 5, 6)
#: the kind code :meth:`Spans.activity_kinds` gives a recorded idle gap: in no set of kinds
GAP_KIND = 255

_INT_COLUMNS = {"rank": "q", "track": "i", "start_ns": "q", "dur_ns": "q", "name": "i", "kind": "B",
                "node_id": "q", "bytes": "q", "group": "i", "peer": "q", "algorithm": "i", "match": "q",
                "comm_type": "q", "replayed": "B"}
#: columns whose default is 0 (the others default to -1, "none")
_ZERO_COLUMNS = ("bytes", "track", "name", "kind", "rank", "start_ns", "dur_ns", "replayed")
#: columns a spans file written before they existed may lack (read as their default)
_ADDED_COLUMNS = ("replayed",)
_FORMAT = "chakra-spans/1"


class Spans:
    """Timed operations of a run in columns (times in ns, sizes in bytes).

    Columns (numpy arrays of one length): ``rank``, ``track`` (index into ``tracks``: the stream
    or queue of the rank the span ran on), ``start_ns``, ``dur_ns``, ``name`` (index into
    ``names``), ``kind`` (index into :data:`SPAN_KINDS`), ``node_id`` (the ET node, -1 none),
    ``bytes``, ``group`` and ``algorithm`` (indices into ``strings``, -1 none), ``peer`` (-1 none),
    ``match`` (spans of one collective instance or of one send/receive pair share it; -1 none),
    ``comm_type`` (the :class:`CommType` of a collective, -1 none), ``replayed`` (1 where a
    communication span lasted the trace's recorded duration instead of being timed by the
    backend's model, else 0: its bytes per ns say nothing of the modelled network).
    ``flow_src``, ``flow_dst`` (span indices) and ``flow_kind`` (index into :data:`FLOW_KINDS`)
    are arrows.  ``ranks_of`` maps a rank whose spans stand for a class of identical ranks to the
    class (a symmetric simulation); ``nranks`` is the number of ranks of the run.
    """

    def __init__(self, columns: Mapping[str, np.ndarray], names: Sequence[str], tracks: Sequence[str],
                 strings: Sequence[str], flows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                 ranks_of: Mapping[int, Sequence[int]] | None = None, nranks: int | None = None):
        n = len(columns["rank"])
        for key, code in _INT_COLUMNS.items():
            col = columns.get(key)
            dtype = np.uint8 if code == "B" else (np.int32 if code == "i" else np.int64)
            if col is None:
                col = np.full(n, 0 if key in _ZERO_COLUMNS else -1, dtype)
            col = np.ascontiguousarray(col, dtype=dtype)
            if len(col) != n:
                raise ValueError(f"span column {key!r} has {len(col)} rows, not {n}")
            setattr(self, key, col)
        self.names = list(names)
        self.tracks = list(tracks)
        self.strings = list(strings)
        empty = np.zeros(0, np.int64)
        src, dst, kind = flows if flows is not None else (empty, empty, np.zeros(0, np.uint8))
        self.flow_src = np.asarray(src, np.int64)
        self.flow_dst = np.asarray(dst, np.int64)
        self.flow_kind = np.asarray(kind, np.uint8)
        self.ranks_of = {int(k): [int(r) for r in v] for k, v in (ranks_of or {}).items()}
        if nranks is None:
            ranks = [r for v in self.ranks_of.values() for r in v] + ([int(self.rank.max())] if n else [])
            nranks = max(ranks) + 1 if ranks else 0
        self.nranks = int(nranks)

    rank: np.ndarray
    track: np.ndarray
    start_ns: np.ndarray
    dur_ns: np.ndarray
    name: np.ndarray
    kind: np.ndarray
    node_id: np.ndarray
    bytes: np.ndarray
    group: np.ndarray
    peer: np.ndarray
    algorithm: np.ndarray
    match: np.ndarray
    comm_type: np.ndarray
    replayed: np.ndarray

    def __len__(self) -> int:
        return len(self.rank)

    @property
    def end_ns(self) -> np.ndarray:
        """End times (ns), computed once (the columns are not changed in place)."""
        end = self.__dict__.get("_end_ns")
        if end is None or len(end) != len(self.start_ns):
            end = self.__dict__["_end_ns"] = self.start_ns + self.dur_ns
        return end

    def finish_ns(self) -> int:
        """The end of the last span (0 without spans)."""
        return int(self.end_ns.max()) if len(self) else 0

    def ranks(self) -> list[int]:
        """The ranks that have spans, ascending."""
        return [int(r) for r in np.unique(self.rank)]

    def stands_for(self, rank: int) -> list[int]:
        """The ranks whose times the spans of ``rank`` give (itself without symmetry)."""
        return self.ranks_of.get(rank, [rank])

    def weights(self) -> np.ndarray:
        """Per rank (by index), how many ranks its spans stand for (1 without symmetry)."""
        out = np.ones(max(self.nranks, int(self.rank.max()) + 1 if len(self) else 0), np.int64)
        for r, stood in self.ranks_of.items():
            out[r] = len(stood)
        return out

    def name_indices(self, names: Sequence[str]) -> list[int]:
        """The indices of ``names`` in the name table (those present)."""
        wanted = set(names)
        return [i for i, nm in enumerate(self.names) if nm in wanted]

    def name_of(self, i: int) -> str:
        """The name of span ``i``."""
        return self.names[self.name[i]]

    def string(self, index: int) -> str:
        """An entry of ``strings`` ("" for -1)."""
        return self.strings[index] if index >= 0 else ""

    def kind_names(self) -> np.ndarray:
        """The kind of every span as a string array."""
        return np.asarray(SPAN_KINDS, dtype=object)[self.kind]

    def activity_kinds(self) -> np.ndarray:
        """The kind code of every span, except :data:`GAP_KIND` for a recorded idle gap (an
        operation named ``[idle]``: the PyTorch input's time a thread waited for nothing), so
        that the breakdown, the critical path's categories and the utilisation count such a gap
        as idle time, not as compute."""
        from chakra_core.io._schema import IDLE_NAME

        gaps = self.name_indices((IDLE_NAME,))
        if not gaps:
            return self.kind
        return np.where(np.isin(self.name, gaps), np.uint8(GAP_KIND), self.kind)

    def ops(self) -> np.ndarray:
        """Indices of the spans that are operations (not collective phases)."""
        return (self.kind != SPAN_KINDS.index("phase")).nonzero()[0]

    def take(self, index: np.ndarray) -> Spans:
        """The spans at ``index`` (flows between kept spans are kept, renumbered)."""
        index = np.asarray(index, np.int64)
        cols = {k: getattr(self, k)[index] for k in _INT_COLUMNS}
        remap = np.full(len(self), -1, np.int64)
        remap[index] = np.arange(len(index))
        keep = (remap[self.flow_src] >= 0) & (remap[self.flow_dst] >= 0) if len(self.flow_src) else \
            np.zeros(0, bool)
        flows = (remap[self.flow_src[keep]], remap[self.flow_dst[keep]], self.flow_kind[keep])
        return Spans(cols, self.names, self.tracks, self.strings, flows, self.ranks_of, self.nranks)

    def scaled(self, factors: Mapping[str, float]) -> Spans:
        """A copy whose spans of the given kinds last ``factor`` times as long (starts unchanged)."""
        cols = {k: getattr(self, k).copy() for k in _INT_COLUMNS}
        for kind, f in factors.items():
            sel = self.kind == SPAN_KINDS.index(kind)
            cols["dur_ns"][sel] = np.round(cols["dur_ns"][sel] * f).astype(np.int64)
        return Spans(cols, self.names, self.tracks, self.strings,
                     (self.flow_src, self.flow_dst, self.flow_kind), self.ranks_of, self.nranks)

    def save(self, path: str | Path) -> Path:
        """Write the spans to ``path`` (a compressed numpy ``.npz``), atomically."""
        from chakra_core.io._etio import atomic_output, open_fresh

        path = Path(path)
        meta = {"format": _FORMAT, "names": self.names, "tracks": self.tracks, "strings": self.strings,
                "ranks_of": {str(k): v for k, v in self.ranks_of.items()}, "nranks": self.nranks}
        arrays = {k: getattr(self, k) for k in _INT_COLUMNS}
        arrays.update(flow_src=self.flow_src, flow_dst=self.flow_dst, flow_kind=self.flow_kind)
        with atomic_output(path) as tmp, open_fresh(tmp) as f:
            np.savez_compressed(f, meta=np.array(json.dumps(meta)), **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Spans:
        """Read spans written by :meth:`save` (a TraceFormatError naming ``path`` when it is not one:
        a damaged archive, a column of another length, an index past its table)."""
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
                    raise ValueError(f"format {meta.get('format') if isinstance(meta, dict) else meta!r}")
                cols = {k: z[k] for k in _INT_COLUMNS if k in z or k not in _ADDED_COLUMNS}
                flows = (z["flow_src"], z["flow_dst"], z["flow_kind"])
            spans = cls(cols, _strings(meta, "names"), _strings(meta, "tracks"), _strings(meta, "strings"),
                        flows, {int(k): [int(r) for r in v] for k, v in dict(meta["ranks_of"]).items()},
                        int(meta["nranks"]))
            _check_indices(spans)
        except (OSError, EOFError, ValueError, KeyError, TypeError, OverflowError, RecursionError,
                zlib.error, zipfile.BadZipFile) as e:
            raise TraceFormatError(f"not a spans file written by chakra ({type(e).__name__}: {e})",
                                   str(path)) from None
        return spans

    def frame(self) -> Any:
        """The spans as a pandas DataFrame (strings resolved; needs the ``report`` extra)."""
        from chakra_core.base._need import need

        pd = need("pandas")
        return pd.DataFrame({
            "rank": self.rank, "track": np.asarray(self.tracks, dtype=object)[self.track],
            "start_ns": self.start_ns, "dur_ns": self.dur_ns,
            "name": np.asarray(self.names, dtype=object)[self.name], "kind": self.kind_names(),
            "node_id": self.node_id, "bytes": self.bytes,
            "group": _lookup(self.strings, self.group), "peer": self.peer,
            "algorithm": _lookup(self.strings, self.algorithm), "match": self.match,
            "comm_type": self.comm_type, "replayed": self.replayed.astype(bool),
        })


def _strings(meta: Mapping[str, Any], key: str) -> list[str]:
    values = meta[key]
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"meta {key!r} is not a list of strings")
    return values


def _check_indices(spans: Spans) -> None:
    """Raise ValueError when a column is not a list of numbers, indexes past its table, names no
    communication type, or a time is negative."""
    from chakra_core.io._schema import CommType

    for key in (*_INT_COLUMNS, "flow_src", "flow_dst", "flow_kind"):
        if getattr(spans, key).ndim != 1:
            raise ValueError(f"column {key!r} has {getattr(spans, key).ndim} dimensions, not 1")
    n = len(spans)
    bounds = {"name": (0, len(spans.names)), "track": (0, len(spans.tracks)), "kind": (0, len(SPAN_KINDS)),
              "group": (-1, len(spans.strings)), "algorithm": (-1, len(spans.strings)),
              "rank": (0, 1 << 31), "start_ns": (0, 1 << 63), "dur_ns": (0, 1 << 63),
              "comm_type": (-1, len(CommType)), "replayed": (0, 2)}
    for key, (low, high) in bounds.items():
        col = getattr(spans, key)
        if n and (int(col.min()) < low or int(col.max()) >= high):
            raise ValueError(f"column {key!r} holds values outside [{low}, {high})")
    if not len(spans.flow_src) == len(spans.flow_dst) == len(spans.flow_kind):
        raise ValueError("flow columns of different lengths")
    for key, high in (("flow_src", n), ("flow_dst", n), ("flow_kind", len(FLOW_KINDS))):
        col = getattr(spans, key)
        if len(col) and (int(col.min()) < 0 or int(col.max()) >= high):
            raise ValueError(f"column {key!r} holds values outside [0, {high})")
    if spans.nranks < 0 or spans.nranks > 1 << 31:
        raise ValueError(f"nranks {spans.nranks}")


def _lookup(table: list[str], index: np.ndarray) -> np.ndarray:
    values = np.asarray(table + [""], dtype=object)
    return values[np.where(index >= 0, index, len(table))]


class SpanBuilder:
    """Collects spans row by row (:meth:`add`) or in bulk (:meth:`extend`); :meth:`build` makes
    the :class:`Spans`."""

    def __init__(self, nranks: int | None = None):
        self.nranks = nranks
        self._cols = {k: array(code) for k, code in _INT_COLUMNS.items()}
        #: earlier rows, in order: blocks of whole columns (numpy arrays)
        self._blocks: list[dict[str, np.ndarray]] = []
        self._rows = 0
        self._tables: dict[str, dict[str, int]] = {"names": {}, "tracks": {}, "strings": {}}
        self._flows = (array("q"), array("q"), array("B"))
        self._flow_blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.ranks_of: dict[int, list[int]] = {}

    def intern(self, table: str, value: str) -> int:
        """The index of ``value`` in the table ``names``, ``tracks`` or ``strings``."""
        t = self._tables[table]
        i = t.get(value)
        if i is None:
            i = t[value] = len(t)
        return i

    def add(self, rank: int, track: str, start_ns: int, dur_ns: int, name: str, kind: str, *,
            node_id: int = -1, bytes: int = 0, group: str = "", peer: int = -1, algorithm: str = "",
            match: int = -1, comm_type: int = -1, replayed: bool = False) -> int:
        """Append one span (times in ns); returns its index (``replayed``: a communication
        span that lasted its recorded duration, see :class:`Spans`)."""
        c = self._cols
        c["rank"].append(rank)
        c["track"].append(self.intern("tracks", track))
        c["start_ns"].append(start_ns)
        c["dur_ns"].append(dur_ns)
        c["name"].append(self.intern("names", name))
        c["kind"].append(SPAN_KINDS.index(kind))
        c["node_id"].append(node_id)
        c["bytes"].append(bytes)
        c["group"].append(self.intern("strings", group) if group else -1)
        c["peer"].append(peer)
        c["algorithm"].append(self.intern("strings", algorithm) if algorithm else -1)
        c["match"].append(match)
        c["comm_type"].append(comm_type)
        c["replayed"].append(int(replayed))
        self._rows += 1
        return self._rows - 1

    def extend(self, columns: Mapping[str, Iterable[int]]) -> None:
        """Append many spans: integer columns as in :class:`Spans`, with ``track``, ``name``,
        ``group`` and ``algorithm`` already interned (see :meth:`intern`) and ``kind`` an index
        into :data:`SPAN_KINDS`; a column left out takes its default (-1, or 0 for ``bytes`` and
        ``replayed``).
        A numpy array that owns its data and has the column's dtype is kept, not copied: it must
        not be changed afterwards."""
        n = len(np.asarray(columns["rank"]))
        self._flush_rows()
        block = {}
        for key, col in self._cols.items():
            values = columns.get(key)
            dtype = np.dtype(col.typecode)
            if values is None:
                block[key] = np.full(n, 0 if key in ("bytes", "track", "name", "kind", "replayed") else -1, dtype)
            elif isinstance(values, np.ndarray) and values.dtype == dtype and values.flags.owndata \
                    and values.flags.c_contiguous and values.ndim == 1:
                block[key] = values
            else:
                block[key] = np.array(values, dtype=dtype)
        self._blocks.append(block)
        self._rows += n

    def flow(self, src: int, dst: int, kind: str) -> None:
        """An arrow from span ``src`` to span ``dst`` (kind from :data:`FLOW_KINDS`)."""
        self._flows[0].append(src)
        self._flows[1].append(dst)
        self._flows[2].append(FLOW_KINDS.index(kind))

    def flows(self, src: Iterable[int], dst: Iterable[int], kind: str) -> None:
        """Arrows from spans ``src[i]`` to spans ``dst[i]`` (one kind from :data:`FLOW_KINDS`)."""
        self._flush_flows()
        s, d = np.array(src, np.int64), np.array(dst, np.int64)
        self._flow_blocks.append((s, d, np.full(len(s), FLOW_KINDS.index(kind), np.uint8)))

    def __len__(self) -> int:
        return self._rows

    def _flush_rows(self) -> None:
        """Move the rows added one by one into a block."""
        if len(self._cols["rank"]):
            self._blocks.append({k: np.array(v, np.dtype(v.typecode)) for k, v in self._cols.items()})
            self._cols = {k: array(v.typecode) for k, v in self._cols.items()}

    def _flush_flows(self) -> None:
        """Move the arrows added one by one into a block."""
        if len(self._flows[0]):
            self._flow_blocks.append(tuple(np.array(f, np.dtype(f.typecode)) for f in self._flows))  # type: ignore[arg-type]
            self._flows = (array("q"), array("q"), array("B"))

    def build(self) -> Spans:
        """The spans collected so far."""
        self._flush_rows()
        self._flush_flows()
        cols = {k: _joined([b[k] for b in self._blocks], np.dtype(v.typecode)) for k, v in self._cols.items()}
        flows = tuple(_joined([b[j] for b in self._flow_blocks], np.dtype(f.typecode))
                      for j, f in enumerate(self._flows))
        t = self._tables
        return Spans(cols, list(t["names"]), list(t["tracks"]), list(t["strings"]),
                     flows, self.ranks_of, self.nranks)  # type: ignore[arg-type]


def _joined(parts: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    """The blocks of one column end to end."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)
