"""A rank's role: its trace up to a consistent relabelling of process groups and peers.

Hybrid-parallel ranks differ only in which groups they talk to (``pg_name``) and which peers
they send to or receive from: the ranks of one tensor-parallel position across data-parallel
replicas, or the stages of a pipeline with their neighbours, have traces that are equal once
every group name and peer rank is replaced by the order in which the rank first names it.
:func:`role_key` computes that from the serialized node bytes with one walk a run at a time
(:mod:`._rolekernel`, compiled when numba is installed: each such attribute becomes a label
token, nothing else is decoded), so that a simulator can group ranks before it builds anything
per rank.  A node holding such an attribute in an unusual form (a group name in an integer slot,
a doc string, ...) is decoded and labelled here.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING, Any

import numpy as np
from google.protobuf.message import DecodeError

from chakra_core.base._jitchoice import compiled_worthwhile, files_hold
from chakra_core.base._kernels import INSTALLED, chosen
from chakra_core.io._schema import AttributeProto, Node
from chakra_core.io._varint import encode_varint
from chakra_core.trace._attrs import int_value, str_value
from chakra_core.trace._rolekernel import DONE, FULL, TOKEN, Labels, group_code, peer_code, relabel_run
from chakra_core.trace._traceset import FileRank, RankTrace

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["RoleKey", "RoleHasher", "role_key", "role_keys", "COMPILED_FROM", "THREADS_FROM", "MAX_THREADS"]

#: a rank's ``.et`` file of at least this many bytes is keyed by the compiled loops unless told otherwise
#: (as Python about 25 ms a MB; loading numba and its first calls about 0.5 s)
COMPILED_FROM = 16 << 20

#: the ranks' files hold at least this many bytes for :func:`role_keys` to take their keys on
#: threads (a rank of the 8-rank text examples costs 0.1 ms more on a thread than in the caller's)
THREADS_FROM = 8 << 20
#: the most threads :func:`role_keys` takes by itself: about a quarter of a key holds the GIL, so
#: more threads than this add memory (two keys in flight each), hardly speed
MAX_THREADS = 8
#: nodes relabelled at a time when they are not read from a file
_CHUNK = 4096
#: keys of file-backed ranks kept (by :func:`_seen`), and how many at most
_KEPT: dict[tuple, RoleKey] = {}
_KEEP = 1 << 16
#: keys of small plain files that name no peer, by a digest of the file's bytes (at most _KEEP)
_BY_CONTENT: dict[bytes, RoleKey] = {}
#: the bytes and key of the file last keyed by its content (:func:`_by_content`)
_LAST: list[tuple[bytes, RoleKey] | None] = [None]
#: files of at least this many bytes are not kept by their content (hashing a file costs about as much
#: a byte as its walk: only the walk's fixed costs, which dominate on small files, are saved)
CONTENT_BELOW = 16 << 10
#: the attributes whose values are labelled relative to the rank (as they appear in a node's bytes)
_PEER_NAMES = (b"comm_src", b"comm_dst")
_GZIP_MAGIC = b"\x1f\x8b"
#: the token kinds of the relabelled attributes (as :mod:`._rolekernel` writes them)
_KINDS = {"pg_name": b"g", "comm_src": b"s", "comm_dst": b"d"}
_NAMES = tuple(name.encode() for name in _KINDS)
#: the first bytes of a node the caller labelled, and of one that did not decode
_DECODED, _UNREAD = bytes([TOKEN]) + b"U", bytes([TOKEN]) + b"B"


@dataclass(frozen=True)
class RoleKey:
    """One rank's role.

    ``digest``: 20 bytes over every node's bytes in file order, with each ``pg_name`` value and
    each peer rank (``comm_src``/``comm_dst``) replaced by its label, and over the bytes of each
    name that is not UTF-8; ``groups``: the ``pg_name`` values in the order the rank first names
    them (label i is ``groups[i]``; "" and "0", the whole set, keep their own name; bytes that
    are not UTF-8 replaced by U+FFFD); ``peers``: the peer ranks in first-naming order (the rank
    itself is labelled ``self``).  Two ranks with equal ``digest`` have equal traces up to the
    relabelling ``groups[i] -> other.groups[i]``, ``peers[i] -> other.peers[i]``.
    """

    digest: bytes
    groups: tuple[str, ...]
    peers: tuple[int, ...]


class RoleHasher:
    """:func:`role_key` fed by the caller, one run of serialized nodes at a time (for a reader
    that passes over the rank's bytes anyway; ``compile_it``: the loops run compiled, else as
    Python)."""

    def __init__(self, rank: int, compile_it: bool = INSTALLED):
        self._labels = Labels(rank, compile_it)
        self._bytes = hashlib.blake2b(digest_size=20)
        self._sizes = hashlib.blake2b(digest_size=20)

    def add(self, chunk: list[bytes]) -> None:
        """Feed the next run of node messages, in file order."""
        self._add_run(*_joined(chunk))

    def _add_run(self, data: bytes, start: np.ndarray, size: np.ndarray) -> None:
        """Feed the next run of node messages as one bytes object and each message's start and
        length (int64 arrays)."""
        labels = self._labels
        named = None  # per node, whether its bytes hold a name of _KINDS (else hashed as they are)
        if labels.compile_it:
            spans = start, size, np.ones(len(start), bool)
        else:  # the interpreted loop reads Python ints fastest: positions and choices in lists
            named = _named(data, start, size)
            if not named.any() and int(size.sum()) == len(data):  # the run is its own relabelled copy
                self._bytes.update(data)
                self._sizes.update(size.astype(np.int64).tobytes())
                return
            spans = start.tolist(), size.tolist(), named.tolist()
        buf, out = _buffers(data, labels.compile_it)
        sizes = np.zeros(len(start), np.int64)
        first, at = 0, 0
        relabel = chosen(relabel_run, labels.compile_it)
        while True:
            status, i, at = relabel(buf, *spans, first, out, at, sizes, labels.state())
            first = i
            if status == FULL:
                labels.room(int(size[i]))
                continue
            self._bytes.update(memoryview(out)[:at])
            if status == DONE:
                break
            node = data[start[i]:start[i] + size[i]]
            if named is None:  # the compiled walk left a node: taken as the interpreted one takes it
                named = _named(data, start, size)
            if named[i]:
                node = _decoded(node, labels)
            sizes[i] = len(node)
            self._bytes.update(node)
            first, at = i + 1, 0
        self._sizes.update(sizes.tobytes())

    def key(self) -> RoleKey:
        """The :class:`RoleKey` of the nodes fed so far (the same nodes give the same key, however
        they were cut into runs)."""
        groups, undecodable = self._labels.groups()
        digest = hashlib.blake2b(self._bytes.digest() + self._sizes.digest() + undecodable, digest_size=20,
                                 person=b"chakra-role").digest()
        return RoleKey(digest, groups, self._labels.peer_ranks())


def role_key(rt: RankTrace, compile_it: bool | None = None) -> RoleKey:
    """The :class:`RoleKey` of rank ``rt`` (one pass over its serialized nodes: an ``.et``
    file's bytes a chunk of 1 MiB at a time by the compiled loops, else 4,096 nodes at a
    time).  ``compile_it``: the loops run compiled (numba), else as Python, with the same key;
    None: compiled when numba is installed and either loaded already or ``rt`` is not a file or
    a file of :data:`COMPILED_FROM` bytes or more.  The key of a file-backed rank is kept for the
    process while its file is unchanged (same device, inode, size and modification time):
    validation and a simulator's symmetry ask for the same keys; that of a plain file of under
    16 KiB that names no peer (no ``comm_src``/``comm_dst``), whose key depends on its bytes
    alone, is also kept by its bytes, for the files of other ranks and sets with the same bytes."""
    seen = _seen(rt)
    kept = _KEPT.get(seen) if seen is not None else None  # one lookup: another thread may clear it
    if kept is not None:
        return kept
    content = _rankless_content(seen)
    key = _computed(rt, compile_it, None) if content is None else _by_content(rt, compile_it, content)
    if seen is not None:
        if len(_KEPT) >= _KEEP:
            _KEPT.clear()
        _KEPT[seen] = key
    return key


def role_keys(ranks: Iterable[RankTrace], compile_it: bool | None = None,
              workers: int | None = None) -> Generator[tuple[RankTrace, Callable[[], RoleKey]], None, None]:
    """Each rank of ``ranks`` in order, with a call that returns its :func:`role_key` (or raises
    what ``role_key`` raises for it), the keys taken ahead on ``workers`` threads: the compiled
    walk, the hashing and the reads release the GIL, so each thread keys a rank at once (on 2
    cores, the 1,024 ranks of the GPT-3-like set in 0.62 s of wall against 0.96 s, for 1.18 s of
    CPU against 0.96).  None: the CPUs this process may use, at most :data:`MAX_THREADS`, when the
    keys are taken by compiled loops (``compile_it``, or None with numba loaded) and the ranks'
    files hold :data:`THREADS_FROM` bytes or more, else 1 (the caller's thread: keys as Python
    would hold the GIL, and handing a small rank to a thread costs more than its key).  At most
    two keys a thread are taken ahead of the caller; a key kept for the process already is not
    handed to a thread.  Closing the iterator early drops the keys not started."""
    ranks = list(ranks)
    if workers is None:
        compiled_keys = compile_it if compile_it is not None else "numba" in sys.modules
        files = [rt.file for rt in ranks if isinstance(rt, FileRank)]
        workers = min(_usable_cpus(), MAX_THREADS) if compiled_keys and files_hold(files, THREADS_FROM) else 1
    if workers < 2 or len(ranks) < 2:
        for rt in ranks:
            yield rt, partial(role_key, rt, compile_it)
        return
    from concurrent.futures import ThreadPoolExecutor  # loaded only for threads

    ahead: deque[tuple[RankTrace, Callable[[], RoleKey], Future | None]] = deque()
    with ThreadPoolExecutor(workers, thread_name_prefix="chakra-role-key") as pool:
        try:
            for rt in ranks:
                kept = _KEPT.get(_seen(rt) or ())
                if kept is not None:
                    ahead.append((rt, partial(_given, kept), None))
                else:
                    future = pool.submit(role_key, rt, compile_it)
                    ahead.append((rt, future.result, future))
                if len(ahead) > 2 * workers:
                    yield ahead.popleft()[:2]
            while ahead:
                yield ahead.popleft()[:2]
        finally:
            for _, _, started in ahead:
                if started is not None:
                    started.cancel()


def _given(key: RoleKey) -> RoleKey:
    """``key`` itself (the call handed for a key kept already)."""
    return key


def _usable_cpus() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _by_content(rt: RankTrace, compile_it: bool | None, content: bytes) -> RoleKey:
    """The :class:`RoleKey` of a rank whose key depends on the bytes ``content`` of its file
    alone: the last such file's when it has the same bytes (comparing them costs less than
    hashing them: the ranks of a set often have the same bytes), else the one kept by their
    digest, else one walk of ``content``."""
    last = _LAST[0]
    if last is not None and last[0] == content:
        return last[1]
    digest = hashlib.blake2b(content, digest_size=20).digest()
    key = _BY_CONTENT.get(digest)
    if key is None:
        key = _computed(rt, compile_it, content)
        if len(_BY_CONTENT) >= _KEEP:
            _BY_CONTENT.clear()
        _BY_CONTENT[digest] = key
    _LAST[0] = (content, key)
    return key


def _computed(rt: RankTrace, compile_it: bool | None, content: bytes | None) -> RoleKey:
    """The :class:`RoleKey` of ``rt`` from one walk of its nodes: of ``content``, the bytes of its
    file read already, when given (cut as the compiled loops would cut the file's)."""
    if compile_it is None:
        compile_it = compiled_worthwhile(rt.file, COMPILED_FROM) if isinstance(rt, FileRank) else INSTALLED
    hasher = RoleHasher(rt.rank, compile_it)
    if content is not None and isinstance(rt, FileRank):
        from chakra_core.io._etruns import bytes_runs

        for data, start, size, _, _ in bytes_runs(rt.file, content, compile_it):
            hasher._add_run(data, start, size)
        return hasher.key()
    for run in _runs(rt, compile_it):
        hasher._add_run(*run)
    return hasher.key()


def _rankless_content(seen: tuple | None) -> bytes | None:
    """The bytes of the plain ``.et`` file of a rank (identified by ``seen``, :func:`_seen`)
    when it is under :data:`CONTENT_BELOW` bytes and names no peer: its key then depends on
    its bytes alone, not on its rank (only peers are labelled relative to the rank); else None."""
    if seen is None or seen[4] >= CONTENT_BELOW:
        return None
    try:  # unbuffered: a buffered reader's set-up costs more than reading a few kB
        fd = os.open(seen[0], os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            data = os.read(fd, seen[4] + 1)
        finally:
            os.close(fd)
    except OSError:
        return None  # the walk names the problem
    if len(data) != seen[4] or data[:2] == _GZIP_MAGIC or any(name in data for name in _PEER_NAMES):
        return None
    return data


def _seen(rt: RankTrace) -> tuple | None:
    """What identifies a file-backed rank's bytes (None for other ranks)."""
    if not isinstance(rt, FileRank):
        return None
    try:
        st = os.stat(rt.file)
    except OSError:
        return None  # the read names the problem
    return rt.file, rt.rank, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _runs(rt: RankTrace, compile_it: bool) -> Iterator[tuple[bytes, np.ndarray, np.ndarray]]:
    """The rank's node messages in runs: bytes, each message's start and length (of a file cut
    by the compiled loop with ``compile_it``)."""
    if compile_it and isinstance(rt, FileRank):
        from chakra_core.io._etruns import file_runs

        for data, start, size, _, _ in file_runs(rt.file):
            yield data, start, size
        return
    raw = getattr(rt, "raw", None)
    raws = raw() if raw is not None else (n.SerializeToString() for n in rt.nodes())
    while chunk := list(islice(raws, _CHUNK)):
        yield _joined(chunk)


def _buffers(data: bytes, compile_it: bool) -> tuple[Any, Any]:
    """The run's bytes and room for its relabelled copy, as the walk reads them fastest: numpy
    arrays for the compiled loops (``compile_it``), a memoryview and a bytearray for the
    interpreted ones (whose items are Python ints)."""
    if compile_it:
        return np.frombuffer(data, np.uint8), np.empty(len(data), np.uint8)
    return memoryview(data), bytearray(len(data))


def _named(data: bytes, start: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per node of a run, whether its bytes hold ``pg_name``, ``comm_src`` or ``comm_dst`` (the
    others are copied as they are: the interpreted walk is slow, a search of the run is not)."""
    walk = np.zeros(len(start), bool)
    ends = start + size
    last = int(ends[-1]) if len(ends) else 0  # ``data`` may go on with a message cut at the run's end
    for mark in _NAMES:
        at = data.find(mark, 0, last)
        while at >= 0:
            k = int(np.searchsorted(ends, at, side="right"))
            walk[k] = True
            at = data.find(mark, int(ends[k]), last)
    return walk


def _joined(chunk: list[bytes]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """A run of messages as one bytes object, starts and lengths."""
    size = np.fromiter(map(len, chunk), np.int64, len(chunk))
    return b"".join(chunk), np.cumsum(size) - size, size


def _decoded(raw: bytes, labels: Labels) -> bytes:
    """The labelled form of a node the compiled walk left to the caller: the node without the
    group and peer attributes whose value reads as a name or a rank within int64 (the others are
    kept as they are), then their tokens in attribute order."""
    try:
        node = Node.FromString(raw)
    except DecodeError:
        return _UNREAD + raw
    tokens = []
    keep = []
    for a in node.attr:
        code = _code(a, labels)
        if code is None:
            keep.append(a)
        else:
            tokens.append(_KINDS[a.name] + encode_varint(code))
    del node.attr[:]
    node.attr.extend(keep)
    return _DECODED + node.SerializeToString() + bytes([TOKEN]).join([b"", *tokens])


def _code(a: AttributeProto, labels: Labels) -> int | None:
    """The label code of a group or peer attribute; None for any other attribute, and for one
    whose value is not a name or a rank within int64."""
    kind = _KINDS.get(a.name)
    if kind == b"g":
        name = str_value(a)
        if name is None:
            return None
        arr = np.frombuffer(name.encode(), np.uint8)
        labels.room(len(arr))
        return int(chosen(group_code, labels.compile_it)(arr, 0, len(arr), labels.state()))
    peer = None if kind is None else int_value(a)
    if peer is None or not -(1 << 63) <= peer < 1 << 63:
        return None
    return int(chosen(peer_code, labels.compile_it)(peer, labels.state()))
