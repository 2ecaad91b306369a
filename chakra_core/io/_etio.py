"""Streaming reader and writer for Chakra ``.et`` files.

An ``.et`` file is a GlobalMetadata message followed by Node messages, each preceded by its
length as a protobuf varint; gzip is detected by its magic bytes on read and chosen by a ``.gz``
name on write.  A file whose first message is a node (Chakra's converters of 2023 wrote no
GlobalMetadata) is read from its first message on, with empty metadata and a
:class:`TraceFormatWarning` (:func:`_headless_node`).

Speed: the reader parses framed nodes in batches.  The framing ``varint(len) + message`` is,
with one tag byte (``0x0a``) in front, the encoding of one element of ``repeated Node nodes = 1``,
so a run of frames becomes one ``NodeBatch`` message that protobuf's C parser decodes in one call.
Memory stays flat: the file is read in fixed-size chunks and only one batch is alive at a time.
With numba installed, a large file (or any file once numba is loaded) is cut and rewritten into
that repeated form by one compiled loop (:func:`._etcut.frame_chunk`), so no Python code runs
per node.
"""

from __future__ import annotations

import gzip
import os
import warnings
import zlib
from collections.abc import Iterable, Iterator
from functools import cache
from itertools import chain, islice
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, TypeVar

from google.protobuf.message import DecodeError

from chakra_core.base._errors import ConfigError, TraceFormatError, TraceFormatWarning
from chakra_core.base._inputguard import refuse_replacing_input
from chakra_core.base._jitchoice import compiled_worthwhile
from chakra_core.base._kernels import compiled
from chakra_core.base._limits import get_limit, limit_message
from chakra_core.io._proto.et_batch_pb2 import NodeBatch
from chakra_core.io._schema import GlobalMetadata, Node, NodeType
from chakra_core.io._varint import decode_varint, encode_varint

__all__ = ["EtReader", "EtWriter", "read_et", "write_et", "open_binary", "atomic_output", "frame_nodes"]

#: bytes read at a time: chunks of 1 MiB made decoding a 1 M-node file about an eighth slower
#: (measured): the C library handed their buffers back to the system and took them again, so
#: each chunk's pages were faulted in anew
_CHUNK = 256 << 10
#: bytes read first for the metadata alone (a file's first message; more are read when it is longer)
_META_READ = 8 << 10
_T = TypeVar("_T")
_BATCH = 4096
#: ASTRA-sim's reader takes at most 4 varint bytes, so one message is below 256 MiB.
MAX_MESSAGE = (1 << 28) - 1
_GZIP_MAGIC = b"\x1f\x8b"
#: explicit encodings of an all-default message, so that no zero-length message is ever written.
_EMPTY_NODE = b"\x08\x00"  # id = 0
_EMPTY_META = b"\x0a\x00"  # version = ""
#: files from this size on (bytes on disk) are cut by the compiled loop when numba is installed
#: and not loaded yet: loading it takes about 0.35 s of CPU (measured), which the compiled cut
#: (about 0.2 us less per node) repays from about 2 M nodes of about 50 bytes.
COMPILED_FROM = 96 << 20


def open_binary(path: str | os.PathLike) -> BinaryIO:
    """Open ``path`` for reading, decompressing when it starts with the gzip magic bytes."""
    f = open(path, "rb")
    head = f.peek(2)[:2] if hasattr(f, "peek") else b""
    if head == _GZIP_MAGIC:
        f.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]  # closes its own file
    return f


def frame_nodes(messages: Iterable[bytes]) -> bytes:
    """Serialized node messages framed as an ``.et`` body holds them: each preceded by its
    varint length (an empty message written as ``id = 0``, as :class:`EtWriter` does), for
    :meth:`EtWriter.write_framed`.  Raises TraceFormatError for a message over 256 MiB."""
    msgs = list(messages)
    framed = _framed(msgs)
    if framed is not None:
        return framed
    out = []
    for data in msgs:
        data = data or _EMPTY_NODE
        ln = len(data)
        if ln > MAX_MESSAGE:
            raise TraceFormatError(f"node message of {ln} bytes exceeds 256 MiB")
        out.append(encode_varint(ln) + data)
    return b"".join(out)


class EtReader:
    """Stream the nodes of one ``.et`` file (plain or gzip) with flat memory.

    Reading is strict: a node that does not decode (bad wire data, a name that is not UTF-8), an
    empty (zero-length) node message, a node with more dependencies than the ``deps`` limit, and a
    gzip stream that expands past the ``inflation`` limit are errors naming the byte and node.

    >>> r = EtReader("trace.0.et")            # doctest: +SKIP
    >>> r.metadata.version, sum(1 for _ in r)  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike, batch_size: int = _BATCH):
        self.path = str(path)
        self.batch_size = batch_size
        self._meta: GlobalMetadata | None = None
        #: the file has no GlobalMetadata: its first message is its first node
        self._headless = False

    @property
    def metadata(self) -> GlobalMetadata:
        """The file's GlobalMetadata (reads only the start of the file)."""
        if self._meta is None:
            for _ in self._frames(meta_only=True):
                break
        assert self._meta is not None
        return self._meta

    @property
    def has_metadata(self) -> bool:
        """Whether the file starts with a GlobalMetadata message (False for a file whose first
        message is a node, as Chakra's converters of 2023 wrote: its :attr:`metadata` is empty)."""
        _ = self.metadata
        return not self._headless

    def __iter__(self) -> Iterator[Node]:
        """The nodes, one after another (the batches flattened at C speed: no generator step per
        node)."""
        return chain.from_iterable(self.batches())

    def batches(self) -> Iterator[Iterable[Node]]:
        """Yield the nodes in batches (protobuf repeated containers) of up to ``batch_size``."""
        if _compiled_cut(self.path):
            yield from self._run_batches()
            return
        for offset, index, frames in self._frames():
            yield self._decode(offset, index, frames)

    def _run_batches(self) -> Iterator[Iterable[Node]]:
        """The batches cut by the compiled loop: the same batches, checks and errors, in the same
        order, as the Python cut."""
        _ = self.metadata
        size = max(self.batch_size, 1)
        pending: list[tuple[_Piece, int, int]] = []
        count = 0
        for piece in self._named(_Framer(self).compiled()):
            lo, n = 0, len(piece.in_at)
            while lo < n:
                hi = min(n, lo + size - count)
                pending.append((piece, lo, hi))
                count += hi - lo
                lo = hi
                if count == size:
                    yield self._decode_pieces(pending)
                    pending, count = [], 0
        if pending:
            yield self._decode_pieces(pending)

    def _decode_pieces(self, parts: list[tuple[_Piece, int, int]]) -> Iterable[Node]:
        """One batch of the frames ``lo`` to ``hi`` of each piece; the first node that does not
        decode is an error."""
        try:
            return NodeBatch.FromString(b"".join(piece.framed(lo, hi) for piece, lo, hi in parts)).nodes
        except DecodeError:
            for piece, lo, hi in parts:
                piece.locate_bad(self.path, lo, hi)
            piece, lo, _ = parts[0]
            raise TraceFormatError("not a Chakra node message", self.path,
                                   f"byte {piece.base + int(piece.in_at[lo])}") from None

    def may_contain(self, needle: bytes) -> bool:
        """False when the file's bytes (decompressed) do not hold ``needle``: a search a chunk at
        a time, nothing cut or decoded (True may also be the metadata's bytes, or two messages')."""
        try:
            return _Framer(self).may_contain(needle)
        except (OSError, EOFError, zlib.error) as e:
            raise self._read_error(e) from None

    def raw(self) -> Iterator[bytes]:
        """Yield each node's serialized bytes (for fast copies); each batch is checked to decode."""
        for offset, index, frames in self._frames():
            self._decode(offset, index, frames)
            for fr in frames:
                yield fr[1:] if fr[0] < 0x80 else fr[decode_varint(fr)[1]:]

    def _decode(self, offset: int, index: int, frames: list[bytes]) -> Iterable[Node]:
        try:
            return NodeBatch.FromString(b"\n" + b"\n".join(frames)).nodes
        except DecodeError:
            self._locate_bad(offset, index, frames)

    def _locate_bad(self, offset: int, index: int, frames: list[bytes]) -> NoReturn:
        for i, fr in enumerate(frames):
            _, p = decode_varint(fr)
            try:
                Node.FromString(fr[p:])
            except DecodeError as e:
                raise TraceFormatError(f"node #{index + i} is not a Chakra node message ({e})",
                                       self.path, f"byte {offset}") from None
            offset += len(fr)
        raise TraceFormatError("not a Chakra node message", self.path, f"byte {offset}")

    def _frames(self, meta_only: bool = False) -> Iterator[tuple[int, int, list[bytes]]]:
        """Yield (file offset of the first frame, its node index, [frame bytes incl. length prefix])."""
        return self._named(_Framer(self).frames(meta_only))

    def _named(self, items: Iterator[_T]) -> Iterator[_T]:
        """``items``, with a failed read or bad gzip data raised as a TraceFormatError naming the file."""
        try:
            yield from items
        except (OSError, EOFError, zlib.error) as e:
            raise self._read_error(e) from None

    def _read_error(self, e: OSError | EOFError | zlib.error) -> TraceFormatError:
        """A failed read or bad gzip data as a TraceFormatError naming the file."""
        if isinstance(e, FileNotFoundError):
            return TraceFormatError("no such file", self.path)
        if isinstance(e, (gzip.BadGzipFile, EOFError, zlib.error)):
            return TraceFormatError(f"bad gzip data ({e})", self.path)
        return TraceFormatError(f"cannot read ({e.strerror or e})", self.path)


class _Piece:
    """Frames of one buffer rewritten by :func:`._etcut.frame_chunk`: the rewritten bytes, where
    each frame starts in them and in the buffer, the buffer, its file offset, the first node's
    index."""

    def __init__(self, out, out_at, in_at, data: bytes, base: int, index: int):
        self.out, self.out_at, self.in_at = out, out_at, in_at
        self.data, self.base, self.index = data, base, index

    def framed(self, lo: int, hi: int) -> memoryview:
        """Frames ``lo`` to ``hi`` in the repeated-field form (a view of the rewritten bytes)."""
        stop = int(self.out_at[hi]) if hi < len(self.out_at) else len(self.out)
        return self.out[int(self.out_at[lo]):stop].data

    def locate_bad(self, path: str, lo: int, hi: int) -> None:
        """Raise the located error of the first of frames ``lo`` to ``hi`` that does not decode
        as a Node, if any."""
        for k in range(lo, hi):
            at = int(self.in_at[k])
            ln, hp = decode_varint(self.data, at)
            try:
                Node.FromString(self.data[hp:hp + ln])
            except DecodeError as e:
                raise TraceFormatError(f"node #{self.index + k} is not a Chakra node message ({e})",
                                       path, f"byte {self.base + at}") from None


def _compiled_cut(path: str) -> bool:
    """Whether to read ``path`` with the compiled loop: numba loaded already, or the file at
    least :data:`COMPILED_FROM` bytes; and numba imports (installed and working)."""
    if not compiled_worthwhile(path, COMPILED_FROM):
        return False
    from chakra_core.io._etcut import frame_chunk

    try:
        compiled(frame_chunk)
    except ConfigError:
        return False
    return True


#: bytes that end a varint (high bit clear), deleted to count the others
_CONTINUATION = bytes(range(0x80, 0x100))
_DEP_FIELDS = (4, 5)  # Node.ctrl_deps, Node.data_deps
#: a gzip input is checked against the inflation limit once it has expanded past this
_INFLATION_FLOOR = 64 << 20


def _count_deps(msg: bytes, stop: int) -> int:
    """The dependencies (``ctrl_deps`` + ``data_deps``) encoded in Node message ``msg``.

    Walks the message's top-level fields only; packed lists are counted at C speed by their
    final varint bytes.  Counting stops once it passes ``stop``; malformed data ends the walk
    (the decoder reports it).
    """
    count = pos = 0
    end = len(msg)
    try:
        while pos < end and count <= stop:
            key, pos = decode_varint(msg, pos, end)
            field, wire = key >> 3, key & 7
            if wire not in (0, 1, 2, 5):
                break
            if wire == 0:
                _, pos = decode_varint(msg, pos, end)
                count += field in _DEP_FIELDS
            elif wire == 2:
                ln, pos = decode_varint(msg, pos, end)
                if field in _DEP_FIELDS:
                    count += len(msg[pos : pos + ln].translate(None, _CONTINUATION))
                pos += ln
            else:
                pos += 8 if wire == 1 else 4
    except (EOFError, ValueError):  # a varint cut short or over 10 bytes
        pass
    return count


class _Framer:
    """Cuts one file into length-prefixed frames, refilling a fixed-size buffer as it goes."""

    def __init__(self, reader: EtReader):
        self.path = reader.path
        self.size = reader.batch_size
        self.meta_sink = reader
        self.max_deps = get_limit("deps")
        self.max_inflation = get_limit("inflation")

    def fail(self, message: str, offset: int) -> TraceFormatError:
        return TraceFormatError(message, self.path, f"byte {offset}")

    def check_inflation(self, raw: BinaryIO, expanded: int) -> None:
        """Refuse a gzip stream that has expanded more than the limit allows."""
        packed = max(raw.tell(), 1)
        if expanded > _INFLATION_FLOOR and expanded > self.max_inflation * packed:
            raise self.fail(limit_message("inflation", expanded // packed, "gzip data expands by a factor of"),
                            expanded)

    def may_contain(self, needle: bytes) -> bool:
        """Whether the file's bytes hold ``needle`` (:meth:`EtReader.may_contain`)."""
        keep = len(needle) - 1
        with open(self.path, "rb") as raw:
            gz = raw.peek(2)[:2] == _GZIP_MAGIC
            f: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw  # type: ignore[assignment]
            with f:
                tail, expanded = b"", 0
                while chunk := f.read(_CHUNK):
                    expanded += len(chunk)
                    if gz:
                        self.check_inflation(raw, expanded)
                    data = tail + chunk
                    if needle in data:
                        return True
                    tail = data[len(data) - keep:] if keep else b""
        return False

    def check_node(self, frame: bytes, start: int, offset: int, index: int) -> None:
        """Refuse an empty node message, and a node with more dependencies than the limit."""
        if len(frame) == start:
            raise self.fail(f"node #{index} is an empty (zero-length) message; no Chakra writer "
                            "writes one (an all-default node has no type)", offset)
        if len(frame) - start > self.max_deps:  # each dependency takes at least one byte
            deps = _count_deps(frame[start:], self.max_deps)
            if deps > self.max_deps:
                raise self.fail(f"node #{index}: " + limit_message("deps", deps, "dependency count"), offset)

    def frames(self, meta_only: bool) -> Iterator[tuple[int, int, list[bytes]]]:
        with open(self.path, "rb") as raw:
            gz = raw.peek(2)[:2] == _GZIP_MAGIC
            f: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw  # type: ignore[assignment]
            with f:
                yield from self._cut(f, raw if gz else None, meta_only)

    def _cut(self, f: BinaryIO, gz_raw: BinaryIO | None,
             meta_only: bool) -> Iterator[tuple[int, int, list[bytes]]]:
        """The GlobalMetadata message (kept on the reader), then the node frames in batches of up
        to ``size``: (file offset, node index of the first, frames with their length prefix).

        One loop over a buffer refilled a chunk at a time, with no call per frame beyond the
        varint of a prefix of three bytes or more (frames of 16 KiB and over): yielding each
        frame from a generator of its own, or checking its prefix in a method, made reading 20%
        slower (measured).  The metadata alone is read from the first 8 KiB (more when it is
        longer): a set's groups read every rank's (about 45 us a rank for a chunk)."""
        buf = f.read(_META_READ if meta_only else _CHUNK)
        if not buf:
            raise TraceFormatError("empty file: no GlobalMetadata message", self.path)
        base = pos = 0  # base: file offset of buf[0]
        end = len(buf)
        eof = False
        first = True
        index = 0  # node index of the next frame
        batch: list[bytes] = []
        batch_off = batch_index = 0
        while True:
            if pos < end and buf[pos] < 0x80:
                ln = buf[pos]
                hp = pos + 1
            elif pos + 1 < end and buf[pos + 1] < 0x80:  # a two-byte prefix: most nodes with inputs
                ln = buf[pos] & 0x7F | buf[pos + 1] << 7
                hp = pos + 2
            else:
                ln, hp = self._prefix(buf, pos, end, base)
            if ln < 0 or hp + ln > end:
                refilled = self._refill(f, gz_raw, buf, pos, base, ln, eof)
                if refilled is None:
                    break
                buf, base, eof = refilled
                pos, end = 0, len(buf)
                continue
            if first:
                first = False
                if self._metadata(buf[hp : hp + ln]):
                    pos = hp + ln
                    if meta_only:
                        return
                    continue
                if meta_only:
                    return
            frame = buf[pos : hp + ln]
            if ln == 0 or ln > self.max_deps:
                self.check_node(frame, hp - pos, base + pos, index)
            if not batch:
                batch_off, batch_index = base + pos, index
            batch.append(frame)
            index += 1
            pos = hp + ln
            if len(batch) >= self.size:
                yield batch_off, batch_index, batch
                batch = []
        if batch:
            yield batch_off, batch_index, batch

    def _prefix(self, buf: bytes, pos: int, end: int, base: int) -> tuple[int, int]:
        """The length prefix at ``pos`` and where its message starts; ``(-1, pos)`` when the
        prefix is cut short by ``end`` (read on)."""
        try:
            ln, hp = decode_varint(buf, pos, end)
        except EOFError:
            return -1, pos
        except ValueError:
            raise self.fail("bad length prefix", base + pos) from None
        if ln > MAX_MESSAGE:
            raise self.fail(f"message length {ln} exceeds 256 MiB (corrupt length prefix?)", base + pos)
        return ln, hp

    def compiled(self) -> Iterator[_Piece]:
        """The node frames in pieces cut by the compiled loop (the metadata message skipped: the
        reader has read it); frames the loop leaves are checked here as :meth:`_cut` does."""
        with open(self.path, "rb") as raw:
            gz = raw.peek(2)[:2] == _GZIP_MAGIC
            f: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw  # type: ignore[assignment]
            with f:
                yield from self._compiled_cut(f, raw if gz else None)

    def _compiled_cut(self, f: BinaryIO, gz_raw: BinaryIO | None) -> Iterator[_Piece]:
        import numpy as np

        from chakra_core.io._etcut import frame_chunk

        cut = compiled(frame_chunk)
        buf = f.read(_CHUNK)
        ln, hp = decode_varint(buf)
        while hp + ln > len(buf):
            buf += f.read(max(_CHUNK, hp + ln - len(buf)))
        pos, base, index, eof = hp + ln if self.meta_sink.has_metadata else 0, 0, 0, False
        longest = min(self.max_deps, MAX_MESSAGE)
        while True:
            end = len(buf)
            out, out_at, in_at, pos = cut(np.frombuffer(buf, np.uint8), pos, end, longest)
            if len(in_at):
                yield _Piece(out, out_at, in_at, buf, base, index)
                index += len(in_at)
            ln, hp = self._prefix(buf, pos, end, base)
            if ln < 0 or hp + ln > end:
                refilled = self._refill(f, gz_raw, buf, pos, base, ln, eof)
                if refilled is None:
                    return
                buf, base, eof = refilled
                pos = 0
                continue
            frame = buf[pos:hp + ln]  # empty, or longer than the deps limit
            self.check_node(frame, hp - pos, base + pos, index)
            yield _Piece(np.frombuffer(b"\n" + frame, np.uint8), np.zeros(1, np.int64), np.array([pos], np.int64),
                         buf, base, index)
            index += 1
            pos = hp + ln

    def _refill(self, f: BinaryIO, gz_raw: BinaryIO | None, buf: bytes, pos: int, base: int, ln: int,
                eof: bool) -> tuple[bytes, int, bool] | None:
        """The buffer from ``pos`` on with the next chunk (at least the ``ln`` bytes of the cut
        message) after it: (buffer, its file offset, end of file reached); None at the end of
        the file; a message cut by the end of the file is an error."""
        if eof:
            if pos == len(buf):
                return None
            raise self.fail("truncated message at end of file", base + pos)
        more = f.read(max(_CHUNK, ln + 16))
        buf, base = buf[pos:] + more, base + pos
        if gz_raw is not None:
            self.check_inflation(gz_raw, base + len(buf))
        return buf, base, not more

    def _metadata(self, message: bytes) -> bool:
        """Keep the file's first message, its GlobalMetadata, on the reader (True); False when
        it is a node instead (:func:`_headless_node`): the metadata is then empty, the nodes start
        with that message, and a :class:`TraceFormatWarning` says so."""
        reader = self.meta_sink
        try:
            meta = GlobalMetadata.FromString(message)
        except DecodeError as e:
            if not _headless_node(message):
                raise self.fail(f"first message is not a GlobalMetadata ({e})", 0) from None
        else:  # a node can read as a GlobalMetadata of unknown fields only
            if meta.version or meta.attr or not message or not _headless_node(message):
                reader._meta, reader._headless = meta, False
                return True
        reader._meta, reader._headless = GlobalMetadata(), True
        warnings.warn(TraceFormatWarning(f"{self.path}: no GlobalMetadata (its first message is a node, as "
                                         "Chakra's converters of 2023 wrote): read from its first message on, "
                                         "with empty metadata"), stacklevel=2)
        return False


def _headless_node(message: bytes) -> bool:
    """Whether a file's first message is a node rather than its GlobalMetadata: it reads as a
    Node of a known type other than INVALID_NODE (a GlobalMetadata has no such field; files of
    Chakra's 2023 text converter start so)."""
    try:
        kind = Node.FromString(message).type
    except DecodeError:
        return False
    return kind in _NODE_TYPES


#: the node types of the schema, INVALID_NODE (0) left out
_NODE_TYPES = frozenset(int(t) for t in NodeType if t != NodeType.INVALID_NODE)


def read_et(path: str | os.PathLike) -> tuple[GlobalMetadata, list[Node]]:
    """Read a whole ``.et`` file into memory: ``(metadata, [nodes])``."""
    r = EtReader(path)
    nodes: list[Node] = []
    for b in r.batches():
        nodes.extend(b)
    return r.metadata, nodes


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def open_fresh(path: str | os.PathLike, mode: str = "wb", **kwargs: Any) -> Any:
    """``open(path, mode, **kwargs)`` for writing the path :class:`atomic_output` gives (a fresh
    empty file, or a target that is not a regular file), without truncating it: ext4 writes out
    at its close every page of a regular file that was truncated to zero (its ``auto_da_alloc``
    rule, meant for files rewritten in place), about 0.12 s for 234 MB; a fresh file needs no
    truncation."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        return open(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise


class atomic_output:
    """Context manager giving a temporary path beside ``path``, renamed into place on success.

    On an exception the temporary file is removed and any existing ``path`` is left untouched;
    an OSError (disk full, read-only) is raised again naming ``path``, not the temporary file;
    a directory in the way is a ConfigError naming ``path``.  Temporaries that killed runs left beside ``path`` (named
    ``.NAME.chakra-file-PID-RANDOM.tmp``, PID a process that no longer runs) are removed.  A
    symbolic link is followed (the link stays, its target is replaced); a target that exists but
    is not a regular file (``/dev/stdout``, a FIFO) is written directly.  The new file gets the
    old file's permissions, or ``0o666`` less the umask.  With ``defer=True`` the rename waits for
    :meth:`commit` or :meth:`discard`.
    """

    def __init__(self, path: str | os.PathLike, defer: bool = False):
        self.path = Path(path)
        self.defer = defer
        self.tmp: Path | None = None

    def __enter__(self) -> Path:
        target = Path(os.path.realpath(self.path)) if self.path.is_symlink() else self.path
        self.target = target
        if target.exists() and not target.is_file():
            from chakra_core.io._publish import refuse_directory_in_the_way

            refuse_directory_in_the_way(target)
            self.tmp = None
            return target
        refuse_replacing_input(self.path)
        try:
            self.tmp = self._create(target)
        except OSError as e:
            raise self._named(e) from None
        return self.tmp

    @staticmethod
    def _create(target: Path) -> Path:
        from chakra_core.io._publish import in_staging, make_parents, remove_stale, renamed_error, temp_sibling

        make_parents(target)
        if not in_staging(target):
            remove_stale(target)
        tmp = temp_sibling(target, "file")
        mode = (target.stat().st_mode & 0o7777) if target.exists() else (0o666 & ~_umask())
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as e:  # named as the output, not the temporary file
            raise renamed_error(e, tmp, target) from None
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        return tmp

    def _named(self, e: OSError) -> OSError:
        """``e`` naming the target instead of the temporary file."""
        from chakra_core.io._publish import renamed_error

        return renamed_error(e, self.tmp or self.target, self.target)

    def commit(self) -> None:
        """Rename the temporary file into place."""
        if self.tmp is not None:
            try:
                os.replace(self.tmp, self.target)
            except OSError as e:
                self.discard()
                raise self._named(e) from None
            self.tmp = None

    def discard(self) -> None:
        """Remove the temporary file; the target is left as it was."""
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)
            self.tmp = None

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            named = self._named(exc) if isinstance(exc, OSError) else None
            self.discard()
            if named is not None and named is not exc:
                raise named from None
        elif not self.defer:
            self.commit()


#: the serializer of every message of protobuf's C backend (a method of its base class), called
#: without a method lookup per node
_SERIALIZE = Node.SerializeToString


@cache
def _heads() -> list[bytes]:
    """The bytes that go before a message of each length below 16 KiB: its varint length (one or
    two bytes); before an empty message, the whole frame of the explicit ``id = 0`` written in
    its place (the empty message adds nothing after it)."""
    heads = [bytes((n,)) for n in range(0x80)] + [bytes((n & 0x7F | 0x80, n >> 7)) for n in range(0x80, 1 << 14)]
    heads[0] = bytes((len(_EMPTY_NODE),)) + _EMPTY_NODE
    return heads


def _framed(msgs: list[bytes]) -> bytes | None:
    """``msgs`` framed as an ``.et`` body holds them, in one join with no Python code per message;
    None when one is 16 KiB or longer (no head in the table)."""
    parts = msgs * 2
    parts[1::2] = msgs
    try:
        parts[0::2] = _heads_of(list(map(len, msgs)))
    except IndexError:
        return None
    return b"".join(parts)


def _heads_of(lens: list[int]) -> list[bytes]:
    """The heads (:func:`_heads`) of messages of lengths ``lens``: when all are one byte (every
    length from 1 to 127), cut from one ``bytes`` of the lengths at C speed, else looked up in
    the table (IndexError for a length of 16 KiB or more)."""
    try:
        short = bytes(lens)
    except ValueError:  # a length of 256 or more
        short = b"\x80"
    if short.isascii() and 0 not in short:
        return memoryview(short).cast("c").tolist()  # type: ignore[return-value]  # format "c": bytes
    return list(map(_heads().__getitem__, lens))


def _serialized(batch: list[Node]) -> list[bytes]:
    """The messages of ``batch``: one C call per node when all are messages of protobuf's C
    backend, else each one's own method."""
    try:
        return list(map(_SERIALIZE, batch))
    except TypeError:
        return [n.SerializeToString() for n in batch]


class EtWriter:
    """Write one ``.et`` file: metadata first, then nodes; atomic (temp file + rename).

    Use as a context manager; gzip is used when the name ends in ``.gz``.  Never writes a
    zero-length message: an all-default node is written as an explicit ``id = 0``.
    """

    def __init__(self, path: str | os.PathLike, metadata: GlobalMetadata | None = None,
                 compress: bool | None = None, compresslevel: int = 6, defer: bool = False):
        self.path = Path(path)
        self.defer = defer
        self.metadata = metadata if metadata is not None else GlobalMetadata(version="0.0.4")
        self.compress = self.path.name.endswith(".gz") if compress is None else compress
        self.compresslevel = compresslevel
        self.count = 0
        self._atomic: atomic_output | None = None
        self._f: BinaryIO | gzip.GzipFile | None = None
        self._pending: list[bytes] = []
        self._pending_count = 0

    def __enter__(self) -> EtWriter:
        self._atomic = atomic_output(self.path, defer=self.defer)
        tmp = self._atomic.__enter__()
        raw = open_fresh(tmp, "wb", buffering=1 << 20)
        if self.compress:
            f: BinaryIO | gzip.GzipFile = gzip.GzipFile(filename="", fileobj=raw, mode="wb",
                                                        compresslevel=self.compresslevel, mtime=0)
            self._raw: BinaryIO | None = raw
        else:
            f = raw
            self._raw = None
        meta = self.metadata.SerializeToString() or _EMPTY_META
        f.write(encode_varint(len(meta)) + meta)
        self._f = f
        return self

    def write(self, node: Node) -> None:
        """Append one node."""
        self.write_raw(node.SerializeToString())

    def write_many(self, nodes: Iterable[Node]) -> None:
        """Append many nodes: serialized a batch at a time (one C call per node, no Python code)
        and framed with one join per batch."""
        it = iter(nodes)
        while True:
            batch: list[Node] = []
            try:
                batch.extend(islice(it, _BATCH))
            finally:
                self._append_many(_serialized(batch))
            if len(batch) < _BATCH:
                return

    def _append_many(self, msgs: list[bytes]) -> None:
        """Append serialized node messages, framed together when all have a head in the table
        (each below 16 KiB), else one by one."""
        framed = _framed(msgs)
        if framed is None:
            for data in msgs:
                self.write_raw(data)
            return
        # a framed batch goes out whole: joined again with the next one, the copies' memory went
        # back to the system and was faulted in anew
        self._flush()
        assert self._f is not None
        self._f.write(framed)
        self.count += len(msgs)

    def write_raw(self, data: bytes) -> None:
        """Append one already serialized node message."""
        data = data or _EMPTY_NODE
        ln = len(data)
        if ln < 0x80:
            self._pending.append(bytes((ln,)) + data)
        elif ln > MAX_MESSAGE:
            raise TraceFormatError(f"node message of {ln} bytes exceeds 256 MiB", str(self.path))
        else:
            self._pending.append(encode_varint(ln) + data)
        self._pending_count += 1
        if self._pending_count >= _BATCH:
            self._flush()

    def write_framed(self, data: bytes, count: int) -> None:
        """Append ``count`` node messages already framed as an ``.et`` body holds them (each a
        varint length, then the message); the caller vouches for the framing."""
        self._flush()
        assert self._f is not None
        self._f.write(data)
        self.count += count

    def _flush(self) -> None:
        if self._pending:
            assert self._f is not None
            self.count += self._pending_count
            self._f.write(b"".join(self._pending))
            self._pending = []
            self._pending_count = 0

    @property
    def atomic(self) -> atomic_output:
        """The temporary-file handle (``commit()``/``discard()`` it when ``defer=True``)."""
        assert self._atomic is not None
        return self._atomic

    def __exit__(self, exc_type, exc, tb) -> None:
        assert self._f is not None and self._atomic is not None
        try:
            if exc_type is None:
                self._flush()
            self._f.close()
            if self._raw is not None:
                self._raw.close()
        except BaseException as e:  # a failed final flush or close must not publish the file
            self._atomic.__exit__(type(e), e, e.__traceback__)
            raise
        self._atomic.__exit__(exc_type, exc, tb)


def write_et(path: str | os.PathLike, metadata: GlobalMetadata | None, nodes: Iterable[Node]) -> int:
    """Write ``nodes`` to ``path`` atomically; return the number of nodes written."""
    with EtWriter(path, metadata) as w:
        w.write_many(nodes)
    return w.count
