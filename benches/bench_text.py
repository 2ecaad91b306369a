"""Benchmark of the ``text`` input format: convert the example workloads for 64 and 1024 NPUs.

For each workload and rank count: parse, build, and write the ``.et`` set to a temporary
directory; print the wall time, the nodes and bytes written, and the peak Python heap during
the conversion (tracemalloc, measured in a second run so that it does not slow the timed one).

    .venv/bin/python benches/bench_text.py [--npus 64 1024] [--passes 1]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

from chakra_core import load_traces

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "text"
WORKLOADS = ("resnet50_like.txt", "gpt3_like.txt", "dlrm_like.txt")


def convert(path: Path, npus: int, passes: int, out: Path) -> tuple[int, int]:
    """Convert ``path`` for ``npus`` ranks into ``out``; return (nodes of rank 0, bytes written)."""
    ts = load_traces(str(path), format="text", options={"npus": npus, "passes": passes})
    files = ts.write(out)
    nodes = sum(1 for _ in ts[0].raw())
    return nodes, sum(f.stat().st_size for f in files)


def main() -> None:
    """Run the benchmark and print one line per case."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npus", type=int, nargs="+", default=[64, 1024])
    ap.add_argument("--passes", type=int, default=1)
    args = ap.parse_args()
    print(f"{'workload':<20} {'npus':>5} {'nodes/rank':>10} {'total nodes':>12} {'MB written':>10} "
          f"{'seconds':>8} {'peak heap MB':>12}")
    for name in WORKLOADS:
        for npus in args.npus:
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                nodes, size = convert(EXAMPLES / name, npus, args.passes, Path(tmp) / "a")
                seconds = time.perf_counter() - t0
            with tempfile.TemporaryDirectory() as tmp:
                tracemalloc.start()
                convert(EXAMPLES / name, npus, args.passes, Path(tmp) / "b")
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            print(f"{name:<20} {npus:>5} {nodes:>10} {nodes * npus:>12} {size / 1e6:>10.1f} "
                  f"{seconds:>8.2f} {peak / 1e6:>12.1f}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process peak RSS: {rss:.0f} MB")


if __name__ == "__main__":
    main()
