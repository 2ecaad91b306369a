"""Telling the JSON form of a Chakra ET by the start of a file, without loading its reader.

Format detection runs on every command given JSON files (a PyTorch trace, a timeline beside a
set); it needs only these few bytes, not :mod:`._jsonform` (YAML and protobuf's JSON mapping).
"""

from __future__ import annotations

import os
import re

__all__ = ["FORMAT_TAG", "JSONIZER_START", "head", "sniff_json"]

FORMAT_TAG = "chakra-et-json"
#: the start of ``chakra_jsonizer`` output: a GlobalMetadata object (its version string or its
#: attribute list first), or an empty one followed by the first node
JSONIZER_START = re.compile(rb'\A\s*\{\s*(?:"version"\s*:\s*"|"attr"\s*:\s*\[|\}\s*\{)')


def head(path: str | os.PathLike) -> bytes:
    """The first 256 bytes of ``path`` (empty when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return f.read(256)
    except OSError:
        return b""


def sniff_json(path: str | os.PathLike) -> bool:
    """True when ``path`` starts like a file written by ``write_json`` or by the MLCommons
    ``chakra_jsonizer``."""
    start = head(path)
    return FORMAT_TAG.encode() in start or JSONIZER_START.match(start) is not None
