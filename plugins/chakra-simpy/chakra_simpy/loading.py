"""Loading the programs of many ranks on several threads at once.

Each rank's :class:`Program` is built from its own trace alone, and most of that work runs
outside the GIL (the core's compiled walk over the wire format, numpy's array operations), so
threads load ranks in parallel: 64 ranks of 100,000 nodes on 2 cores load in 1.7-1.8 s on two
threads against 2.8-2.9 s on one (forked worker processes reached 2.5-2.7 s: the programs came
back through a pipe and each worker started the compiled kernels again).  The programs, and the
first error in rank order, are those of loading one rank after the other.  The core's loops run
compiled (numba) only for ranks large enough to pay for loading numba
(:func:`chakra_core.ranks_compiled_worthwhile`).

A small rank's program is kept, by its file's content, the rank, its label, what
:func:`.classify.classify` reads of the system and the timing mode (:func:`program_of`), so that
the many small simulations of a sweep read and classify each file once (a program is read-only
once built); ranks loaded on several threads, large sets, are read anew.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from chakra_core import FileRank, RankTrace, TraceSet
from chakra_core.system import SystemDescription

from .classify import system_inputs
from .lru import LruStore
from .program import Program, load_program

__all__ = ["load_programs", "program_of", "PARALLEL_BYTES", "COMPILED_FROM", "KEPT_BYTES"]

#: with ``jobs`` 0, ranks are loaded in parallel when their .et files hold at least this many bytes
PARALLEL_BYTES = 8 << 20
#: the ranks loaded are read (and their compute chains timed) by compiled loops when their .et files
#: hold at least this many bytes (as Python the core's walk takes about 0.4 s a MB; loading numba
#: and its first calls about 0.6 s)
COMPILED_FROM = 1 << 20
#: programs are kept for .et files under :data:`COMPILED_FROM` bytes, the most recently used
#: while their files hold at most this many bytes together
KEPT_BYTES = 16 << 20

_kept: LruStore[Program] = LruStore()


def load_programs(traces: TraceSet, ranks: list[int], sd: SystemDescription, replay: bool, jobs: int,
                  advance: Callable[[], None], compile_it: bool | None = None) -> list[Program]:
    """The programs of ``ranks`` (in that order), loaded by ``jobs`` threads (0: one per CPU
    core this process may use, when the ranks' .et files hold :data:`PARALLEL_BYTES` or more;
    1: this thread alone, through :func:`program_of`); ``advance`` is called once per rank loaded, in rank order;
    ``compile_it``: the core's loops run compiled, else as Python (None: the core's rule per rank)."""
    threads = _threads(traces, ranks, jobs)
    if threads < 2:
        out = []
        for r in ranks:
            out.append(program_of(traces[r], sd, replay, compile_it))
            advance()
        return out
    with ThreadPoolExecutor(threads, thread_name_prefix="chakra-load") as pool:
        futures = [pool.submit(load_program, traces[r], sd, replay, compile_it) for r in ranks]
        try:
            progs = []
            for f in futures:
                progs.append(f.result())  # the first error in rank order is raised here
                advance()
        finally:
            for f in futures:
                f.cancel()
    return progs


def program_of(rt: RankTrace, sd: SystemDescription, replay: bool, compile_it: bool | None) -> Program:
    """:func:`.program.load_program` of ``rt``, or the program kept from an earlier call on a
    file of the same content (of under :data:`COMPILED_FROM` bytes) for the same rank, label,
    system inputs (:func:`.classify.system_inputs`) and ``replay`` (one whose file changed while
    it was read is not kept); the program returned is shared: read it only."""
    seen = _small_file(rt)
    content = None if seen is None else _content(seen)
    if content is None:
        return load_program(rt, sd, replay, compile_it)
    key = (hashlib.blake2b(content, digest_size=16).digest(), len(content), rt.rank, rt.label,
           system_inputs(sd), replay)
    hit = _kept.get(key)
    if hit is not None:
        return hit
    prog = load_program(rt, sd, replay, compile_it)
    if _small_file(rt) == seen:  # else rewritten while it was read: not kept
        _kept.put(key, prog, KEPT_BYTES, len(content))
    return prog


def _small_file(rt: RankTrace) -> tuple[str, int, int, int, int] | None:
    """What identifies the bytes of the .et file of ``rt`` (its path, device, inode, size and
    modification time) when it is a file of under :data:`COMPILED_FROM` bytes; else None, also
    when it cannot be read (the loader reports that)."""
    if not isinstance(rt, FileRank):
        return None
    try:
        st = os.stat(rt.file)
    except OSError:
        return None
    if st.st_size >= COMPILED_FROM:
        return None
    return rt.file, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _content(seen: tuple[str, int, int, int, int]) -> bytes | None:
    """The bytes of the file that ``seen`` (:func:`_small_file`) identifies; None when it cannot
    be read or now holds another number of bytes."""
    size = seen[3]
    try:
        with open(seen[0], "rb") as f:
            data = f.read(size + 1)
    except OSError:
        return None
    return data if len(data) == size else None


def _threads(traces: TraceSet, ranks: list[int], jobs: int) -> int:
    """How many threads load (1: this one alone)."""
    if jobs == 1 or len(ranks) < 2:
        return 1
    if jobs > 1:
        return min(jobs, len(ranks))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    size = 0
    for r in ranks:
        rt = traces[r]
        if isinstance(rt, FileRank):
            try:
                size += os.path.getsize(rt.file)
            except OSError:
                return 1  # the loader reports it
    return min(cores, len(ranks)) if size >= PARALLEL_BYTES else 1
