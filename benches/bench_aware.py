"""The congestion-aware mode on the bundled examples: cycles and speed next to the unaware mode.

Cases: the text workloads of examples/text/ on examples/system/system.yaml (a Ring of 8 NPUs,
50 GB/s, 500 ns) and the recorded PyTorch traces of plugins/chakra-pytorch/tests/data (DDP and
the every-collective set, 2 ranks each) on the default network (a Ring of all ranks). For each
case and mode it prints every rank's finish (ns), the wall and CPU seconds of the run, the
simulated events and the events of the event loop (SimPy's, or the aware mode's own, which
count each message's steps and arrivals on the links).

    .venv/bin/python benches/bench_aware.py
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from chakra_core import load_traces, open_traceset

ROOT = Path(__file__).resolve().parents[1]
TEXT = [("resnet50_like.txt", {"npus": 8}), ("dlrm_like.txt", {"npus": 8}),
        ("gpt3_like.txt", {"npus": 8, "mp_group": 8})]
RECORDED = ["ddp", "collectives"]


def _run(traces, options: dict):
    from chakra_simpy import SimpyBackend

    backend = SimpyBackend()
    backend.name = "simpy"
    t0, c0 = time.perf_counter(), time.process_time()
    res = backend.run(traces, backend.check_options(options), None)
    return res, time.perf_counter() - t0, time.process_time() - c0


def _cases(tmp: str):
    system = str(ROOT / "examples" / "system" / "system.yaml")
    for k, (name, opts) in enumerate(TEXT):
        load_traces(str(ROOT / "examples" / "text" / name), "text", opts).write(f"{tmp}/t{k}/trace")
        yield f"{name} x {opts['npus']} (Ring 8)", open_traceset(f"{tmp}/t{k}"), {"system": system}
    data = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"
    for k, name in enumerate(RECORDED):
        load_traces(str(data / name), "pytorch").write(f"{tmp}/r{k}/trace")
        yield f"recorded {name} (Ring 2)", open_traceset(f"{tmp}/r{k}"), {}


def main() -> None:
    """Print every case in both congestion modes."""
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for label, traces, opts in _cases(tmp):
            for mode in ("unaware", "aware"):
                res, wall, cpu = _run(traces, {**opts, "congestion": mode})
                finish = [r["finish_ns"] for r in res.ranks]
                s = res.summary
                print(f"{label}, {mode}: finish ns {finish}; wall {wall:.2f} s (CPU {cpu:.2f} s), "
                      f"{s['events']} events, {s['simpy_events']} SimPy events", flush=True)


if __name__ == "__main__":
    main()
