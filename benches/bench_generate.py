"""Benchmark of the ``transformer`` generator: 4,096 ranks of a 96-layer model, written as .et files.

The case (GPT-3 175B-like): 96 layers, hidden 12288, 96 heads, seq 2048, vocab 51200,
tp 8 x pp 8 x dp 64 = 4,096 ranks, 16 micro-batches per step, 1F1B, ZeRO 0, device h100.  The
generator's own check (validation of the reduced copy) is included in the time.  Prints wall and
CPU seconds of generating and of writing, nodes per rank, bytes written, and the process's peak
RSS.

    .venv/bin/python benches/bench_generate.py [--dp 64] [--micro-batches 16] [--out DIR]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import chakra_core as chakra


def main() -> None:
    """Generate, write and report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dp", type=int, default=64)
    ap.add_argument("--micro-batches", type=int, default=16)
    ap.add_argument("--out", help="directory to write into (default: a temporary one)")
    args = ap.parse_args()
    options = {"layers": 96, "hidden": 12288, "heads": 96, "seq": 2048, "vocab": 51200, "tp": 8, "pp": 8,
               "dp": args.dp, "micro_batches": args.micro_batches, "device": "h100"}
    with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp:
        out = Path(args.out or tmp) / "et"
        w0, c0 = time.perf_counter(), time.process_time()
        traces = chakra.generate("transformer", options)
        w1, c1 = time.perf_counter(), time.process_time()
        paths = traces.write(out)
        w2, c2 = time.perf_counter(), time.process_time()
        written = sum(p.stat().st_size for p in paths)
        nodes = sum(1 for _ in chakra.EtReader(paths[0]).raw())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"ranks: {len(paths)}; nodes per rank (rank 0): {nodes}; written: {written / 2**30:.2f} GiB")
    print(f"generate (templates + check): {w1 - w0:.1f} s wall, {c1 - c0:.1f} s CPU")
    print(f"write: {w2 - w1:.1f} s wall, {c2 - c1:.1f} s CPU; total {w2 - w0:.1f} s wall")
    print(f"peak RSS: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
