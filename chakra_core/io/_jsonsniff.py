"""Telling the JSON form of a Chakra ET by the start of a file, without loading its reader.

Format detection runs on every command given JSON files (a PyTorch trace, a timeline beside a
set); it needs only these few bytes (decompressed when the file is gzip), not
:mod:`._jsonform` (YAML and protobuf's JSON mapping).
"""

from __future__ import annotations

import os
import re
import zlib

from chakra_core.io._etio import open_binary

__all__ = ["FORMAT_TAG", "JSONIZER_START", "JSONIZER_LIST_START", "head", "sniff_json"]

FORMAT_TAG = "chakra-et-json"
#: a node's start as protobuf's ``MessageToJson`` writes it: the brace, a line break (a line of
#: JSON Lines holds no line break, so that a node of ours on one line is not taken for it), then
#: the first field in number order, default ones left out: the id (a decimal string) or, for
#: node 0, the name, followed by a later Node field or by the end of the node
_NODE_START = (rb'\{[ \t]*\r?\n\s*(?:"id"\s*:\s*"\d+"|"name"\s*:\s*"(?:[^"\\]|\\.)*")\s*'
               rb'(?:\}|,\s*"(?:name|type|ctrlDeps|dataDeps|startTimeMicros|durationMicros|inputs|outputs|attr)"\s*:)')
#: the start of the older ``chakra_jsonizer`` output, objects one after another: a GlobalMetadata
#: object (its version string or its attribute list first), an empty one followed by the first
#: node, or the first node (the jsonizer until chakra ``b5c04ef``, 2023-11-22, wrote nodes only)
JSONIZER_START = re.compile(rb'\A\s*(?:\{\s*(?:"version"\s*:\s*"|"attr"\s*:\s*\[|\}\s*\{)|' + _NODE_START + rb')')
#: the start of the current ``chakra_jsonizer`` output, a JSON list: the same GlobalMetadata object
#: first, an empty one followed by a node or by the end of the list
JSONIZER_LIST_START = re.compile(rb'\A\s*\[\s*\{\s*(?:"version"\s*:\s*"|"attr"\s*:\s*\[|\}\s*(?:,\s*\{|\]))')


def head(path: str | os.PathLike) -> bytes:
    """The first 256 bytes of ``path``, decompressed when it is gzip (empty when it cannot be read)."""
    try:
        with open_binary(path) as f:
            return f.read(256)
    except (OSError, EOFError, zlib.error):
        return b""


def sniff_json(path: str | os.PathLike) -> bool:
    """True when ``path`` starts like a file written by ``write_json`` or by the MLCommons
    ``chakra_jsonizer`` (any of its layouts)."""
    start = head(path)
    return (FORMAT_TAG.encode() in start or JSONIZER_START.match(start) is not None
            or JSONIZER_LIST_START.match(start) is not None)
