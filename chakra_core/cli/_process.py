"""Settings of the ``chakra`` process itself, made before a command imports numpy or reads a trace.

- OpenBLAS, in numpy's and scipy's wheels, starts a thread per core when it loads, and each one
  spins about 2**28 cycles waiting for work before it sleeps: about 0.1 s of CPU per further core
  in every command that imports numpy (twice that with numba, which loads scipy's copy too). No
  command calls BLAS; with OpenBLAS's shortest wait (2**4 cycles) the threads sleep at once and
  still serve a plugin that does. A value the user set is kept.
- glibc's malloc hands the top of its heap back to the system whenever more than its trim
  threshold is free there, and serves blocks from 128 KiB up (a threshold it raises as such
  blocks are freed) with a mapping of their own: the columns of one run of nodes, freed and
  allocated again for the next run, were faulted in anew each time. Keeping 16 MiB free at the top
  of the heap and serving blocks under 32 MiB (the ceiling of glibc's own adaptive threshold) from
  it took the page faults of ``chakra validate`` of a 1 M-node rank from about 95,000 to 32,000
  and a third of its system time (docs/benchmarks.md). Other C libraries are left alone.
"""

from __future__ import annotations

import os
import sys

__all__ = ["settle", "BLAS_SPIN", "HEAP_TOP_PAD", "HEAP_MMAP_FROM"]

#: the variable OpenBLAS reads when it loads, and the value set when the user set none
BLAS_SPIN = ("OPENBLAS_THREAD_TIMEOUT", "4")
#: bytes kept free at the top of glibc's heap (``mallopt(M_TOP_PAD)``)
HEAP_TOP_PAD = 16 << 20
#: blocks from this size on get a mapping of their own (``mallopt(M_MMAP_THRESHOLD)``)
HEAP_MMAP_FROM = 32 << 20
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3


def settle() -> None:
    """Make this process's settings: OpenBLAS's threads told not to spin, glibc's heap kept."""
    os.environ.setdefault(*BLAS_SPIN)
    if sys.platform == "linux" and _glibc():
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_TOP_PAD, HEAP_TOP_PAD)
        libc.mallopt(_M_MMAP_THRESHOLD, HEAP_MMAP_FROM)


def _glibc() -> bool:
    """Whether this process runs on glibc (whose ``mallopt`` takes the settings above)."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):
        return False
