"""The nodes of an ``.et`` file written as JSON straight from their wire bytes.

A run of node messages (1 MiB of the file, :func:`._etruns.file_runs`) goes through the
transcoder's compiled form (the kernel :func:`._jsonkernel.transcode`) into one buffer, written
as it is; a node the transcoder leaves (a float, a string past ASCII, an unknown field:
:mod:`._jsonkernel`; a node of over 4 MiB) is decoded and written by the caller's ``to_json``
in its place, so the output is the same as writing every node with ``to_json``.  A file that
does not read cleanly this way (a node that does not decode, a framing error) raises
:class:`Reread`: the caller reads it with :class:`EtReader`, whose errors name the byte and node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO

import numpy as np
from google.protobuf.message import DecodeError

from chakra_core.base._errors import TraceFormatError
from chakra_core.base._kernels import compiled
from chakra_core.io._etruns import file_runs
from chakra_core.io._jsonkernel import room, transcode
from chakra_core.io._schema import Node
from chakra_core.io._wirekernels import padded

__all__ = ["Reread", "write_nodes"]

#: the most bytes of JSON held at a time (a node that might write more is written from its Node)
_BUFFER = 64 << 20


class Reread(Exception):
    """The file is to be read node by node (:class:`EtReader`) instead."""


class _Output:
    """The file written, less the first byte written (``skip``: the comma before the first node
    of a JSON list)."""

    def __init__(self, f: BinaryIO, skip: bool):
        self.f = f
        self.skip = skip

    def write(self, data: bytes | memoryview) -> None:
        """Write ``data``."""
        if not len(data):
            return
        if self.skip:
            data, self.skip = data[1:], False
        self.f.write(data)


def write_nodes(f: BinaryIO, path: str, pre: bytes, post: bytes, to_json: Callable[[Node], str],
                skip_first: bool = False) -> int:
    """Write ``pre`` + JSON + ``post`` for every node of the ``.et`` file ``path`` into ``f``
    (without the first byte with ``skip_first``); return the node count.  ``to_json(node)``
    writes a node the transcoder leaves; raises :class:`Reread` (see the module docstring)."""
    out = _Output(f, skip_first)
    marks = (np.frombuffer(pre, np.uint8).copy(), np.frombuffer(post, np.uint8).copy())
    buffer = np.empty(0, np.uint8)
    count = 0
    try:
        for data, start, sizes, _, _ in file_runs(path):
            if len(buffer) < min(room(len(data)), _BUFFER):
                buffer = np.empty(min(room(len(data)), _BUFFER), np.uint8)
            _run(out, data, start, sizes, buffer, marks, to_json)
            count += len(start)
    except TraceFormatError:
        raise Reread from None
    return count


def _run(out: _Output, data: bytes, start: np.ndarray, sizes: np.ndarray, buffer: np.ndarray,
         marks: tuple[np.ndarray, np.ndarray], to_json: Callable[[Node], str]) -> None:
    """Write one run of node messages (``data[start[i]:start[i]+sizes[i]]``)."""
    buf = padded(data)
    end = start + sizes
    done = np.zeros(len(start), np.uint8)
    ends = np.zeros(len(start), np.int64)
    view = buffer.data
    run = compiled(transcode)
    i = 0
    while i < len(start):
        nxt, k = run(buf, start, end, i, buffer, marks[0], marks[1], done, ends)
        at = 0
        for j in np.flatnonzero(done[i:nxt] == 0).tolist():
            j += i
            out.write(view[at:ends[j]])
            at = int(ends[j])
            out.write(_one(data, int(start[j]), int(sizes[j]), marks, to_json))
        out.write(view[at:k])
        if nxt == i:  # a node too large for the buffer: written from its Node object
            out.write(_one(data, int(start[i]), int(sizes[i]), marks, to_json))
            nxt += 1
        i = nxt


def _one(data: bytes, start: int, size: int, marks: tuple[np.ndarray, np.ndarray],
         to_json: Callable[[Node], str]) -> bytes:
    """A node the transcoder left, decoded and written by ``to_json``."""
    try:
        node = Node.FromString(data[start:start + size])
    except DecodeError:
        raise Reread from None
    return marks[0].tobytes() + to_json(node).encode() + marks[1].tobytes()
