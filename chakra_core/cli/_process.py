"""Settings of the ``chakra`` process itself, made before a command imports numpy or reads a trace.

- OpenBLAS, in numpy's and scipy's wheels, starts a thread per core when it loads, and each one
  spins about 2**28 cycles waiting for work before it sleeps: about 0.1 s of CPU per further core
  in every command that imports numpy (twice that with numba, which loads scipy's copy too). No
  command calls BLAS; with OpenBLAS's shortest wait (2**4 cycles) the threads sleep at once and
  still serve a plugin that does. A value the user set is kept.
- glibc's malloc hands the top of its heap back to the system whenever more than its trim
  threshold is free there, so memory freed by one run of nodes and allocated again by the next
  was faulted in anew each time. Keeping 16 MiB free at the top of the heap took the page faults
  of ``chakra validate`` of a 1 M-node rank from about 95,000 to 34,000 and half its system time
  (docs/benchmarks.md). Setting it fixes glibc's threshold for blocks with a mapping of their own
  where it stands (glibc raises it as such blocks are freed, up to 32 MiB), so the threshold is
  set too, to 1 MiB: a block below it comes from the heap (a loop of 256 KiB reads faulted 47,000
  pages in with the pad alone, 320 with both), a larger one still goes back to the system when
  freed, so the peaks stay where they were (a 32 MiB threshold kept 19 MB more at the peak of
  ``chakra stats`` of 5 M nodes). Other C libraries are left alone.

- SIGTERM (what ``kill``, a job scheduler or a container stop sends) ends the command as an
  interrupt does (``KeyboardInterrupt``), so that what it started is stopped and what it wrote
  half is removed (the emulator's worker processes, a sweep's pool, temporary outputs): by
  default the process died at once and left them behind. A process forked from the command
  (a pool's worker) keeps the default action.

- As the command ends, every object is moved to the collector's permanent generation
  (``gc.freeze``), so that the interpreter's last collections as it exits do not walk the
  objects numba's and protobuf's imports made: about 0.09 s of every command that loaded numba.
  Objects are still freed as their modules are cleared; only the cycle search is skipped.

Only a process that is the command's own makes them (:func:`chakra_core.cli.main.command`, the
``chakra`` console script); :func:`chakra_core.cli.main.main` called in a caller's process leaves
that process as it is.
"""

from __future__ import annotations

import gc
import os
import signal
import sys

__all__ = ["settle", "leave", "terminated", "BLAS_SPIN", "HEAP_TOP_PAD", "HEAP_MMAP_FROM", "glibc"]

#: the variable OpenBLAS reads when it loads, and the value set when the user set none
BLAS_SPIN = ("OPENBLAS_THREAD_TIMEOUT", "4")
#: bytes kept free at the top of glibc's heap (``mallopt(M_TOP_PAD)``)
HEAP_TOP_PAD = 16 << 20
#: blocks from this size on get a mapping of their own (``mallopt(M_MMAP_THRESHOLD)``)
HEAP_MMAP_FROM = 1 << 20
_M_TOP_PAD, _M_MMAP_THRESHOLD = -2, -3


def settle(heap: bool = True) -> None:
    """Make this process's settings: OpenBLAS's threads told not to spin; with ``heap``, glibc's
    heap kept (a command that reads no trace leaves it: loading ctypes costs about 3 ms)."""
    os.environ.setdefault(*BLAS_SPIN)
    _ON_TERM["pid"] = os.getpid()
    signal.signal(signal.SIGTERM, _on_term)
    if heap and sys.platform == "linux" and glibc():
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_TOP_PAD, HEAP_TOP_PAD)
        libc.mallopt(_M_MMAP_THRESHOLD, HEAP_MMAP_FROM)


#: the command's process (whose SIGTERM is an interrupt) and whether it got one
_ON_TERM = {"pid": -1, "got": False}


def _on_term(signum: int, _frame: object) -> None:
    """SIGTERM in the command's process: an interrupt; in a process forked from it: the default."""
    if os.getpid() != _ON_TERM["pid"]:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    _ON_TERM["got"] = True
    raise KeyboardInterrupt("by SIGTERM")


def terminated() -> bool:
    """Whether the command's process got SIGTERM (:func:`settle`)."""
    return bool(_ON_TERM["got"])


def glibc() -> bool:
    """Whether this process runs on glibc (whose ``mallopt`` takes the settings above)."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):
        return False


def leave() -> None:
    """Before the process exits: every object frozen out of the cyclic collector's walks."""
    gc.freeze()
