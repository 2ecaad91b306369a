"""Benchmark of the ``emulator`` backend: step-time error of a replay against each recorded trace.

Replays, on this machine with gloo over 127.0.0.1, the recorded 2-rank PyTorch fixtures
(plugins/chakra-pytorch/tests/data: ddp, ddp_buckets, collectives, one step each, and their
``*_steps`` recordings of 2 or 3 steps) and an 8-rank text workload
(examples/text/resnet50_like.txt), each with ``compute=duration`` (every compute node lasts its
recorded duration: the replay of the trace's own durations, which the 10% target is about) and
``compute=real`` (real operators where the node carries one), ``--warmup`` and ``--repeats``
measured iterations.  Per replay it prints the measured step over the repeats (mean, relative
standard deviation, min, max, and how late the last rank began after the common start), and the
error of the mean, of the median repeat and of the fastest repeat against:

- ``expected_ns`` (the ``error`` the target is about): simpy replaying the recorded compute
  durations on a system matching this machine: one Ring of the ranks whose link latency and
  endpoint delay are fitted to what gloo's calls cost here (``benches/gloo_link.py``: every kind
  timed in isolation just before and just after the trace's replays, the mean of the two
  medians, so that the machine's phase during the replays is the fit's; the fit weighted by how
  many calls of each kind the trace makes);
- the trace's own recorded path (``trace_ns``: recorded collective durations included);

then measured / recorded time per kind of node; and for the first mode, per collective kind, the
time from the last member's arrival to the end in the replay (its last repeat) and in the
simulation behind ``expected_ns``.  It also measures what the recording's profiler
adds to the real operators (``--profiler-cost``, on by default): every operator of the ddp trace
that the replay runs for real, timed bare and under the recorder that made the fixtures
(``chakra_collect.Recorder``: the PyTorch profiler with the execution-trace observer).

``--realtime`` (root only) replays with ``-O realtime=true`` (every thread of the workers
SCHED_FIFO once the process groups exist) and times the calls for the fit the same way: a woken
thread then takes a core at once, from other jobs and from the other rank's threads alike;
figures taken with it are marked so in docs/emulator.md.

Run: ``.venv/bin/python benches/bench_emulator.py`` (all traces; under 5 minutes on the idle
2-core machine), or name some: ``... ddp collectives --repeats 10 --modes duration``.
Target: ``error`` of ``compute=duration`` within 10% for the recorded CPU traces.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import chakra_core

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
RECORDED = ("ddp", "ddp_buckets", "collectives", "ddp_steps", "ddp_buckets_steps", "collectives_steps")
DATA = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"


def _inputs(name: str, tmp: Path) -> tuple[str, dict]:
    if name == "resnet8":
        return str(ROOT / "examples" / "text" / "resnet50_like.txt"), {"npus": 8}
    out = f"{tmp / name}/"
    chakra_core.convert(str(DATA / name), out)
    return out, {}


def _calls(traces: chakra_core.TraceSet) -> dict[str, int]:
    """How many calls of each kind the set makes (SEND for a send), over all ranks."""
    stats = chakra_core.compute_stats(traces, longest_path=False)
    return {kind: c["count"] for kind, c in stats["collectives"].items()}


def _line(name: str, mode: str, s: dict) -> str:
    rep = s["repeats"]
    mean, best = rep["mean_ns"], rep["min_ns"]
    kinds = ", ".join(f"{how} x{row['ratio']:.2f}" for how, row in s["measured_vs_trace"].items()
                      if row["ratio"] is not None)
    return (f"{name:17s} {mode:8s} measured {mean / 1e6:8.3f} ms (sd {rep['stdev_ns'] / mean:5.1%}, "
            f"min {best / 1e6:.3f}, max {rep['max_ns'] / 1e6:.3f}, late start <= "
            f"{max(rep['start_late_ns']) / 1e3:.0f} us)"
            f"  expected {s['expected_ns'] / 1e6:8.3f} ms  error {s['error']:+7.1%} "
            f"(median {statistics.median(rep['finish_ns']) / s['expected_ns'] - 1:+7.1%}, "
            f"min {best / s['expected_ns'] - 1:+7.1%})"
            f"  trace {s['trace_ns'] / 1e6:8.3f} ms  trace_error {s['trace_error']:+7.1%}"
            f"  real_ops {s['real_ops']:.2f}  host spin tail <= {max(s['host_tail_ns']) / 1e3:.0f} us  [{kinds}]")


def _cost_by_kind(spans: chakra_core.Spans) -> dict[str, float]:
    """Per collective kind (P2P for a send and its receive): mean ns from the last member's
    arrival to the last member's end, over the instances (spans sharing a ``match``)."""
    from chakra_core import CommType

    costs: dict[str, list[int]] = {}
    ends = spans.start_ns + spans.dur_ns
    for key in np.unique(spans.match[spans.match >= 0]):
        idx = np.nonzero(spans.match == key)[0]
        ct = int(spans.comm_type[idx[0]])
        kind = CommType(ct).name if ct >= 0 else "P2P"
        costs.setdefault(kind, []).append(int(ends[idx].max() - spans.start_ns[idx].max()))
    return {k: statistics.fmean(v) for k, v in sorted(costs.items())}


def _kinds_line(name: str, replay: chakra_core.Spans, simulated: chakra_core.Spans) -> str:
    emu, sim = _cost_by_kind(replay), _cost_by_kind(simulated)
    parts = [f"{k} {emu[k] / 1e3:.0f}/{sim[k] / 1e3:.0f}" if k in sim else f"{k} {emu[k] / 1e3:.0f}/-" for k in emu]
    return f"{name:17s} per kind, us from the last member's arrival to the end, replay/expected: " + ", ".join(parts)


def _profiler_cost(tmp: Path, calls: int = 20) -> str:
    """Rank 0's real operators of the ddp trace timed bare and under the recorder of the fixtures."""
    import torch

    from chakra_collect import Recorder
    from chakra_emulator.compute import build_real_op
    from chakra_emulator.plan import load_plan

    torch.set_num_threads(1)
    et, _ = _inputs("ddp", tmp)
    plan = load_plan(next(iter(chakra_core.open_traceset(et))))
    gen = torch.Generator().manual_seed(0)
    ops = []
    for i, spec in enumerate(plan.spec):
        if spec and "op" in spec and plan.names[i].startswith("aten::"):
            call, _ = build_real_op(spec["op"], torch.device("cpu"), gen, 1 << 30)
            if call is not None:
                ops.append((plan.dur_ns[i], call))

    def step() -> list[int]:
        out = []
        for _dur, call in ops:
            t0 = time.perf_counter_ns()
            call()
            out.append(time.perf_counter_ns() - t0)
        return out

    bare = [statistics.median(x) for x in zip(*(step() for _ in range(calls)))]
    profiled: list[list[int]] = []
    with Recorder(tmp / "profiled", steps=calls, warmup=1, rank=0) as rec:
        for _ in range(calls + 1):
            profiled.append(step())
            rec.step()
    under = [statistics.median(x) for x in zip(*profiled[1:])]
    recorded = sum(d for d, _ in ops)
    return (f"profiler cost: {len(ops)} real operators of ddp rank 0: recorded {recorded / 1e3:.0f} us, "
            f"bare {sum(bare) / 1e3:.0f} us (x{sum(bare) / recorded:.2f} of recorded), under the recorder "
            f"{sum(under) / 1e3:.0f} us (x{sum(under) / recorded:.2f}); the recorder makes them "
            f"x{sum(under) / sum(bare):.2f} slower")


def main() -> None:
    """Run the replays named on the command line (all by default) and print one line each."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", nargs="*", default=[*RECORDED, "resnet8"])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--modes", default="duration,real")
    ap.add_argument("--realtime", action="store_true", help="replay with -O realtime=true; time the calls so (root)")
    ap.add_argument("--no-profiler-cost", dest="profiler_cost", action="store_false")
    args = ap.parse_args()
    from fidelity import system_file
    from gloo_link import fit_link, measure_calls, modelled

    wall, cpu = time.perf_counter(), time.process_time()
    print(f"machine: {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f}"
          f"{', workers SCHED_FIFO' if args.realtime else ''}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.which:
            path, input_options = _inputs(name, Path(tmp))
            traces = chakra_core.load_traces(path, options=input_options or None)
            before = measure_calls(args.realtime)
            replays = [(mode, chakra_core.emulate(
                path, input_options=input_options or None, validate=False,
                options={"compute": mode, "repeats": args.repeats, "warmup": args.warmup, "spans": k == 0,
                         "realtime": args.realtime, "expected": False}), os.getloadavg()[0])
                for k, mode in enumerate(args.modes.split(","))]
            after = measure_calls(args.realtime)
            costs = {k: (before[k] + after[k]) / 2 for k in before}
            latency, delay, bandwidth = fit_link(costs, _calls(traces))
            model = modelled(latency, delay)
            print(f"{name:17s} gloo calls on 127.0.0.1 before / after its replays, us: "
                  + ", ".join(f"{k} {before[k] / 1e3:.0f}/{after[k] / 1e3:.0f}" for k in before), flush=True)
            print(f"{name:17s} link fitted to their means: latency {latency / 1e3:.1f} us, endpoint delay "
                  f"{delay / 1e3:.1f} us, {bandwidth:.2f} GB/s (fitted/measured us: "
                  + ", ".join(f"{k} {model[k] / 1e3:.0f}/{costs[k] / 1e3:.0f}" for k in model) + ")", flush=True)
            system = str(system_file(len(traces), latency, bandwidth, Path(tmp), delay))
            simulated = chakra_core.simulate(path, input_options=input_options or None, validate=False,
                                             system=system, options={"spans": True})
            expected = simulated.summary["finish_ns"]
            for mode, r, load in replays:
                s = {**r.summary, "expected_ns": expected, "error": r.summary["finish_ns"] / expected - 1}
                print(_line(name, mode, s), f"load {load:.1f}", flush=True)
                if r.spans is not None:
                    print(_kinds_line(name, r.spans, simulated.spans), flush=True)
        if args.profiler_cost:
            print(_profiler_cost(Path(tmp)), flush=True)
    print(f"({time.perf_counter() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU in this process)")


if __name__ == "__main__":
    main()
