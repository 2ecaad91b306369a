"""Parse an ASTRA-sim 1.0 text workload into a :class:`Workload` (no graph yet).

Layout: the first content line holds the mode and its header fields, the second the number of
layers, then one line per layer with at least 12 columns (see docs/text-workloads.md).  Blank
lines are skipped and ``#`` starts a comment that runs to the end of the line.  Every error is
a :class:`chakra_core.TraceFormatError` naming the file and the physical line.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from chakra_core import TraceFormatError

from .modes import COMM_TYPES, DLRM_MODES, GROUP_SUFFIXES, MODES, RECOMPUTE_MODE, TRANSFORMER_MODES

__all__ = ["Phase", "Layer", "Workload", "parse_workload", "parse_text"]

_COLUMNS = (
    "layer name", "reserved", "forward compute time", "forward comm type", "forward comm size",
    "input-gradient compute time", "input-gradient comm type", "input-gradient comm size",
    "weight-gradient compute time", "weight-gradient comm type", "weight-gradient comm size",
    "weight-update time",
)
#: header keys followed by a count and that many layer indices.
_LIST_KEYS = ("checkpoints", "checkpoint_initiates")
#: header keys that AICB-style generators write without the trailing colon.
_BARE_KEYS = ("pp_comm",)


@dataclass(frozen=True)
class Phase:
    """One pass of one layer: compute time (in the file's unit) and its collective, if any.

    ``comm`` is the comm-type token of the file (``ALLREDUCE``, ``ALLGATHER_DP_EP``...) or None
    for ``NONE``; ``kind`` the collective without its group suffix; ``group`` the suffix's group
    (``"EP"``, ``"DP_EP"``) or None; ``size`` is in bytes.
    """

    time: float
    comm: str | None
    size: int
    kind: str | None = None
    group: str | None = None


@dataclass(frozen=True)
class Layer:
    """One layer line: forward, input-gradient and weight-gradient phases, update time."""

    name: str
    line: int
    fwd: Phase
    ig: Phase
    wg: Phase
    update: float


@dataclass
class Workload:
    """A parsed text workload.

    ``header`` keeps every ``key: value`` field of line 1 as strings (e.g. ``ep``, ``pp``,
    ``all_gpus``); the ones with a meaning here are also decoded: ``mp_group``
    (``model_parallel_NPU_group``), ``ep`` (expert-parallel group size), ``pp`` (pipeline
    stages, transformer modes), ``all_gpus``, ``checkpoints``, ``initiates`` and, for the DLRM
    modes, ``last_bottom`` (the index of the last bottom-MLP layer).  ``header_line`` is the
    physical line of the header (line 1 unless blank or comment lines come first).
    """

    path: str
    mode: str
    layers: list[Layer]
    header: dict[str, str] = field(default_factory=dict)
    mp_group: int | None = None
    ep: int = 1
    pp: int = 1
    header_line: int = 1
    all_gpus: int | None = None
    last_bottom: int | None = None
    checkpoints: frozenset[int] = frozenset()
    initiates: frozenset[int] = frozenset()


def _content_lines(text: str):
    for n, raw in enumerate(text.splitlines(), 1):
        tokens = raw.split("#", 1)[0].split()
        if tokens:
            yield n, tokens


#: numbers are plain ASCII decimal: no sign but a leading "-" on integers, no "_", no exponent
_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def _int(tok: str, what: str, where: str, n: int, minimum: int | None = 0) -> int:
    if not _INTEGER.fullmatch(tok):
        raise TraceFormatError(f"{what}: {tok!r} is not an integer (plain decimal digits 0-9)", where, f"line {n}")
    try:
        v = int(tok)
    except ValueError:  # more digits than Python converts (4300)
        raise TraceFormatError(f"{what}: {tok[:20]!r}... has {len(tok)} digits", where, f"line {n}") from None
    if minimum is not None and v < minimum:
        raise TraceFormatError(f"{what}: {v} is below {minimum}", where, f"line {n}")
    return v


def _time(tok: str, what: str, where: str, n: int) -> float:
    if not _DECIMAL.fullmatch(tok):
        raise TraceFormatError(f"{what}: {tok!r} is not a non-negative finite number (plain decimal, e.g. 12 or 2.5)",
                               where, f"line {n}")
    v = float(tok)
    if not math.isfinite(v):
        raise TraceFormatError(f"{what}: {tok[:20]!r}... is too large a number", where, f"line {n}")
    return v


#: the largest comm size a Chakra ET can carry (``comm_size`` is an int64 attribute).
MAX_SIZE = 2**63 - 1


def _size(tok: str, what: str, where: str, n: int) -> int:
    whole, _, fraction = tok.partition(".")
    if not _DECIMAL.fullmatch(tok) or fraction.strip("0"):
        raise TraceFormatError(f"{what}: {tok!r} is not a whole number of bytes (plain decimal digits 0-9)",
                               where, f"line {n}")
    if len(whole) > 19 or int(whole or "0") > MAX_SIZE:
        raise TraceFormatError(f"{what}: {tok[:40]!r} bytes is more than an ET can hold (at most 2**63-1)",
                               where, f"line {n}")
    return int(whole or "0")


def _comm(tok: str, what: str, where: str, n: int) -> tuple[str | None, str | None]:
    """(collective kind, group suffix) of a comm-type token; (None, None) for ``NONE``."""
    if tok == "NONE":
        return None, None
    for suffix in GROUP_SUFFIXES:
        if tok.endswith(suffix) and tok[:-len(suffix)] in COMM_TYPES:
            return tok[:-len(suffix)], suffix[1:]
    if tok not in COMM_TYPES:
        known = ", ".join(list(COMM_TYPES) + ["NONE"])
        raise TraceFormatError(f"{what}: unknown comm type {tok!r} (known: {known}, with an optional "
                               f"{' or '.join(GROUP_SUFFIXES)} suffix in the transformer modes)", where, f"line {n}")
    return tok, None


def _header(w: Workload, tokens: list[str], where: str, n: int) -> None:
    rest = tokens[1:]
    i = 0
    if w.mode in DLRM_MODES and rest and _INTEGER.fullmatch(rest[0]):
        w.last_bottom = _int(rest[0], "last bottom-MLP layer", where, n)
        i = 1
    while i < len(rest):
        tok = rest[i]
        if not tok.endswith(":") and tok not in _BARE_KEYS:
            raise TraceFormatError(f"unexpected token {tok!r} (header fields are 'key: value')", where, f"line {n}")
        key = tok.rstrip(":")
        if key in _LIST_KEYS:
            if i + 1 >= len(rest):
                raise TraceFormatError(f"{key}: missing the count of layers", where, f"line {n}")
            count = _int(rest[i + 1], f"{key} count", where, n)
            items = rest[i + 2:i + 2 + count]
            if len(items) < count:
                raise TraceFormatError(f"{key}: {count} layers announced, {len(items)} given", where, f"line {n}")
            values = frozenset(_int(t, f"{key} layer", where, n) for t in items)
            if key == "checkpoints":
                w.checkpoints = values
            else:
                w.initiates = values
            w.header[key] = " ".join(items)
            i += 2 + count
            continue
        if i + 1 >= len(rest):
            raise TraceFormatError(f"{key}: missing value", where, f"line {n}")
        w.header[key] = rest[i + 1]
        if key == "model_parallel_NPU_group":
            w.mp_group = _int(rest[i + 1], key, where, n, minimum=1)
        elif key == "ep":
            w.ep = _int(rest[i + 1], key, where, n, minimum=1)
        elif key == "pp":
            w.pp = _int(rest[i + 1], key, where, n, minimum=1)
        elif key == "all_gpus":
            w.all_gpus = _int(rest[i + 1], key, where, n, minimum=1)
        elif key == "DLRM_LAST_BOTTOM_LAYER" and w.mode in DLRM_MODES:
            w.last_bottom = _int(rest[i + 1], key, where, n)
        i += 2
    if w.mode in DLRM_MODES and w.last_bottom is None:
        raise TraceFormatError(f"{w.mode} needs the index of the last bottom-MLP layer after the mode "
                               "(or as DLRM_LAST_BOTTOM_LAYER: k)", where, f"line {n}")
    if w.pp > 1 and w.mode not in TRANSFORMER_MODES:
        raise TraceFormatError(f"pp: {w.pp} (pipeline stages) applies to the transformer modes, as in SimAI, "
                               f"not {w.mode}", where, f"line {n}")


def _layer(tokens: list[str], where: str, n: int, mode: str) -> Layer:
    if len(tokens) < 12:
        raise TraceFormatError(
            f"layer line has {len(tokens)} columns, needs 12 (missing: {', '.join(_COLUMNS[len(tokens):])})",
            where, f"line {n}")
    _int(tokens[1], f"column 2 ({_COLUMNS[1]})", where, n, minimum=None)
    phases = []
    for base in (2, 5, 8):
        what = f"column {base + 2} ({_COLUMNS[base + 1]})"
        kind, group = _comm(tokens[base + 1], what, where, n)
        if group is not None and mode not in TRANSFORMER_MODES:
            raise TraceFormatError(f"{what}: group suffix of {tokens[base + 1]!r} needs a transformer mode, "
                                   f"not {mode}", where, f"line {n}")
        phases.append(Phase(
            _time(tokens[base], f"column {base + 1} ({_COLUMNS[base]})", where, n),
            None if kind is None else tokens[base + 1],
            _size(tokens[base + 2], f"column {base + 3} ({_COLUMNS[base + 2]})", where, n),
            kind, group,
        ))
    update = _time(tokens[11], f"column 12 ({_COLUMNS[11]})", where, n)
    return Layer(tokens[0], n, phases[0], phases[1], phases[2], update)


def parse_text(text: str, where: str) -> Workload:
    """Parse the text of a workload file; ``where`` names it in errors."""
    lines = _content_lines(text)
    first = next(lines, None)
    if first is None:
        raise TraceFormatError("empty workload file (want the mode on the first line)", where)
    n, tokens = first
    if tokens[0] not in MODES:
        raise TraceFormatError(f"unknown parallelism mode {tokens[0]!r} (known: {', '.join(MODES)})",
                               where, f"line {n}")
    w = Workload(where, tokens[0], [], header_line=n)
    _header(w, tokens, where, n)
    second = next(lines, None)
    if second is None:
        raise TraceFormatError("missing the number of layers after the mode line", where, f"line {n + 1}")
    count_line, tokens = second
    if len(tokens) != 1:
        raise TraceFormatError(f"expected the number of layers alone, got {' '.join(tokens)!r}",
                               where, f"line {count_line}")
    count = _int(tokens[0], "number of layers", where, count_line, minimum=1)
    for n, tokens in lines:
        if len(w.layers) == count:
            raise TraceFormatError(f"more layer lines than the {count} declared on line {count_line}",
                                   where, f"line {n}")
        w.layers.append(_layer(tokens, where, n, w.mode))
    if len(w.layers) != count:
        raise TraceFormatError(f"declares {count} layers but the file has {len(w.layers)} layer lines",
                               where, f"line {count_line}")
    _check_bottom(w, where, w.header_line)
    if w.mode == RECOMPUTE_MODE:
        _check_checkpoints(w, where, w.header_line)
    return w


def _check_bottom(w: Workload, where: str, n: int) -> None:
    size = len(w.layers)
    if w.last_bottom is not None and w.last_bottom >= size - 1:
        raise TraceFormatError(f"last bottom-MLP layer {w.last_bottom} must be below the last layer "
                               f"({size - 1}): the top MLP needs at least one layer", where, f"line {n}")


def _check_checkpoints(w: Workload, where: str, n: int) -> None:
    """The checkpoint lists of the mode that recomputes: in range, each initiate above a checkpoint."""
    size = len(w.layers)
    for key, values in (("checkpoints", w.checkpoints), ("checkpoint_initiates", w.initiates)):
        bad = sorted(v for v in values if v >= size)
        if bad:
            raise TraceFormatError(f"{key}: layer {bad[0]} is out of range (0..{size - 1})", where, f"line {n}")
    for t in sorted(w.initiates):
        if not any(c < t for c in w.checkpoints):
            raise TraceFormatError(f"checkpoint_initiates: layer {t} has no checkpoint layer below it",
                                   where, f"line {n}")


def parse_workload(path: str | os.PathLike) -> Workload:
    """Read and parse the workload file at ``path`` (raises TraceFormatError on bad input)."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TraceFormatError(f"cannot read ({e.strerror})", path) from None
    return parse_text(_decode(data, path), path)


def _decode(data: bytes, path: str) -> str:
    """The file's text: UTF-8 with an optional leading BOM; other bytes are an error naming the line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TraceFormatError(f"not UTF-8 text ({e.reason} at byte {e.start})", path, f"line {line}") from None
