"""Loading the programs of many ranks, in this process and in worker processes at once.

Each rank's :class:`Program` is built from its own trace alone, so ranks can be loaded in
parallel: worker processes (forked, so they share the trace set and the system description)
take ranks from the end of the list while this process takes them from the front; a rank the
workers have not begun is loaded here.  The programs, and the first error in rank order, are
those of loading one rank after the other.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from chakra_core import FileRank, TraceSet
from chakra_core.system import SystemDescription

from .program import Program, load_program

__all__ = ["load_programs", "PARALLEL_BYTES"]

#: with ``jobs`` 0, ranks are loaded in parallel when their .et files hold at least this many bytes
PARALLEL_BYTES = 8 << 20

#: what a worker loads from (set in the worker by :func:`_start_worker`)
_JOB: tuple[TraceSet, SystemDescription, bool] | None = None


def load_programs(traces: TraceSet, ranks: list[int], sd: SystemDescription, replay: bool, jobs: int,
                  advance: Callable[[], None]) -> list[Program]:
    """The programs of ``ranks`` (in that order), with ``jobs`` processes in all (0: one per
    CPU core this process may use, when the ranks' .et files hold :data:`PARALLEL_BYTES` or
    more and no other thread runs; 1: this process alone); ``advance`` is called once per rank
    loaded."""
    workers = _workers(traces, ranks, jobs)
    if workers < 1:
        out = []
        for r in ranks:
            out.append(load_program(traces[r], sd, replay))
            advance()
        return out
    import multiprocessing

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_start_worker, initargs=(traces, sd, replay))
    try:
        half = len(ranks) // (workers + 1) * workers
        futures: dict[int, Future] = {k: pool.submit(_load_rank, ranks[k])
                                      for k in range(len(ranks) - 1, len(ranks) - 1 - half, -1)}
        progs: list[Program | None] = [None] * len(ranks)
        for k, r in enumerate(ranks):
            f = futures.get(k)
            if f is not None and not f.cancel():
                continue
            futures.pop(k, None)
            progs[k] = load_program(traces[r], sd, replay)
            advance()
        for k in sorted(futures):
            try:
                progs[k] = futures[k].result()
            except BrokenProcessPool:  # a worker died (e.g. out of memory): load the rank here
                progs[k] = load_program(traces[ranks[k]], sd, replay)
            advance()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return progs  # type: ignore[return-value]


def _workers(traces: TraceSet, ranks: list[int], jobs: int) -> int:
    """How many worker processes to start (0: load here alone)."""
    import multiprocessing

    if jobs == 1 or len(ranks) < 2 or not hasattr(os, "fork") or multiprocessing.current_process().daemon:
        return 0  # a daemonic process may not start processes
    if jobs > 1:
        return min(jobs, len(ranks)) - 1
    if threading.active_count() > 1:  # forking a process with other threads running is not safe
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    size = 0
    for r in ranks:
        rt = traces[r]
        if isinstance(rt, FileRank):
            try:
                size += os.path.getsize(rt.file)
            except OSError:
                return 0  # the loader reports it
    return min(cores, len(ranks)) - 1 if size >= PARALLEL_BYTES else 0


def _start_worker(traces: TraceSet, sd: SystemDescription, replay: bool) -> None:
    global _JOB
    _JOB = (traces, sd, replay)


def _load_rank(rank: int) -> Program:
    traces, sd, replay = _JOB  # type: ignore[misc]
    return load_program(traces[rank], sd, replay)
