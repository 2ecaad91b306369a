"""Benchmark of the ``emulator`` backend: step-time error of a replay against each recorded trace.

Replays, on this machine with gloo over 127.0.0.1, the recorded 2-rank PyTorch fixtures
(plugins/chakra-pytorch/tests/data: ddp, ddp_buckets, collectives, one step each, and their
``*_steps`` recordings of 2 or 3 steps) and an 8-rank text workload
(examples/text/resnet50_like.txt), each with ``compute=real`` (real operators where the node
carries one) and ``compute=duration`` (recorded durations), 1 warm-up and ``--repeats`` measured
iterations.  Prints per replay: the measured step (mean and spread over the repeats), the
simulator's expectation (``expected_ns``: simpy replaying the recorded compute durations on a
system matching this machine, one Ring of the ranks with the gloo loopback link measured by
``benches/fidelity.py``'s ``measure_loopback``) and the error against it, the same on simpy's
default network (50 GB/s), the trace's own recorded path (``trace_ns``) and the error against that, and
measured / recorded time per kind of node; the errors of the fastest repeat too (``min``: a
loaded machine stalls a process for milliseconds now and then).  Figures go to docs/emulator.md.

Run: ``.venv/bin/python benches/bench_emulator.py [ddp ddp_buckets collectives resnet8] [--repeats N]``.
Target: ``error`` within 10% for the recorded CPU traces.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import chakra_core

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
RECORDED = ("ddp", "ddp_buckets", "collectives", "ddp_steps", "ddp_buckets_steps", "collectives_steps")


def _inputs(name: str, tmp: Path) -> tuple[str, dict]:
    if name == "resnet8":
        return str(ROOT / "examples" / "text" / "resnet50_like.txt"), {"npus": 8}
    out = f"{tmp / name}/"
    chakra_core.convert(str(ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / name), out)
    return out, {}


def _line(name: str, mode: str, s: dict, default_expected: int) -> str:
    rep = s["repeats"]
    spread = rep["stdev_ns"] / rep["mean_ns"] if rep["mean_ns"] else 0.0
    kinds = ", ".join(f"{how} x{row['ratio']:.2f}" for how, row in s["measured_vs_trace"].items()
                      if row["ratio"] is not None)
    best = rep["min_ns"]
    return (f"{name:12s} {mode:8s} measured {rep['mean_ns'] / 1e6:8.3f} ms (sd {spread:5.1%}, "
            f"min {best / 1e6:.3f})"
            f"  expected {s['expected_ns'] / 1e6:8.3f} ms  error {s['error']:+7.1%} "
            f"(min {best / s['expected_ns'] - 1:+7.1%})"
            f"  trace {s['trace_ns'] / 1e6:8.3f} ms  trace_error {s['trace_error']:+7.1%} "
            f"(min {best / s['trace_ns'] - 1:+7.1%})"
            f"  default-network expected {default_expected / 1e6:8.3f} ms "
            f"error {rep['mean_ns'] / default_expected - 1:+7.1%}"
            f"  real_ops {s['real_ops']:.2f}  [{kinds}]")


def main() -> None:
    """Run the replays named on the command line (all by default) and print one line each."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", nargs="*", default=[*RECORDED, "resnet8"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--modes", default="real,duration")
    ap.add_argument("--latency-ns", type=float, help="loopback link latency (default: measured)")
    ap.add_argument("--bandwidth", type=float, help="loopback link bandwidth in GB/s (default: measured)")
    args = ap.parse_args()
    from fidelity import measure_loopback, system_file

    latency, bandwidth = (args.latency_ns, args.bandwidth) if args.latency_ns else measure_loopback()
    print(f"machine: {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f}; gloo loopback "
          f"{latency:.0f} ns per message, {bandwidth:.3f} GB/s")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.which:
            path, input_options = _inputs(name, Path(tmp))
            ranks = len(chakra_core.load_traces(path, options=input_options or None))
            system = str(system_file(ranks, latency, bandwidth, Path(tmp)))
            default = chakra_core.simulate(path, input_options=input_options or None, validate=False)
            for mode in args.modes.split(","):
                r = chakra_core.emulate(path, input_options=input_options or None, validate=False, system=system,
                                        options={"compute": mode, "repeats": args.repeats, "warmup": 1})
                print(_line(name, mode, r.summary, default.summary["finish_ns"]), flush=True)


if __name__ == "__main__":
    main()
