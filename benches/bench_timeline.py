"""Benchmark of the timeline writer: wall and CPU seconds and peak memory of writing timelines.

Cases (each in a process of its own, so that its peak RSS is its own):

- ``perfetto-1e6``, ``perfetto-1e7``: 10^6 and 10^7 synthetic spans on 1,024 ranks (per rank,
  steps of a compute kernel then an all-reduce matched across all ranks, on two streams, with
  node ids, bytes and a group as slice arguments), written as Perfetto protobuf with flows
  (the all-reduces' matching: 1,023 arrows per step), the per-rank counter of communication in
  flight and the critical-path track;
- ``json-1e6``: the same 10^6 spans as Chrome trace JSON;
- ``simulated``: 1,024 identical ranks x 200 layers (compute + 16 MiB all-reduce) simulated by
  simpy keeping its spans (one symmetric class), then the Perfetto timeline of every rank (the
  class expanded to 1,024 processes, flows joining the expanded ranks).

Prints per case: spans, events written, output size, wall and CPU seconds of the write (CPU:
``time.process_time``, all threads), the RSS before the write (the spans built) and the peak RSS
of the process, and the load average.

    .venv/bin/python benches/bench_timeline.py [--case perfetto-1e7 ...] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CASES = ("perfetto-1e6", "perfetto-1e7", "json-1e6", "simulated")


def synthetic_spans(ranks: int, total: int):
    """``total`` spans on ``ranks`` ranks: per rank, steps of compute then an all-reduce (one match
    per step across ranks) on two streams, with a rank-dependent compute time."""
    from chakra_core import SPAN_KINDS, SpanBuilder

    steps = total // ranks // 2
    b = SpanBuilder(nranks=ranks)
    tracks = [b.intern("tracks", "compute"), b.intern("tracks", "comm")]
    names = [b.intern("names", f"kernel_{k}") for k in range(64)] + [b.intern("names", "all_reduce")]
    group = b.intern("strings", "dp")
    rng = np.random.default_rng(0)
    comp = rng.integers(5_000, 20_000, size=steps).astype(np.int64)
    comm = 8_000
    for r in range(ranks):
        slow = comp * (1 + (r % 17) / 100)
        step_len = np.maximum(slow, comm).astype(np.int64) + 1_000
        start = np.concatenate(([0], np.cumsum(step_len)[:-1]))
        b.extend({
            "rank": np.full(2 * steps, r, np.int64),
            "track": np.tile(np.asarray(tracks, np.int32), steps),
            "start_ns": np.stack((start, start + 500)).T.reshape(-1),
            "dur_ns": np.stack((slow.astype(np.int64), np.full(steps, comm))).T.reshape(-1),
            "name": np.stack((np.asarray(names[:64])[np.arange(steps) % 64], np.full(steps, names[64]))).T.reshape(-1),
            "kind": np.tile(np.array([SPAN_KINDS.index("compute"), SPAN_KINDS.index("collective")]), steps),
            "node_id": np.arange(2 * steps),
            "bytes": np.tile(np.array([0, 1 << 20]), steps),
            "group": np.tile(np.array([-1, group]), steps),
            "match": np.stack((np.full(steps, -1), np.arange(steps))).T.reshape(-1),
        })
    return b.build()


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _current_rss_gib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30


def run_case(case: str, tmp: Path) -> None:
    """Build the case's spans, write its timeline, print one line of figures."""
    import chakra_core as chakra

    t0 = time.perf_counter()
    if case == "simulated":
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_report import layered_set

        system = tmp / "system.yaml"
        system.write_text("network:\n  - {topology: Ring, npus_count: 8, bandwidth: 200, latency: 500}\n"
                          "  - {topology: Switch, npus_count: 128, bandwidth: 50, latency: 1000}\n")
        spans = chakra.simulate(layered_set(1024, 200), options={"spans": True}, system=str(system)).spans
        kwargs: dict = {"expand": True}
        out = tmp / "run.pftrace"
    else:
        fmt, size = case.split("-")
        spans = synthetic_spans(1024, int(float(size)))
        kwargs = {}
        out = tmp / ("big.json" if fmt == "json" else "big.pftrace")
    built = time.perf_counter() - t0
    before = _current_rss_gib()
    wall, cpu = time.perf_counter(), time.process_time()
    info = chakra.write_timeline(spans, out, **kwargs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    events = 2 * info["spans"] + info["counters"] + 2 * info["critical_path_segments"]
    print(f"{case:<13} {info['spans']:>11,} spans {events:>11,} events {info['flows']:>10,} flows "
          f"{out.stat().st_size / 2**20:>8.1f} MiB | write {wall:6.1f} s wall {cpu:6.1f} s CPU | "
          f"RSS {before:.2f} GiB with the spans, peak {_rss_gib():.2f} GiB | spans built in {built:.1f} s | "
          f"load {os.getloadavg()[0]:.1f}", flush=True)


def main() -> None:
    """Run the cases, each in a child process."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", action="append", choices=CASES, help="a case to run (default: all)")
    ap.add_argument("--threads", type=int, help="chunks the Perfetto writer encodes at once")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.threads:
        import chakra_core.analysis._perfetto as perfetto

        perfetto._THREADS = args.threads
    if args.child:
        with tempfile.TemporaryDirectory() as d:
            run_case(args.child, Path(d))
        return
    print(f"timeline writer, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    for case in args.case or CASES:
        extra = ["--threads", str(args.threads)] if args.threads else []
        subprocess.run([sys.executable, __file__, "--child", case, *extra], check=True)


if __name__ == "__main__":
    main()
