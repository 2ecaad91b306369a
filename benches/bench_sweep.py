"""Benchmark of ``chakra sweep``: points per minute with each executor, the parallel
efficiency from 1 to 2 workers, and one large conversion fanned out per rank.

The sweep: the ResNet-50-shaped text workload (``examples/text/resnet50_like.txt``) on 64 NPUs,
simulated by ``simpy`` on a 64-NPU ring, over 10 link bandwidths x 4 all-reduce algorithms x 5
link latencies = 200 points (the input is converted once, by the cache).  Each executor runs it
with 1 and with 2 workers into a fresh directory; Ray and Dask start a local cluster of that many
workers first, and that start-up is reported apart (it is paid once per cluster, not per sweep).

The fan-out figure: a 32-rank PyTorch set converted by ``chakra.convert`` serially in this
process and in 2 parts at once on each executor (2 workers), to the same bytes (checked); the
speedup is serial wall / fanned-out wall.  The set: one training step of an 8-layer transformer
encoder recorded on the CPU with torch (host ET + Kineto trace, ``bench_pytorch.record_real``,
about 15 s), copied under 32 rank numbers.  The serial conversion's CPU
seconds and the load average are printed too, since a busy machine makes wall times pessimistic
(the workers' CPU time is not: they are not this process's children).

Run: ``.venv/bin/python benches/bench_sweep.py [local ray dask] [--points N] [--fanout-ranks N]
[--fanout-layers N]`` (all three executors, 200 points, 32 ranks of 8 layers by default;
``--points 0`` or ``--fanout-ranks 0`` skips a part).  Figures go to docs/sweeps.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import yaml

import chakra_core as chakra

ROOT = Path(__file__).resolve().parents[1]
BANDWIDTHS = [6.25, 12.5, 25, 37.5, 50, 75, 100, 150, 200, 400]
ALGORITHMS = ["ring", "direct", "halvingDoubling", "doubleBinaryTree"]
LATENCIES = [100, 250, 500, 1000, 2000]


def pipeline(directory: Path, points: int) -> Path:
    """The 200-point sweep (its first ``points`` bandwidths x algorithms x latencies)."""
    per = len(ALGORITHMS) * len(LATENCIES)
    doc = {
        "input": {"format": "text", "paths": [str(ROOT / "examples/text/resnet50_like.txt")],
                  "options": {"npus": 64}},
        "system": {"network": [{"topology": "Ring", "npus_count": 64, "bandwidth": 50, "latency": 500}],
                   "all-reduce-implementation": "ring", "local-mem-bw": 50},
        "backends": [{"name": "simpy"}],
        "sweep": {"grid": {"system.network[0].bandwidth": BANDWIDTHS[:max(1, points // per)],
                           "system.all-reduce-implementation": ALGORITHMS,
                           "system.network[0].latency": LATENCIES}},
    }
    path = directory / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@contextmanager
def cluster(executor: str, workers: int):
    """The executor's options for a local cluster of ``workers`` started here (None for local)."""
    if executor == "ray":
        import ray

        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        try:
            yield {}
        finally:
            ray.shutdown()
    elif executor == "dask":
        from distributed import LocalCluster

        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=logging.ERROR) as c:
            yield {"address": c.scheduler_address}
    else:
        yield {"workers": workers}


def run(executor: str, workers: int, path: Path, out: Path) -> tuple[float, float, int]:
    """(start-up s, sweep s, points ok) of one run."""
    t0 = time.perf_counter()
    with cluster(executor, workers) as options:
        t1 = time.perf_counter()
        result = chakra.sweep(path, out, executor=executor, executor_options=options)
        t2 = time.perf_counter()
    shutil.rmtree(out)
    return t1 - t0, t2 - t1, result["ok"]


def pytorch_set(directory: Path, ranks: int, layers: int) -> Path:
    """A ``ranks``-rank PyTorch set: one recorded rank of a ``layers``-layer transformer under
    every rank number."""
    from bench_pytorch import record_real

    source = record_real(directory / "recorded", layers)
    out = directory / "pytorch"
    out.mkdir()
    for rank in range(ranks):
        for kind in ("pytorch_et", "kineto"):
            shutil.copyfile(source / f"{kind}.0.json.gz", out / f"{kind}.{rank}.json.gz")
    return out


def _cpu_s() -> float:
    mine = resource.getrusage(resource.RUSAGE_SELF)
    return mine.ru_utime + mine.ru_stime


def convert_once(inputs: Path, out: Path, executor: str | None, options: dict) -> tuple[float, float, dict]:
    """(wall s, CPU s, {file name: bytes}) of one conversion."""
    import warnings

    t0, c0 = time.perf_counter(), _cpu_s()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if executor is None:
            chakra.convert(str(inputs), f"{out}/")
        else:
            chakra.convert(str(inputs), f"{out}/", executor=executor, executor_options={**options, "workers": 2})
    wall, cpu = time.perf_counter() - t0, _cpu_s() - c0
    files = {p.name: p.read_bytes() for p in out.glob("*.et")}
    shutil.rmtree(out)
    return wall, cpu, files


def fanout(executors: list[str], ranks: int, layers: int, tmp: Path) -> None:
    """Print serial against 2 parts at once for one ``ranks``-rank PyTorch conversion."""
    inputs = pytorch_set(tmp, ranks, layers)
    print(f"\nper-rank conversion fan-out: {ranks} ranks of a recorded {layers}-layer transformer step, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'executor':<8} {'parts':>5} {'wall s':>7} {'cpu s':>7} {'speedup':>7}")
    serial, cpu, expected = convert_once(inputs, tmp / "serial", None, {})
    print(f"{'serial':<8} {1:>5} {serial:7.1f} {cpu:7.1f} {'':>7}", flush=True)
    for executor in executors:
        with cluster(executor, 2) as options:
            wall, _cpu, files = convert_once(inputs, tmp / executor, executor, options)
        assert files == expected, f"{executor}: the fanned-out set differs from the serial one"
        print(f"{executor:<8} {2:>5} {wall:7.1f} {'':>7} {serial / wall:7.2f}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def sweeps(executors: list[str], points: int, tmp: Path) -> None:
    """Print points per minute with 1 and 2 workers per executor and the 1 -> 2 efficiency."""
    path = pipeline(tmp, points)
    n = chakra.sweep(path, check=True)["points"]
    print(f"{n} points, 64 ranks each")
    print(f"{'executor':<8} {'workers':>7} {'start s':>8} {'sweep s':>8} {'points/min':>11} {'efficiency':>10}")
    for executor in executors:
        rate1 = None
        for workers in (1, 2):
            start, secs, ok = run(executor, workers, path, tmp / f"{executor}-{workers}")
            assert ok == n, f"{executor}: {ok} of {n} points ok"
            rate = n / secs * 60
            eff = f"{rate / rate1 / 2:10.2f}" if rate1 else f"{'':>10}"
            rate1 = rate1 or rate
            print(f"{executor:<8} {workers:>7} {start:8.1f} {secs:8.1f} {rate:11.0f} {eff}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def main() -> int:
    """Print the sweep figures and the fan-out figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("executors", nargs="*", default=["local", "ray", "dask"])
    ap.add_argument("--points", type=int, default=200, help="points (a multiple of 20; 0: no sweep)")
    ap.add_argument("--fanout-ranks", type=int, default=32, help="ranks of the fan-out conversion (0: skip it)")
    ap.add_argument("--fanout-layers", type=int, default=8, help="layers of the recorded transformer")
    args = ap.parse_args()
    chakra.set_progress_enabled(False)
    print(f"{os.cpu_count()} cores; python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        if args.points:
            sweeps(args.executors, args.points, Path(tmp))
        if args.fanout_ranks:
            fanout(args.executors, args.fanout_ranks, args.fanout_layers, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
