"""The nodes of an ``.et`` file written as JSON straight from their wire bytes.

A run of node messages (1 MiB of the file, :func:`._etruns.file_runs`) goes through the
transcoder's compiled form (the kernel :func:`._jsonkernel.transcode`) into one buffer, written
as it is; a node the transcoder leaves (a float, a string past ASCII, an unknown field:
:mod:`._jsonkernel`; a node of over 4 MiB) is decoded and written by the caller's ``to_json``
in its place, so the output is the same as writing every node with ``to_json``.  Up to two
worker threads transcode the next runs (the compiled loop releases the GIL) while this thread
cuts the file's frames and writes the runs before them, in order (:class:`_Ahead`).  A file that
does not read cleanly this way (a node that does not decode, a framing error) raises
:class:`Reread`: the caller reads it with :class:`EtReader`, whose errors name the byte and node.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from typing import BinaryIO, NamedTuple

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
#: worker threads transcoding runs ahead of the writes (a run's compiled loop releases the GIL)
_WORKERS = 2
#: the most bytes of runs held at once (transcoded or waiting for it) besides one larger run alone
_AHEAD_BYTES = 4 << 20


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
    marks = (np.frombuffer(pre, np.uint8).copy(), np.frombuffer(post, np.uint8).copy())
    count = 0
    with ExitStack() as stack:
        ahead = _Ahead(_Output(f, skip_first), marks, to_json, stack)
        try:
            for data, start, sizes, _, _ in file_runs(path):
                ahead.add(data, start, sizes)
                count += len(start)
            ahead.finish()
        except TraceFormatError:
            raise Reread from None
    return count


class _Ahead:
    """Runs transcoded ahead of their writes, written in the order added: a run added when none is
    held and no worker runs (the first) by this thread, the later ones by :data:`_WORKERS` worker
    threads, started at the first run added while another is held (a file of one run starts
    none); at most :data:`_WORKERS` + 1 runs and :data:`_AHEAD_BYTES` of their bytes held, and a
    larger run (one holding a large node) written before the next is read, as when every run was
    written in turn."""

    def __init__(self, out: _Output, marks: tuple[np.ndarray, np.ndarray], to_json: Callable[[Node], str],
                 stack: ExitStack):
        self.out, self.marks, self.to_json, self.stack = out, marks, to_json, stack
        self.run = compiled(transcode)
        self.pool: ThreadPoolExecutor | None = None
        self.pending: deque[tuple[Future[_Pass], int]] = deque()
        self.held = 0
        self.spare: list[np.ndarray] = []

    def add(self, data: bytes, start: np.ndarray, sizes: np.ndarray) -> None:
        """Transcode the run of node messages ``data[start[i]:start[i]+sizes[i]]``, once the runs
        held leave room for it."""
        while self.pending and (len(self.pending) > _WORKERS or self.held + len(data) > _AHEAD_BYTES):
            self._write_oldest()
        size = min(room(len(data)), _BUFFER)
        buffer = self.spare.pop() if self.spare else None
        if buffer is None or len(buffer) < size:
            buffer = np.empty(size, np.uint8)
        args = (self.run, data, start, sizes, buffer, self.marks)
        if self.pool is None and not self.pending:  # the first run (or one after large runs), here
            done: Future[_Pass] = Future()
            done.set_result(_first_pass(*args))
            self.pending.append((done, len(data)))
        else:
            if self.pool is None:
                self.pool = self.stack.enter_context(ThreadPoolExecutor(_WORKERS))
            self.pending.append((self.pool.submit(_first_pass, *args), len(data)))
        self.held += len(data)
        while self.held > _AHEAD_BYTES:  # a large run is written before the file is read on
            self._write_oldest()

    def finish(self) -> None:
        """Write the runs still held."""
        while self.pending:
            self._write_oldest()

    def _write_oldest(self) -> None:
        future, size = self.pending.popleft()
        self.held -= size
        self.spare.append(_finish(self.out, self.run, future.result(), self.marks, self.to_json))


class _Pass(NamedTuple):
    """A run (``data``, ``start``, ``end``, its buffer ``buf``) after the transcoder's first call
    into ``buffer``: the next node ``nxt``, the bytes written ``k``, ``done`` and ``ends``."""

    data: bytes
    buf: np.ndarray
    start: np.ndarray
    end: np.ndarray
    buffer: np.ndarray
    done: np.ndarray
    ends: np.ndarray
    nxt: int
    k: int


def _first_pass(run: Callable, data: bytes, start: np.ndarray, sizes: np.ndarray, buffer: np.ndarray,
                marks: tuple[np.ndarray, np.ndarray]) -> _Pass:
    """The first call of ``run`` (the compiled transcoder) on one run of node messages
    (``data[start[i]:start[i]+sizes[i]]``), in a worker thread (the file's first run: in the
    writing thread)."""
    buf = padded(data)
    end = start + sizes
    done = np.zeros(len(start), np.uint8)
    ends = np.zeros(len(start), np.int64)
    nxt, k = run(buf, start, end, 0, buffer, marks[0], marks[1], done, ends)
    return _Pass(data, buf, start, end, buffer, done, ends, nxt, k)


def _finish(out: _Output, transcoder: Callable, run: _Pass, marks: tuple[np.ndarray, np.ndarray],
            to_json: Callable[[Node], str]) -> np.ndarray:
    """Write one run from its first pass on, with the nodes the transcoder left written by
    ``to_json`` and the further calls of ``transcoder`` a full buffer needs; the buffer, free
    again."""
    data, buf, start, end, buffer, done, ends, nxt, k = run
    view = buffer.data
    i = 0
    while True:
        at = 0
        for j in np.flatnonzero(done[i:nxt] == 0).tolist():
            j += i
            out.write(view[at:ends[j]])
            at = int(ends[j])
            out.write(_one(data, int(start[j]), int(end[j] - start[j]), marks, to_json))
        out.write(view[at:k])
        if nxt == i < len(start):  # a node too large for the buffer: written from its Node object
            out.write(_one(data, int(start[i]), int(end[i] - start[i]), marks, to_json))
            nxt += 1
        if nxt == len(start):
            return buffer
        i = nxt
        nxt, k = transcoder(buf, start, end, i, buffer, marks[0], marks[1], done, ends)


def _one(data: bytes, start: int, size: int, marks: tuple[np.ndarray, np.ndarray],
         to_json: Callable[[Node], str]) -> bytes:
    """A node the transcoder left, decoded and written by ``to_json``."""
    try:
        node = Node.FromString(data[start:start + size])
    except DecodeError:
        raise Reread from None
    return marks[0].tobytes() + to_json(node).encode() + marks[1].tobytes()
