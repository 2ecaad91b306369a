"""Cheap recognition of PyTorch trace files: host ET or Kineto, and the rank in a file name."""

from __future__ import annotations

import gzip
import os
import re
import zlib

__all__ = ["sniff_kind", "rank_from_name", "is_json_name", "is_linked", "JSON_SUFFIXES"]

_HEAD = 4096
_SCHEMA_KEY = re.compile(rb'"schema"\s*:')
_NODES_KEY = re.compile(rb'"nodes"\s*:')
_KINETO_KEY = re.compile(rb'"(?:traceEvents|schemaVersion|deviceProperties|distributedInfo)"\s*:')
_RANK = re.compile(r"(\d+)(?!.*\d)")
_RANK_WORD = re.compile(r"(?:^|[^a-z])rank[._-]?(\d+)", re.IGNORECASE)
_DOT_RANK = re.compile(r"\.(\d+)$")


#: the names of PyTorch's trace files.
JSON_SUFFIXES = (".json", ".json.gz")


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

    Looks only at the first 4 KiB (decompressed): a host ET starts with ``"schema"`` and
    ``"nodes"`` keys; a Kineto trace with ``schemaVersion``/``traceEvents``/``deviceProperties``.
    """
    head = _head(path).lstrip()
    if not head.startswith(b"{") or b'"chakra-et-json"' in head:
        return None
    if _KINETO_KEY.search(head):
        return "kineto"
    if _SCHEMA_KEY.search(head) and (_NODES_KEY.search(head) or b'"pid"' in head):
        return "host"
    return None


def rank_from_name(path: str, strict: bool = False) -> int | None:
    """The rank in a file name without ``.json``/``.json.gz``: the number after ``rank``
    (``et_rank1_step10.json`` -> 1), else a final ``.N`` (``et.3.json.gz`` -> 3), else the last
    integer of the name (``et12.json`` -> 12).

    With ``strict``, only a number that is clearly a rank counts: ``rank3`` or ``NAME.3.json``
    (so that ``resnet50_et.json`` alone is not taken for rank 50).
    """
    name = os.path.basename(path)
    for ext in (".json.gz", ".json"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    for pattern in (_RANK_WORD, _DOT_RANK) if strict else (_RANK_WORD, _DOT_RANK, _RANK):
        m = pattern.search(name)
        if m:
            return int(m.group(1))
    return None
