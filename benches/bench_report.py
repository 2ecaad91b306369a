"""Benchmark of the analysis layer: report and timeline of a 1,024-rank simulated run, and a
timeline of 10^7 spans.

Cases:

- ``simulated``: examples/text/gpt3_like.txt on 1,024 NPUs (model-parallel groups of 8, a
  Ring of 8 x Switch of 128), simulated by simpy keeping its spans; then ``report`` (breakdown,
  tables, critical path), the Perfetto timeline of every rank (symmetric classes expanded), and
  the Chrome JSON of the first 8 ranks;
- ``synthetic``: 10^7 spans on 1,024 ranks (compute and all-reduces matched across the ranks,
  on two streams), written as a Perfetto timeline, plus its breakdown and critical path.

Prints wall seconds of each step, spans, and output sizes.

    .venv/bin/python benches/bench_report.py [--ranks 1024] [--spans 10000000] [--skip synthetic]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

import chakra_core as chakra
from chakra_core import SPAN_KINDS, SpanBuilder

ROOT = Path(__file__).resolve().parents[1]


def _t(label: str, t0: float, extra: str = "") -> float:
    now = time.perf_counter()
    print(f"  {label:<44} {now - t0:8.2f} s  {extra}")
    return now


def simulated(ranks: int, tmp: Path) -> None:
    """Simulate gpt3_like on ``ranks`` NPUs, then report and write timelines."""
    print(f"simulated: gpt3_like on {ranks} NPUs")
    system = tmp / "system.yaml"
    system.write_text(f"network:\n  - {{topology: Ring, npus_count: 8, bandwidth: 200, latency: 500}}\n"
                      f"  - {{topology: Switch, npus_count: {ranks // 8}, bandwidth: 50, latency: 1000}}\n")
    t0 = time.perf_counter()
    traces = chakra.load_traces(str(ROOT / "examples/text/gpt3_like.txt"), options={"npus": ranks})
    res = chakra.simulate(traces, options={"spans": True}, system=str(system))
    spans = res.spans
    t = _t("simulate (spans kept)", t0, f"{len(spans)} spans, finish {res.summary['finish_ns']} ns, "
           f"{res.summary['symmetry']['classes']} classes")
    rep = chakra.report(spans, what_if=["compute=2"])

    t = _t("report (breakdown, tables, critical path)", t, f"{len(rep.data['ranks'])} rank rows, path "
           f"{rep.data['critical_path']['length']} ops")
    out = tmp / "run.pftrace"
    info = chakra.write_timeline(spans, out, expand=True)
    t = _t("timeline, Perfetto, every rank", t, f"{info['spans']} spans, {out.stat().st_size / 2**20:.1f} MiB, "
           f"{info['flows']} flows, truncated {info['truncated']}")
    out = tmp / "run.json"
    info = chakra.write_timeline(spans, out, expand=True, ranks="0-7")
    _t("timeline, Chrome JSON, ranks 0-7", t, f"{info['spans']} spans, {out.stat().st_size / 2**20:.1f} MiB")


def synthetic_spans(ranks: int, total: int) -> chakra.Spans:
    """``total`` spans on ``ranks`` ranks: per rank, steps of compute then an all-reduce (one match
    per step across ranks) on two streams, with a rank-dependent compute time."""
    per_rank = total // ranks
    steps = per_rank // 2
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
        rank = np.full(2 * steps, r, np.int64)
        cols = {
            "rank": rank,
            "track": np.tile(np.asarray(tracks, np.int32), steps),
            "start_ns": np.stack((start, start + 500)).T.reshape(-1),
            "dur_ns": np.stack((slow.astype(np.int64), np.full(steps, comm))).T.reshape(-1),
            "name": np.stack((np.asarray(names[:64])[np.arange(steps) % 64], np.full(steps, names[64]))).T.reshape(-1),
            "kind": np.tile(np.array([SPAN_KINDS.index("compute"), SPAN_KINDS.index("collective")]), steps),
            "node_id": np.arange(2 * steps),
            "bytes": np.tile(np.array([0, 1 << 20]), steps),
            "group": np.tile(np.array([-1, group]), steps),
            "match": np.stack((np.full(steps, -1), np.arange(steps))).T.reshape(-1),
        }
        b.extend(cols)
    return b.build()


def synthetic(ranks: int, total: int, tmp: Path) -> None:
    """Write a Perfetto timeline of ``total`` synthetic spans; breakdown and critical path."""
    print(f"synthetic: {total:,} spans on {ranks} ranks")
    t0 = time.perf_counter()
    spans = synthetic_spans(ranks, total)
    t = _t("build spans", t0, f"{len(spans):,} spans")
    out = tmp / "big.pftrace"
    info = chakra.write_timeline(spans, out, counters=True, flows=True, critical=True)
    t = _t("timeline, Perfetto", t, f"{out.stat().st_size / 2**30:.2f} GiB, {info['flows']:,} flows, "
           f"{info['counters']:,} counter values, truncated {info['truncated']}")
    rows = chakra.breakdown(spans)
    t = _t("breakdown", t, f"{len(rows)} rows")
    cp = chakra.critical_path(spans)
    _t("critical path", t, f"{len(cp.span):,} segments, {cp.crossings:,} crossings")


def main() -> None:
    """Run the cases."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--spans", type=int, default=10_000_000)
    ap.add_argument("--skip", action="append", default=[], choices=("simulated", "synthetic"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "simulated" not in args.skip:
            simulated(args.ranks, tmp)
        if "synthetic" not in args.skip:
            synthetic(args.ranks, args.spans, tmp)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
