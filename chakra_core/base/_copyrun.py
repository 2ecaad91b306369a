"""One run of array items copied into another array: the kernels' byte and item copies.

A kernel (:mod:`chakra_core.base._kernels`) whose compiled form (:mod:`._memmove`) is one
``memmove``: numba compiles a slice assignment ``dst[a:b] = src[c:d]`` into a general strided
loop, which took about 25 ns for a 58-byte node frame where ``memmove`` takes about 4 (measured
on the reader's cut, ``docs/benchmarks.md``).  Both forms check the run's bounds, and copy as a
slice assignment does when the two runs overlap.
"""

from __future__ import annotations

from typing import Any

from chakra_core.base._kernels import kernel

__all__ = ["copy_run"]


def _native() -> Any:
    """The compiled form of :func:`copy_run` (imports numba)."""
    from chakra_core.base._memmove import compiled_copy_run

    return compiled_copy_run(copy_run)


@kernel(native=_native)
def copy_run(dst, at, src, start, count):
    """Copy ``src[start:start+count]`` to ``dst[at:at+count]`` (one-dimensional arrays of the
    same item type); an IndexError when either run lies outside its array."""
    if at < 0 or start < 0 or count < 0 or at > len(dst) - count or start > len(src) - count:
        raise IndexError("copy_run: the run lies outside an array")
    dst[at:at + count] = src[start:start + count]
