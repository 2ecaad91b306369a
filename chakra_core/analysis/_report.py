"""``chakra report``: what a run's spans say, as JSON, text, pandas DataFrames and an HTML page.

A report is built from spans: those a simulator or emulator keeps in its Result (a trace set is
simulated first, with the given system), or those written next to a ``result.json``
(``spans.npz``).  "What if" estimates come from the critical path and, when a trace set and a
simulator are at hand, are checked by simulating the scaled set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chakra_core.analysis._spans import COMM_KINDS, SPAN_KINDS, Spans
from chakra_core.base._errors import ConfigError, TraceFormatError
from chakra_core.base._inputguard import note_inputs
from chakra_core.io._schema import IDLE_NAME
from chakra_core.trace._columns import NodeColumns, node_columns
from chakra_core.trace._graph import positions_of
from chakra_core.trace._traceset import TraceSet

__all__ = ["Report", "analyse", "spans_of_result", "read_result", "parse_what_if", "check_run_of", "report_format",
           "REPORT_FORMATS"]

#: what-if targets: span kinds, and the ``scale`` transform option that checks them
_TARGETS = {
    "compute": (("compute", "cpu"), "compute_speedup"),
    "accelerator": (("compute",), None),
    "cpu": (("cpu",), None),
    "comm": (tuple(SPAN_KINDS[k] for k in COMM_KINDS), "comm_scale"),
    "collective": (("collective",), None),
    "memory": (("memory",), "memory_scale"),
}


class Report:
    """The numbers of one run (``data``, JSON-able) and its ``spans``."""

    def __init__(self, data: dict[str, Any], spans: Spans):
        self.data = data
        self.spans = spans

    def to_dict(self) -> dict[str, Any]:
        """What ``chakra report --json`` prints."""
        return self.data

    def frames(self) -> dict[str, Any]:
        """pandas DataFrames: ``ranks``, ``operators``, ``collectives``, ``critical_path``,
        ``stragglers``, ``spans`` (needs the ``report`` extra)."""
        from chakra_core.base._need import need

        pd = need("pandas")
        d = self.data
        return {"ranks": pd.DataFrame(d["ranks"]), "operators": pd.DataFrame(d["top_operators"]),
                "collectives": pd.DataFrame(d["collectives"]),
                "critical_path": pd.DataFrame(d["critical_path"]["nodes"]),
                "stragglers": pd.DataFrame(d["stragglers"]), "spans": self.spans.frame()}

    def dataframe(self) -> Any:
        """The per-rank breakdown as a pandas DataFrame indexed by rank."""
        return self.frames()["ranks"].set_index("rank")

    def text(self, top: int = 10) -> str:
        """The report as text."""
        from chakra_core.analysis._report_text import format_report

        return format_report(self.data, top)

    def json(self) -> str:
        """The report as indented JSON (what ``chakra report --json`` prints)."""
        return json.dumps(self.data, indent=2, default=str)

    def write_html(self, path: str | os.PathLike) -> Path:
        """Write the self-contained HTML page (plots embedded) to ``path``, atomically."""
        from chakra_core.analysis._html import write_report_html

        return write_report_html(self.data, self.spans, Path(path))

    def write(self, path: str | os.PathLike) -> Path:
        """Write the report to ``path`` in the format of its suffix (:func:`report_format`): the
        HTML page (:meth:`write_html`), the JSON of :meth:`json` or the :meth:`text`, atomically."""
        from chakra_core.io._etio import atomic_output

        fmt = report_format(path)
        if fmt == "HTML":
            return self.write_html(path)
        with atomic_output(Path(path)) as tmp:
            tmp.write_text((self.json() if fmt == "JSON" else self.text()) + "\n", encoding="utf-8",
                           errors="backslashreplace")
        return Path(path)


#: what a report is written as (``chakra report -o``), by the file's suffix
REPORT_FORMATS = {".html": "HTML", ".htm": "HTML", ".json": "JSON", ".txt": "text"}


def report_format(path: str | os.PathLike) -> str:
    """What a report is written to ``path`` as (:data:`REPORT_FORMATS`, by its suffix, in any
    case); a ConfigError naming the path for another suffix."""
    fmt = REPORT_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ConfigError("-o: a report is written by the file's suffix: the HTML page (.html, .htm), the JSON "
                          "--json prints (.json) or the text (.txt); this file has none of them", str(path))
    return fmt


#: the what-if factors taken (times faster): a million times faster or slower, beyond any design
#: studied, and a step time that still fits the 64-bit nanoseconds of results
WHAT_IF_FACTORS = (1e-6, 1e6)


def parse_what_if(specs: Sequence[str] | None) -> list[tuple[str, str, float]]:
    """``["compute=2", "name:aten::mm=1.5"]`` as ``[(kind, target, factor)]`` (kind ``kind`` or ``name``)."""
    out = []
    for spec in specs or ():
        target, sep, value = str(spec).rpartition("=")
        try:
            factor = float(value)
        except ValueError:
            factor = 0.0
        if not sep or not WHAT_IF_FACTORS[0] <= factor <= WHAT_IF_FACTORS[1]:  # nan too
            low, high = WHAT_IF_FACTORS
            raise ConfigError(f"what-if {spec!r}: expected TARGET=FACTOR with a finite FACTOR from {low:g} to "
                              f"{high:g} (times faster; e.g. compute=2, name:aten::mm=1.5, comm=0.5)")
        if target.startswith("name:") and target[5:]:
            out.append(("name", target[5:], factor))
        elif target in _TARGETS:
            out.append(("kind", target, factor))
        else:
            raise ConfigError(f"what-if target {target!r}: expected one of {', '.join(_TARGETS)} or name:OPERATOR")
    return out


def analyse(spans: Spans, *, what_if: Sequence[str] | None = None, top: int = 20, threshold: float = 0.1,
            source: Mapping[str, Any] | None = None, resimulate: Any = None,
            groups: Mapping[str, Sequence[int]] | None = None) -> Report:
    """Build a :class:`Report` from ``spans``; ``resimulate(option, factor)`` (or None) returns
    the finish time (ns) and the spans of a re-simulation with the ``scale`` transform option set; ``groups``
    (the trace set's process groups, when at hand) gives each collective group's members."""
    from chakra_core.analysis._breakdown import breakdown
    from chakra_core.analysis._critical import critical_path
    from chakra_core.analysis._opclass import operator_classes, operator_families
    from chakra_core.analysis._rankroles import group_shapes, rank_roles
    from chakra_core.analysis._tables import (
        collectives,
        memory_traffic,
        stragglers,
        top_operators,
        utilisation,
        variance,
    )

    rows = breakdown(spans, range(spans.nranks))
    cp = critical_path(spans)
    roles = rank_roles(spans)
    finish = cp.finish_ns
    keys = ("finish_ns", "compute_ns", "exposed_comm_ns", "exposed_mem_ns", "idle_ns", "gap_ns", "comm_ns", "mem_ns",
            "overlap_ns", "skew_ns", "cpu_ns", "accelerator_ns")
    totals = {k: sum(int(r.get(k, 0)) for r in rows) for k in keys}
    totals["finish_ns"] = finish
    data: dict[str, Any] = {
        "time_unit": "ns",
        "source": dict(source or {}),
        "finish_ns": finish,
        "nranks": spans.nranks,
        "spans": len(spans),
        "totals": totals,
        "utilisation": {"compute": round(totals["compute_ns"] / (finish * max(len(rows), 1)), 4) if finish else 0.0,
                        "over_time": utilisation(spans)},
        "ranks": rows,
        "variance": variance(rows),
        "roles": _roles(roles),
        "stragglers": stragglers(rows, threshold, roles),
        "top_operators": top_operators(spans, top),
        "operator_classes": operator_classes(spans, totals["idle_ns"] - totals["gap_ns"]),
        "operator_families": operator_families(spans, top),
        "collectives": _with_shapes(collectives(spans), group_shapes(spans, groups)),
        "memory": memory_traffic(spans),
        "critical_path": cp.to_dict(spans),
        "what_if": [_what_if(spans, cp, finish, kind, target, factor, resimulate)
                    for kind, target, factor in parse_what_if(what_if)],
    }
    data["notes"] = _member_notes(data["collectives"], rows)
    return Report(data, spans)


def _member_notes(collectives: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[str]:
    """A note when groups have no shape because the spans are a symmetric run's (one rank per
    class) and the trace set is not at hand."""
    unknown = {c["group"] for c in collectives if "group_shape" not in c} - {"all", "p2p"}
    if not unknown or all(r["rank"] == r.get("simulated_as", r["rank"]) for r in rows):
        return []
    return [f"members: unknown for {len(unknown):,} group(s) ({', '.join(sorted(unknown)[:5])}"
            f"{', ...' if len(unknown) > 5 else ''}), a symmetric run without the trace set (spans of one rank "
            "per class; chakra report SET --result R shows them)"]


def _roles(roles: dict[int, int]) -> list[dict[str, Any]]:
    """``[{"role", "ranks"}]``: the ranks of each role (same operations, counted)."""
    out: dict[int, list[int]] = {}
    for rank, role in roles.items():
        out.setdefault(role, []).append(rank)
    return [{"role": role, "ranks": ranks} for role, ranks in sorted(out.items())]


def _with_shapes(rows: list[dict[str, Any]], shapes: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The collectives' rows with each group's shape (``group_ranks``, ``group_shape``,
    ``groups_like_it``)."""
    for r in rows:
        shape = shapes.get(r["group"])
        if shape:
            r.update(group_ranks=len(shape["ranks"]), group_shape=shape["label"], groups_like_it=shape["like"])
    return rows


#: the targets whose time leaves out idle gaps (the ``[idle]`` nodes, not compute: the ``scale``
#: transform's selection leaves them out too)
_NO_GAPS = ("compute", "accelerator", "cpu")
#: what the ``scale`` option of each target changes, and what does not follow it
_SCALES = {"compute_speedup": "scale divides compute durations (to no less than 1 us each), which a compute "
                              "model other than replay does not read",
           "comm_scale": "scale divides communication sizes, which per-message latency, collectives that "
                         "replay a recorded duration and comm=replay do not follow",
           "memory_scale": "scale divides memory sizes, which a memory that replays recorded durations does "
                           "not follow"}


def _what_if(spans: Spans, cp: Any, finish: int, kind: str, target: str, factor: float,
             resimulate: Any) -> dict[str, Any]:
    if kind == "kind":
        on_path = cp.weighted_ns(spans, kinds=_TARGETS[target][0], but=_gaps(target))
    else:
        on_path = cp.weighted_ns(spans, names=(target,))
    saved = int(round(on_path * (1 - 1 / factor)))
    out: dict[str, Any] = {"target": target if kind == "kind" else f"name:{target}", "factor": factor,
                           "on_critical_path_ns": on_path, "estimated_finish_ns": finish - saved,
                           "estimated_change_ns": -saved,
                           "estimated_change_pct": round(-100 * saved / finish, 2) if finish else 0.0}
    option = _TARGETS[target][1] if kind == "kind" else None
    if resimulate is not None and option is not None:
        value = factor if option == "compute_speedup" else 1 / factor
        sim, sim_spans = resimulate(option, value)
        out.update(resimulated_finish_ns=sim, resimulated_change_ns=sim - finish,
                   resimulated_with=f"scale {option}={value:g}")
        out.update(_achieved(spans, sim_spans, target, factor, option))
    elif resimulate is not None:
        out["resimulated_with"] = None
        out["note"] = "no transform scales this target alone: estimate only"
    if kind == "name" and target not in spans.names:
        out["note"] = f"no operation is named {target!r}: nothing to scale (names are exact; see top_operators)"
    return out


def _gaps(target: str) -> tuple[str, ...]:
    """The span names a target's time leaves out: the idle gaps, for the compute targets."""
    return (IDLE_NAME,) if target in _NO_GAPS else ()


def _target_ns(spans: Spans, target: str) -> int:
    """The time of ``target``'s spans, each counted for every rank it stands for."""
    sel = np.isin(spans.kind, [SPAN_KINDS.index(k) for k in _TARGETS[target][0]])
    gaps = spans.name_indices(_gaps(target))
    if gaps:
        sel &= ~np.isin(spans.name, gaps)
    return int((spans.dur_ns[sel] * spans.weights()[spans.rank[sel]]).sum())


def _achieved(spans: Spans, sim_spans: Spans, target: str, factor: float, option: str) -> dict[str, Any]:
    """``resimulated_factor``: how many times less of the target's time (all ranks) the
    re-simulation took, and a note when it is not the factor asked for (within 5%)."""
    before, after = _target_ns(spans, target), _target_ns(sim_spans, target)
    if not before or not after:
        return {}
    got = before / after
    out: dict[str, Any] = {"resimulated_factor": round(got, 4)}
    if abs(got / factor - 1) > 0.05:
        did = (f"left {target} as it was" if abs(got - 1) < 0.005
               else f"made {target} x{got:.2f} faster in all")
        out["note"] = f"the re-simulation {did}, not x{factor:g} faster: {_SCALES[option]}"
    return out


def read_result(path: Path) -> dict[str, Any]:
    """The object of a ``result.json`` (a TraceFormatError naming ``path`` when it is not one:
    unreadable, malformed or nested past the depth limit, no ``summary`` object, ``files`` not a list)."""
    from chakra_core.base._docparse import decode_text, parse_json

    note_inputs([str(path)])
    try:
        data = parse_json(decode_text(path.read_bytes(), str(path), TraceFormatError), str(path), TraceFormatError)
    except OSError as e:
        raise TraceFormatError(f"cannot read a result ({e.strerror or e})", str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("summary"), dict):
        raise TraceFormatError("not a result.json (no 'summary' object)", str(path))
    if not isinstance(data.get("files", []), list):
        raise TraceFormatError("'files' is not a list", str(path))
    return data


def _matching_spans(data: dict[str, Any], spans_path: Path, path: Path) -> Spans:
    """The spans at ``spans_path`` when they hold the ranks of the result ``data`` (read from ``path``)."""
    note_inputs([str(spans_path)])
    spans = Spans.load(spans_path)
    ranks = data["summary"].get("ranks")
    if isinstance(ranks, int) and ranks != spans.nranks:
        raise TraceFormatError(f"{spans_path} holds spans of {spans.nranks} rank(s), the result {ranks}: "
                               "spans of another run", str(path))
    path_of = data["summary"].get("critical_path")  # drawn from these spans by the backend
    finish = path_of.get("finish_ns") if isinstance(path_of, dict) else None
    if isinstance(finish, int) and len(spans) and spans.finish_ns() != finish:
        raise TraceFormatError(f"{spans_path} ends at {spans.finish_ns()} ns, the result's critical path at {finish} "
                               "ns: spans of another run", str(path))
    _check_finishes(data, spans, spans_path, path)
    return spans


def _check_finishes(data: dict[str, Any], spans: Spans, spans_path: Path, path: Path) -> None:
    """Check the result ``data`` (read from ``path``) against its spans: its ``ranks`` list holds
    each rank of the spans once and, for a simulator's result (one run, as its spans; an
    emulator's averages its repeats), ``summary.finish_ns`` is the last span's end and the
    ``finish_ns`` of each rank (that a rank's spans stand for) its last span's end."""
    rows = _rows_by_rank(data.get("ranks", [{"rank": r} for r in range(spans.nranks)]))
    if rows is None or sorted(rows) != list(range(spans.nranks)):
        shown = "no list of ranks (each an object with its rank)" if rows is None else f"{len(rows)} rank(s)"
        raise TraceFormatError(f"the result lists {shown}, its spans ({spans_path}) are of ranks 0-{spans.nranks - 1}: "
                               "an edited result or spans of another run", str(path), "ranks")
    if data.get("kind") != "simulator" or not len(spans):
        return
    said = data["summary"].get("finish_ns", spans.finish_ns())
    if said != spans.finish_ns():
        raise TraceFormatError(f"the result's step ends at {said!r} ns, its spans ({spans_path}) at "
                               f"{spans.finish_ns()} ns: an edited result or spans of another run", str(path),
                               "summary.finish_ns")
    end = np.zeros(len(spans.weights()), np.int64)
    np.maximum.at(end, spans.rank, spans.end_ns)
    for r in spans.ranks():
        for k in spans.stands_for(r):
            said = rows.get(k, {}).get("finish_ns", int(end[r]))
            if said != int(end[r]):
                raise TraceFormatError(f"the result has rank {k} finish at {said!r} ns, its spans "
                                       f"({spans_path}) at {int(end[r])} ns: an edited result or spans of another "
                                       "run", str(path), "ranks")


def _rows_by_rank(rows: Any) -> dict[int, dict[str, Any]] | None:
    """A result's ``ranks`` list by rank; None unless a list of objects each with its own whole ``rank``."""
    if not isinstance(rows, list) or not all(isinstance(r, dict) and type(r.get("rank")) is int for r in rows):
        return None
    by_rank = {r["rank"]: r for r in rows}
    return by_rank if len(by_rank) == len(rows) else None


def spans_of_result(path: str | os.PathLike) -> tuple[dict[str, Any], Spans]:
    """A ``result.json`` and the spans written with it (``spans.npz`` listed in its files): the
    file beside it first (a result moved or archived with its directory), else the path listed;
    a TraceFormatError when their rank counts differ (spans of another run)."""
    path = Path(path)
    data = read_result(path)
    for f in data.get("files", []):
        if isinstance(f, str) and f.endswith("spans.npz"):
            for candidate in (path.parent / Path(f).name, Path(f)):
                if candidate.is_file():
                    return data, _matching_spans(data, candidate, path)
    raise ConfigError(f"{path}: the result has no spans; run the backend with -O spans=true and -o DIR "
                      "(it writes DIR/spans.npz next to result.json)")


def check_run_of(traces: TraceSet, spans: Spans, result: str | os.PathLike, *, durations: bool = False,
                 sizes: bool = False) -> None:
    """Check that ``spans`` (of the result at ``result``) are a run of ``traces``: as many ranks,
    and on up to :data:`RANKS_CHECKED` ranks with spans (spread over them), each span of a node
    names a node id of its rank and the names agree (those of up to :data:`NAMES_CHECKED` spans
    per rank, spread over its spans), and every span says of its node what the run's models make
    of the node (:func:`_check_rank_values`: ``durations``, ``sizes``); a ConfigError naming both
    otherwise: a report would mix one job's times with another's operations."""
    if len(traces) != spans.nranks:
        raise ConfigError(f"the result is a run of {spans.nranks} rank(s), the trace set "
                          f"{traces.source or ''} has {len(traces)}: give the set it was run on", str(result))
    ranks = spans.ranks()
    for r in [ranks[k] for k in sorted({round(x) for x in np.linspace(0, len(ranks) - 1, RANKS_CHECKED)})]:
        if r not in traces.ranks:
            raise ConfigError(f"the result is not a run of this trace set: it has spans of rank {r}, the set "
                              f"ranks {traces.ranks[0]}-{traces.ranks[-1]}", str(result))
        mine = np.flatnonzero((spans.rank == r) & (spans.node_id >= 0))
        if len(mine):
            cols = node_columns(traces[r], ("comm_size",) if sizes else ())
            position = _check_rank_run(cols, traces[r].label, spans, mine, r, result)
            _check_rank_values(cols, traces[r].label, spans, mine[position >= 0], position[position >= 0], r,
                               result, durations, sizes)


#: the spans per rank whose names :func:`check_run_of` compares with their nodes', and the ranks
#: whose spans it reads (each rank's nodes are read: 50 ms for 2,100 nodes without numba)
NAMES_CHECKED = 256
RANKS_CHECKED = 4


def _check_rank_run(cols: NodeColumns, label: str, spans: Spans, mine: np.ndarray, r: int,
                    result: str | os.PathLike) -> np.ndarray:
    """Check the spans ``mine`` of rank ``r`` against the nodes ``cols`` of its trace (named
    ``label``) (:func:`check_run_of`): their ids and names; the position of each one's node."""
    ids = spans.node_id[mine].astype(np.uint64)
    position = positions_of(cols.ids, ids)
    checked: list[tuple[int, str | None]] = [(j, None) for j in np.flatnonzero(position < 0)[:1].tolist()]
    if not checked:
        spread = np.unique(np.linspace(0, len(mine) - 1, NAMES_CHECKED).astype(np.int64)).tolist()
        checked = [(j, cols.name(int(position[j]))) for j in spread]
    for j, there in checked:
        i = int(mine[j])
        if there != spans.name_of(i):
            found = "no such node" if there is None else f"{there!r} there"
            raise ConfigError(f"the result is not a run of this trace set: its rank {r} ran node {int(ids[j])} "
                              f"{spans.name_of(i)!r}, {label} has {found}", str(result))
    return position


#: the span kinds of compute, whose durations the replay compute model takes from the nodes
_COMPUTE_SPANS = [SPAN_KINDS.index(k) for k in ("compute", "cpu")]
#: the span kinds of communication, whose bytes a simulator takes from the nodes' ``comm_size``
_COMM_SPANS = [SPAN_KINDS.index(k) for k in ("collective", "send", "recv")]
#: the most microseconds a duration in ns holds (a simulator caps a node's duration there)
_MAX_US = np.uint64(((1 << 63) - 1) // 1000)


def _check_rank_values(cols: NodeColumns, label: str, spans: Spans, mine: np.ndarray, position: np.ndarray, r: int,
                       result: str | os.PathLike, durations: bool, sizes: bool) -> None:
    """Check what the spans ``mine`` of rank ``r`` say of their nodes (at ``position`` in
    ``cols``): with ``durations`` (replayed compute) a compute span lasts its node's
    ``duration_micros`` in ns (at least 1), with ``sizes`` a communication span moves its node's
    ``comm_size`` bytes; a ConfigError naming the first span, in span order, that does not."""
    kind = spans.kind[mine]
    checks = []
    if durations:
        us = np.minimum(cols.duration_micros[position], _MAX_US).astype(np.int64)
        checks.append((spans.dur_ns[mine], np.maximum(us * 1000, 1), np.isin(kind, _COMPUTE_SPANS), us,
                       "lasted {got:,} ns, but {label} records {rec:,} us, which the replay compute model it "
                       "ran with lasts"))
    if sizes:
        size = cols.attrs["comm_size"]
        want = size.ints[position]
        checks.append((spans.bytes[mine], want, np.isin(kind, _COMM_SPANS) & size.is_int[position], want,
                       "moved {got:,} bytes, but {label} records comm_size {rec:,}"))
    for got, want, sel, rec, text in checks:
        bad = np.flatnonzero(sel & (got != want))
        if len(bad):
            j, p = int(bad[0]), int(position[bad[0]])
            said = text.format(got=int(got[j]), rec=int(rec[j]), label=label)
            raise ConfigError(f"the result is not a run of this trace set: its rank {r} node {int(cols.ids[p])} "
                              f"{cols.name(p)!r} {said}", str(result))
