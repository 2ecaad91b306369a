"""An ``.et`` file's node messages in runs: one bytes object and the messages' offsets.

For readers of the wire format (:mod:`chakra_core.trace._columns`): the file (plain or gzip) is
read in chunks of 1 MiB (of :data:`WHOLE_CHUNK` for a reader that keeps the whole rank) and each
chunk's complete frames are cut by one compiled loop over their length prefixes
(:func:`._wirekernels.cut_frames`), without a bytes object per node. The limits of
:class:`EtReader` apply (message size, empty messages, dependencies per node, gzip inflation), with
its messages; the node messages themselves are not decoded here.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

from chakra_core.base._errors import TraceFormatError
from chakra_core.io._etio import MAX_MESSAGE, EtReader, _Framer
from chakra_core.io._varint import decode_varint

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Run", "file_runs", "bytes_runs", "WHOLE_CHUNK"]

#: bytes read at a time: a run's arrays (a few dozen bytes per node) stay in the CPU's caches
_CHUNK = 1 << 20
#: bytes read at a time by a reader that keeps the whole rank anyway (fewer runs to join)
WHOLE_CHUNK = 64 << 20
_GZIP_MAGIC = b"\x1f\x8b"

#: (the bytes, start of each message in them, its length (int64 arrays), index of the first
#: node, file offset of the bytes or -1)
Run = tuple[bytes, "np.ndarray", "np.ndarray", int, int]


def file_runs(path: str, chunk: int | None = None, compile_it: bool = True) -> Iterator[Run]:
    """The node messages of ``path`` in runs of one chunk each, ``chunk`` bytes (1 MiB when
    None; the metadata message skipped); ``compile_it``: the frames are cut by the compiled
    loop (numba), else by the same loop as Python."""
    framer = _Framer(EtReader(path))
    try:
        with open(path, "rb") as raw:
            gz = raw.peek(2)[:2] == _GZIP_MAGIC
            f: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw  # type: ignore[assignment]
            chunk = chunk or _CHUNK
            if not gz:  # no larger buffer than the file needs (a large read costs even when short)
                chunk = min(chunk, os.fstat(raw.fileno()).st_size + 1)
            with f:
                yield from _runs(f, framer, raw if gz else None, chunk, compile_it)
    except (OSError, EOFError, zlib.error) as e:
        if isinstance(e, FileNotFoundError):
            raise TraceFormatError("no such file", path) from None
        if isinstance(e, (gzip.BadGzipFile, EOFError, zlib.error)):
            raise TraceFormatError(f"bad gzip data ({e})", path) from None
        raise TraceFormatError(f"cannot read ({e.strerror or e})", path) from None


def bytes_runs(path: str, data: bytes, compile_it: bool = True) -> Iterator[Run]:
    """:func:`file_runs` of ``data``, the bytes of the plain ``.et`` file ``path`` read already:
    one run, the same checks, errors naming ``path``."""
    try:
        yield from _runs(io.BytesIO(data), _Framer(EtReader(path)), None, len(data) + 1, compile_it)
    except EOFError:
        raise TraceFormatError("truncated message at end of file", path) from None


def _runs(f: BinaryIO, framer: _Framer, gz_raw: BinaryIO | None, chunk: int, compile_it: bool) -> Iterator[Run]:
    import numpy as np

    from chakra_core.base._kernels import chosen
    from chakra_core.io._wirekernels import cut_frames

    cut = chosen(cut_frames, compile_it)

    data = f.read(chunk)
    eof = len(data) < chunk  # a short read of a buffered file is its end
    ln, hp = _metadata(data, framer)
    while hp + ln > len(data):
        more = f.read(chunk)
        if not more:
            raise framer.fail("truncated message at end of file", 0)
        data += more
        eof = len(more) < chunk
    pos = hp + ln
    base, index = 0, 0  # file offset of data[0], index of the next node
    while True:
        at, starts, sizes, stop = cut(np.frombuffer(data, np.uint8) if compile_it else memoryview(data), pos, len(data))
        if len(at):
            _check(data, at, starts, sizes, base, index, framer)
            yield data, starts, sizes, index, base
            index += len(at)
        need = _length_at(data, stop, base, framer)
        if need > MAX_MESSAGE:
            raise framer.fail(f"message length {need} exceeds 256 MiB (corrupt length prefix?)", base + stop)
        if eof:
            if stop < len(data):
                raise framer.fail("truncated message at end of file", base + stop)
            return
        want = max(chunk, need + 16)
        more = f.read(want)
        eof = len(more) < want
        base += stop
        data, pos = data[stop:] + more, 0
        if gz_raw is not None:
            framer.check_inflation(gz_raw, base + len(data))


def _metadata(data: bytes, framer: _Framer) -> tuple[int, int]:
    """The length of the GlobalMetadata message at the start of ``data`` (the file's first bytes)
    and where it starts, checked as the reader checks it: from ``data`` when it holds the whole
    message, else by a reader of the file (which names a bad or cut message); ``(0, 0)`` for a
    file without one (its first message is a node)."""
    try:
        ln, hp = decode_varint(data)
    except (EOFError, ValueError):
        ln, hp = MAX_MESSAGE + 1, 0
    if ln > MAX_MESSAGE or hp + ln > len(data):
        return decode_varint(data) if framer.meta_sink.has_metadata else (0, 0)
    return (ln, hp) if framer._metadata(data[hp:hp + ln]) else (0, 0)


def _length_at(data: bytes, stop: int, base: int, framer: _Framer) -> int:
    """The length prefix at ``stop`` (0 when no whole prefix is left there: read on)."""
    if stop == len(data):
        return 0
    try:
        return decode_varint(data, stop)[0]
    except EOFError:
        return 0
    except ValueError:
        raise framer.fail("bad length prefix", base + stop) from None


def _check(data: bytes, frames, starts, sizes, base: int, index: int, framer: _Framer) -> None:
    """The reader's per-node limits on the frames of one run: no empty message, no more
    dependencies than the ``deps`` limit."""
    import numpy as np

    for k in np.flatnonzero((sizes == 0) | (sizes > framer.max_deps)).tolist():
        at, hp = int(frames[k]), int(starts[k])
        framer.check_node(data[at:hp + int(sizes[k])], hp - at, base + at, index + k)
