"""The kernels' copies of runs of bytes: ``copy_run`` (one ``memmove`` compiled) against numba's
slice assignment, alone and inside the reader's cut (``io/_etcut.py`` ``frame_chunk``).

A rank of ``--nodes`` nodes like ``bench_reference.py``'s (a chain of compute nodes with two
attributes, about 58 bytes a frame) is written once; a 1 MiB run of its whole frames is the
input, in cache.  Rows, best of ``--repeat`` timings in one process, the compiled loops loaded
before:

- the cut as shipped (``copy_run``), and the same loop with the slice assignment in its place
  (the code before ``copy_run``), in ns a frame; both must give the same bytes;
- one loop of copies of ``N`` bytes each (8, 58, 1,024) through each form, in ns a copy.

Needs numba.  Usage: ``python benches/bench_copy.py [--nodes 100000] [--repeat 9]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from functools import partial

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _frames(nodes: int) -> np.ndarray:
    """A 1 MiB (or shorter) run of whole node frames of a written rank, as uint8."""
    from chakra_core import EtWriter, GlobalMetadata, Node, make_attr

    path = os.path.join(tempfile.mkdtemp(prefix="bench_copy_"), "rank.0.et")
    cpu, ops = make_attr("is_cpu_op", False), make_attr("num_ops", 1 << 20)
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        for i in range(1, nodes + 1):
            node = Node(id=i, name="aten::linear", type=4, duration_micros=i % 97)
            if i > 1:
                node.data_deps.append(i - 1)
            node.attr.extend([cpu, ops])
            w.write(node)
    data = np.fromfile(path, np.uint8)
    os.remove(path)
    pos = 1 + int(data[0])  # the metadata frame (one-byte length) skipped
    end = pos
    while end < len(data) and end - pos < (1 << 20):
        if data[end] >= 0x80:
            break  # a frame of 128 bytes or more: stop the run before it
        end += 1 + int(data[end])
    return np.ascontiguousarray(data[pos:min(end, len(data))])


def _slice_cut():
    """The cut's loop with numba's slice assignment (before ``copy_run``), one-byte lengths only."""
    import numba

    @numba.njit(nogil=True)
    def cut(buf, pos, end):
        out = np.empty(2 * (end - pos) + 1, np.uint8)
        out_at = np.empty((end - pos) // 2 + 1, np.int64)
        k = o = 0
        while pos < end:
            n = 1 + np.int64(buf[pos])
            out_at[k] = o
            out[o] = 0x0A
            out[o + 1:o + 1 + n] = buf[pos:pos + n]
            o += 1 + n
            k += 1
            pos += n
        return out[:o], out_at[:k]

    return cut


def _copy_loops():
    """(copy_run loop, slice loop): ``count`` copies of ``size`` bytes between two buffers."""
    import numba

    from chakra_core.base._copyrun import copy_run
    from chakra_core.base._kernels import compiled

    native = compiled(copy_run)

    @numba.njit(nogil=True)
    def with_copy_run(dst, src, size, count):  # one run after the other, as the cut copies
        at = 0
        for _ in range(count):
            if at + size > len(dst):
                at = 0
            native(dst, at, src, at, size)
            at += size + 1

    @numba.njit(nogil=True)
    def with_slice(dst, src, size, count):
        at = 0
        for _ in range(count):
            if at + size > len(dst):
                at = 0
            dst[at:at + size] = src[at:at + size]
            at += size + 1

    return with_copy_run, with_slice


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    """Print the rows."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100_000, help="nodes of the rank written (default 100,000)")
    ap.add_argument("--repeat", type=int, default=9, help="timings of each row; the best is printed")
    args = ap.parse_args()
    from chakra_core.base._kernels import compiled
    from chakra_core.io._etcut import frame_chunk

    buf = _frames(args.nodes)
    shipped, old = compiled(frame_chunk), _slice_cut()
    out, out_at, _, stop = shipped(buf, 0, len(buf), 1 << 28)
    out_old, at_old = old(buf, 0, len(buf))
    if stop != len(buf) or out.tobytes() != out_old.tobytes() or out_at.tolist() != at_old.tolist():
        print("the two cuts differ", file=sys.stderr)
        return 1
    frames = len(out_at)
    print(f"{frames:,} frames in {len(buf):,} bytes ({len(buf) / frames:.1f} bytes a frame), in cache")
    for name, fn in (("cut, copy_run (shipped)", lambda: shipped(buf, 0, len(buf), 1 << 28)),
                     ("cut, slice assignment", lambda: old(buf, 0, len(buf)))):
        print(f"{name:<28} {_best(fn, args.repeat) * 1e9 / frames:7.1f} ns a frame")
    with_copy_run, with_slice = _copy_loops()
    src, dst = np.arange(1 << 16, dtype=np.uint8), np.zeros(1 << 16, np.uint8)
    count = 100_000
    for size in (8, 58, 1024):
        for name, fn in (("copy_run", with_copy_run), ("slice assignment", with_slice)):
            fn(dst, src, size, 10)  # compiled before the timing
            ns = _best(partial(fn, dst, src, size, count), args.repeat) * 1e9 / count
            print(f"copies of {size:>5} bytes, {name:<18} {ns:7.1f} ns a copy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
