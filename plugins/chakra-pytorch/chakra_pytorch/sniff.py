"""Cheap recognition of PyTorch trace files: host ET or Kineto, and the rank in a file name."""

from __future__ import annotations

import gzip
import os
import re
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from chakra_core import TraceFormatError, expand_paths

from .ints import MAX_RANKS
from .schema_version import PyTorchTraceWarning

__all__ = ["sniff_kind", "rank_from_name", "rank_in_name", "is_json_name", "is_linked", "JSON_SUFFIXES", "HLO_SUFFIXES",
           "FileKinds", "classify_files", "kineto_only_paths"]

_HEAD = 4096
_SCHEMA_KEY = re.compile(rb'"schema"\s*:')
_NODES_KEY = re.compile(rb'"nodes"\s*:')
_KINETO_KEY = re.compile(rb'"(?:schemaVersion|deviceProperties|distributedInfo)"\s*:')
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:')
_PYTORCH_EVENT = re.compile(rb'"cat"\s*:\s*"(?:cpu_op|user_annotation|cuda_runtime|python_function)"'
                            rb'|"(?:External id|Record function id)"\s*:')
_EVENTS_HEAD = 1 << 18
_NUMBER = re.compile(r"\d+")
_RANK_WORD = re.compile(r"(?:^|[^a-z])rank[._-]?(\d+)", re.IGNORECASE)
_DOT_RANK = re.compile(r"\.(\d+)$")


#: the names of PyTorch's trace files.
JSON_SUFFIXES = (".json", ".json.gz")
#: the names of XLA programs: a folder holding one is not a PyTorch trace set.
HLO_SUFFIXES = (".hlo.txt", ".hlo.pb")


def is_json_name(path: str) -> bool:
    """True for ``*.json`` and ``*.json.gz`` names."""
    return path.endswith(JSON_SUFFIXES)


def _head(path: str, size: int = _HEAD) -> bytes:
    try:
        with open(path, "rb") as f:
            raw = f.read(size)
            if raw[:2] == b"\x1f\x8b":
                f.seek(0)
                with gzip.GzipFile(fileobj=f) as g:
                    return g.read(size)
            return raw
    except (OSError, EOFError, zlib.error):
        return b""


def is_linked(path: str) -> bool:
    """True for a host ET that ``chakra_trace_link`` linked (its first MiB, decompressed, has a
    node with ``inclusive_dur``): it carries its own timing."""
    return b'"inclusive_dur"' in _head(path, 1 << 20)


def sniff_kind(path: str) -> str | None:
    """``"host"`` for a host execution trace, ``"kineto"`` for a profiler trace, else None.

    Looks at the first 4 KiB (decompressed): a host ET starts with ``"schema"`` and ``"nodes"``
    keys; a Kineto trace with ``schemaVersion``/``deviceProperties``/``distributedInfo``. A
    ``traceEvents`` file without those keys is a Kineto trace only when its first 256 KiB hold a
    PyTorch event (category ``cpu_op``/``user_annotation``/``cuda_runtime``/``python_function``,
    or an ``External id``/``Record function id`` argument): other tools' Chrome traces (a JAX
    profile) are not.
    """
    head = _head(path).lstrip()
    if not head.startswith(b"{") or b'"chakra-et-json"' in head:
        return None
    if _KINETO_KEY.search(head):
        return "kineto"
    if _EVENTS_KEY.search(head):
        return "kineto" if _PYTORCH_EVENT.search(_head(path, _EVENTS_HEAD)) else None
    if _SCHEMA_KEY.search(head) and (_NODES_KEY.search(head) or b'"pid"' in head):
        return "host"
    return None


def rank_from_name(path: str, strict: bool = False, pid: Callable[[], int | None] | None = None) -> int | None:
    """The rank in a file name: the number after ``rank`` (``et_rank1_step10.json`` -> 1), else a
    final ``.N`` (``et.3.json.gz`` -> 3), else the last integer of the name (``et12.json`` -> 12).

    The name is read without ``.json``/``.json.gz``, Kineto's ``.pt.trace`` and a final
    ``.<ms timestamp>`` (a number above :data:`MAX_RANKS`: ``HOST_PID.1733580000123.pt.trace.json``,
    ``et_0.1694128201545.json`` -> 0); a number above :data:`MAX_RANKS` is never a rank.  With
    ``strict``, only a number that is clearly a rank counts: ``rank3`` or ``NAME.3.json`` (so that
    ``resnet50_et.json`` is not taken for rank 50).  A number that is ``pid()`` (the process that
    recorded the file, as in PyTorch's default ``HOST_PID`` worker name; asked only when the name
    has a number) is no rank.
    """
    found = _name_rank(path, pid, strict)
    return found.rank if found is not None else None


def rank_in_name(path: str, lone: bool, pid: Callable[[], int | None]) -> int | None:
    """The rank of a file whose trace does not say it, from its name (:func:`rank_from_name`;
    ``pid()`` as there): in a set, a clear one, else the last integer of the name, said in a
    warning (``worker0_step_12.<ms>.pt.trace.json`` is rank 12, but its numbers may be a worker
    index, a step, a pid), else None; a lone file (``lone``) takes only a clear one, else rank
    0, said in a warning when the name has a number that was not taken."""
    found = _name_rank(path, pid, strict=False)
    if found is not None and (found.clear or not lone):
        if not found.clear:
            warnings.warn(f"{path}: rank {found.rank} assumed from the last number of the file name: the trace "
                          "does not say its rank and the name gives none clearly (rankN, NAME.N.json); "
                          "rename the file if that is not its rank", PyTorchTraceWarning, stacklevel=3)
        return found.rank
    if found is not None:
        warnings.warn(f"{path}: rank 0 assumed: the trace does not say its rank and the number {found.rank} "
                      "in the file name is not clearly one (rankN, NAME.N.json)", PyTorchTraceWarning, stacklevel=3)
    return 0 if lone else None


@dataclass(frozen=True)
class _NameRank:
    """A rank read from a file name; ``clear`` when it follows ``rank`` or is a final ``.N``."""

    rank: int
    clear: bool


def _name_rank(path: str, pid: Callable[[], int | None] | None, strict: bool) -> _NameRank | None:
    """The likeliest rank in the name of ``path`` (see :func:`rank_from_name`; with ``strict`` a
    clear one only), None when the name has none or it is ``pid()``."""
    name = _stem(path)
    clear = [m.group(1) for m in _RANK_WORD.finditer(name)]
    dot = _DOT_RANK.search(name)
    if dot:
        clear.append(dot.group(1))
    found = next((_NameRank(int(n), True) for n in clear if int(n) <= MAX_RANKS), None)
    if found is None and not strict:
        found = next((_NameRank(int(n), False) for n in reversed(_NUMBER.findall(name)) if int(n) <= MAX_RANKS),
                     None)
    return None if found is None or (pid is not None and found.rank == pid()) else found


def _stem(path: str) -> str:
    """The base name of ``path`` without ``.json``/``.json.gz``, then ``.pt.trace``, then a final
    ``.<ms timestamp>`` (a number above :data:`MAX_RANKS`): the worker name of Kineto's
    ``<worker_name>.<ms>.pt.trace.json``."""
    name = os.path.basename(path)
    for ext in (".json.gz", ".json"):
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    name = name.removesuffix(".pt.trace")
    stamp = _DOT_RANK.search(name)
    return name[: stamp.start()] if stamp and int(stamp.group(1)) > MAX_RANKS else name


@dataclass
class FileKinds:
    """The JSON files of an input sorted by :func:`sniff_kind`: host ETs, Kineto traces, and
    files that are neither (to be skipped with a warning)."""

    hosts: list[str] = field(default_factory=list)
    kinetos: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)

    @property
    def kineto_only(self) -> bool:
        """True when the input is Kineto traces alone (no host ET)."""
        return not self.hosts and bool(self.kinetos)

    @property
    def any_trace(self) -> bool:
        """True when at least one file is a host ET or a Kineto trace."""
        return bool(self.hosts or self.kinetos)

    def refuse_empty(self) -> None:
        """TraceFormatError naming the first skipped file that holds nothing (an empty or damaged
        trace: skipped, it would leave its rank without durations or without its trace)."""
        for f in self.others:
            if not _head(f, 64).strip():
                raise TraceFormatError("empty, or its compressed data is damaged: not a trace to skip", f)

    def skipped_note(self) -> str | None:
        """One line naming the files that are not traces (None when there are none)."""
        if not self.others:
            return None
        names = ", ".join(os.path.basename(f) for f in self.others[:5])
        more = f" and {len(self.others) - 5} more" if len(self.others) > 5 else ""
        return (f"skipped {len(self.others)} file(s) that are neither a PyTorch execution trace nor a "
                f"Kineto trace: {names}{more}")


def classify_files(files: list[str]) -> FileKinds:
    """Sort every file of ``files`` by what its first 4 KiB say (see :func:`sniff_kind`)."""
    kinds = FileKinds()
    for f in files:
        kind = sniff_kind(f)
        (kinds.hosts if kind == "host" else kinds.kinetos if kind == "kineto" else kinds.others).append(f)
    return kinds


def kineto_only_paths(paths: Sequence[str]) -> list[str] | None:
    """The Kineto traces among ``paths`` (files or directories) when there is no host execution
    trace among them, else None; other files are skipped with a warning naming them."""
    kinds = classify_files(expand_paths(paths, JSON_SUFFIXES))
    if not kinds.kineto_only:
        return None
    note = kinds.skipped_note()
    if note:
        warnings.warn(f"{kinds.others[0]}: {note}", PyTorchTraceWarning, stacklevel=2)
    return kinds.kinetos
