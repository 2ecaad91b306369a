"""What one gloo call costs on this machine, per collective kind, and the simulator's link that
fits those costs (used by ``bench_emulator.py`` for ``expected_ns``).

Two processes over 127.0.0.1 call each kind the way the emulator does (the process group's own
method, not torch.distributed's Python function), 1,000 float32 elements, isolated: both ranks
meet at a barrier and sleep 0.5 ms before each call, as a trace's collectives come between its
compute. The kinds take turns (one call of each, 200 rounds), so that a slow phase of the
machine reaches every kind alike instead of the one measured then. A call's cost is the time
from the later rank's start to the later rank's end (the replay's "from the last member's
arrival" measure); the median of the 200 calls per kind. A 4 MiB all-reduce gives the bandwidth.

The fit: on 2 NPUs of one Ring our simulator (as ASTRA-sim) charges an all-reduce
``2 L + 3 e`` (two messages, three endpoint delays), an all-gather, a reduce-scatter and an
all-to-all ``L + 2 e`` each, and a send ``L`` (no endpoint delay), plus bytes over bandwidth.
gloo's cost per call is mostly fixed (each call wakes gloo's worker thread and the peer's), so a
link latency ``L`` alone cannot match every kind at once; ``L`` and the endpoint delay ``e``
(both >= 0) are fitted by least squares to the kinds a trace calls, weighted by its calls.

Run alone: ``.venv/bin/python benches/gloo_link.py [--realtime]``.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

_SCRIPT = r'''
import json, os, sys, time, statistics, torch, torch.distributed as dist, torch.multiprocessing as mp

def kinds(pg, rank, n):
    a, b, c, o = torch.ones(n), torch.ones(2 * n), torch.ones(n // 2), torch.empty(n)
    def root(cls):
        opts = cls()
        opts.rootRank = 0
        return opts
    return {
        "ALL_REDUCE": lambda: pg.allreduce([a], dist.AllreduceOptions()),
        "ALL_GATHER": lambda: pg._allgather_base(b, a),
        "REDUCE_SCATTER": lambda: pg._reduce_scatter_base(c, a, dist.ReduceScatterOptions()),
        "ALL_TO_ALL": lambda: pg.alltoall_base(o, a, [n // 2] * 2, [n // 2] * 2, dist.AllToAllOptions()),
        "SEND": lambda: pg.send([a], 1, 0) if rank == 0 else pg.recv([a], 0, 0),
        "BROADCAST": lambda: pg.broadcast([a], root(dist.BroadcastOptions)),
        "REDUCE": lambda: pg.reduce([a], root(dist.ReduceOptions)),
        "BARRIER": lambda: pg.barrier(dist.BarrierOptions()),
    }

def times(calls, reps):
    """(start, end) ns of every call, the kinds taking turns so that each sees the same phases."""
    for call in calls.values():
        for _ in range(5):
            call().wait()
    out = {k: [] for k in calls}
    for _ in range(reps):
        for k, call in calls.items():
            dist.barrier()
            time.sleep(0.0005)
            s = time.monotonic_ns()
            call().wait()
            out[k].append((s, time.monotonic_ns()))
    return out

def run(rank, port, out, realtime):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    if realtime:
        for tid in os.listdir("/proc/self/task"):
            os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(1))
    pg = dist.group.WORLD
    mine = times(kinds(pg, rank, 1000), 200)
    big = torch.ones(1 << 20)
    mine.update(times({"LARGE": lambda: pg.allreduce([big], dist.AllreduceOptions())}, 20))
    both = [None, None]
    dist.all_gather_object(both, mine)
    if rank == 0:
        cost = {k: statistics.median(max(both[0][k][i][1], both[1][k][i][1]) - max(both[0][k][i][0], both[1][k][i][0])
                                     for i in range(len(mine[k]))) for k in mine}
        open(out, "w").write(json.dumps(cost))
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(run, args=(sys.argv[1], sys.argv[2], sys.argv[3] == "1"), nprocs=2, join=True)
'''

#: per kind on a Ring of 2: (messages L, endpoint delays e) in our simulator's (ASTRA-sim's) model
_MODEL = {"ALL_REDUCE": (2, 3), "ALL_GATHER": (1, 2), "REDUCE_SCATTER": (1, 2), "ALL_TO_ALL": (1, 2), "SEND": (1, 0)}


def run_two_ranks(script: str, *args: str) -> Any:
    """Run ``script`` (a Python program that spawns two gloo ranks and writes JSON to the path
    it gets) as ``script PORT OUT ARGS...`` on a free port of 127.0.0.1; returns that JSON."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    with tempfile.TemporaryDirectory() as d:
        path, out = Path(d) / "ranks.py", Path(d) / "out.json"
        path.write_text(script)
        subprocess.run([sys.executable, str(path), port, str(out), *args], check=True, timeout=600,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.loads(out.read_text())


def measure_calls(realtime: bool = False) -> dict[str, float]:
    """Median ns per call of each kind (and ``LARGE``: a 4 MiB all-reduce) between two gloo
    processes on 127.0.0.1; with ``realtime`` their threads run SCHED_FIFO (root)."""
    return run_two_ranks(_SCRIPT, "1" if realtime else "0")


def fit_link(costs: dict[str, float], calls: dict[str, int] | None = None) -> tuple[float, float, float]:
    """(latency ns, endpoint delay ns, bandwidth GB/s of 2^30 bytes) of a 2-NPU Ring whose
    modelled costs fit ``costs`` (:func:`measure_calls`) by non-negative least squares, each
    kind weighted by its number of ``calls`` (every fitted kind once without; kinds the model
    does not time by the link are left out; none of them: all five, once each)."""
    from scipy.optimize import nnls

    weights = {k: (calls or {}).get(k, 0) for k in _MODEL}
    if not any(weights.values()):
        weights = dict.fromkeys(_MODEL, 1)
    kinds = [k for k in _MODEL if weights[k]]
    w = np.sqrt(np.array([weights[k] for k in kinds], dtype=float))
    a = np.array([_MODEL[k] for k in kinds], dtype=float) * w[:, None]
    b = np.array([costs[k] for k in kinds], dtype=float) * w
    (latency, delay), _ = nnls(a, b)
    # a 4 MiB all-reduce: 2 L + 3 e + two messages of 2 MiB over the link
    per_byte = max(costs["LARGE"] - 2 * latency - 3 * delay, 1.0) / (4 << 20)
    return float(latency), float(delay), 1 / per_byte * 1e9 / (1 << 30)


def modelled(latency: float, delay: float) -> dict[str, float]:
    """The fitted model's ns per call of each fitted kind (bytes left out: 4 KB calls)."""
    return {k: m * latency + n * delay for k, (m, n) in _MODEL.items()}


def main() -> None:
    """Measure, fit and print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--realtime", action="store_true", help="the two processes' threads SCHED_FIFO (root)")
    args = ap.parse_args()
    costs = measure_calls(args.realtime)
    latency, delay, bandwidth = fit_link(costs)
    model = modelled(latency, delay)
    print(f"fit: latency {latency:.0f} ns, endpoint delay {delay:.0f} ns, {bandwidth:.2f} GB/s")
    print("us per call, measured / fitted model: " + ", ".join(
        f"{k} {v / 1e3:.0f}/{model[k] / 1e3:.0f}" if k in model else f"{k} {v / 1e3:.0f}" for k, v in costs.items()))


if __name__ == "__main__":
    main()
