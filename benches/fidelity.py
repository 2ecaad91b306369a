"""Fidelity of the PyTorch conversion: measured step time against the ET and the simulator.

For every trace recorded by the scripts of ``plugins/chakra-pytorch/recording/`` (the folders
of ``plugins/chakra-pytorch/tests/data/`` that hold Kineto traces; the hand-made ``nccl/`` is
left out: it was not measured), per rank:

- *measured*: the recorded steps of the Kineto trace, first ``ProfilerStep#N`` start to last
  end on the profiling thread, read from the Kineto file here (not through the conversion);
- *longest path*: the converted ET's longest path by ``duration_micros`` (``chakra stats``);
- *simulated*: the ``simpy`` simulator's finish time with the replay compute model, on a system
  matching the recording: as many NPUs as ranks, one Ring (a 2-rank Ring is a pair of links), as
  many communication ops in flight per rank (``-O streams``) as the recording shows gloo worker
  threads (threads running ``gloo:*`` work in the Kineto file), and two communication timings:
  *network*, the network of the recordings, gloo over TCP on 127.0.0.1, measured here (the
  median time of a 4-byte all-reduce between two gloo processes gives the link latency, a 2-rank
  ring all-reduce being two messages, the median of a 4 MiB one the bandwidth; needs torch,
  ``--latency-ns``/``--bandwidth`` give the network instead); and *replay* (``-O comm=replay``),
  each communication node's recorded duration, from when the last member issued it;
  Each rank starts at its *offset*: how much later than the earliest rank its recorded steps
  began (the ranks of a recording share the host's clock), which the conversion records in each
  rank's metadata (``start_offset_ns``).  The replay is run as docs/pytorch.md shows it, without
  ``-O start_ns`` (the simulator takes the recorded offsets); the network model is given them as
  ``-O start_ns``.  A rank's simulated time is its finish less its offset.

Prints one row per rank with the relative errors against the measured step, and writes them as
JSON with ``--json FILE``.

    python benches/fidelity.py [--latency-ns N --bandwidth GBPS] [--data DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"

_PINGPONG = r'''
import json, os, sys, time, statistics, torch, torch.distributed as dist, torch.multiprocessing as mp

def run(rank, port, out, gap_s):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    res = {}
    for name, n, reps in (("small", 1, 300), ("large", 1 << 20, 30)):
        t = torch.ones(n)
        for _ in range(5):
            dist.all_reduce(t)
        times = []
        for _ in range(reps):
            dist.barrier()
            if gap_s:
                time.sleep(gap_s)
            s = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - s)
        res[name] = statistics.median(times)
    if rank == 0:
        open(out, "w").write(json.dumps(res))
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(run, args=(sys.argv[1], sys.argv[2], float(sys.argv[3])), nprocs=2, join=True)
'''


def measure_loopback(gap_s: float = 0.0) -> tuple[float, float]:
    """(latency in ns, bandwidth in GB/s of 2^30 bytes) of gloo over 127.0.0.1, from the median
    time of a 4-byte and of a 4 MiB all-reduce between two processes; with ``gap_s`` both sleep
    that long before each timed call (isolated calls, as a trace's collectives come between its
    compute), else the calls follow each other."""
    from gloo_link import run_two_ranks

    res = run_two_ranks(_PINGPONG, str(gap_s))
    # a ring all-reduce of 2 ranks: 2 messages of m/2 bytes one after the other
    latency_s = res["small"] / 2
    large_bytes = 4 << 20
    per_byte_s = max(res["large"] / 2 - latency_s, 1e-12) / (large_bytes / 2)
    return latency_s * 1e9, 1 / per_byte_s / (1 << 30)


def _events(kineto: Path) -> list[dict]:
    opener = gzip.open if kineto.suffix == ".gz" else open
    with opener(kineto, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def recorded_steps(kineto: Path) -> tuple[float, float]:
    """(start, end) in us of the recorded steps of a Kineto trace: first ProfilerStep start to
    last end, on the thread of the first step."""
    steps = sorted((e["ts"], e["ts"] + e["dur"], e["tid"]) for e in _events(kineto)
                   if str(e.get("name", "")).startswith("ProfilerStep#"))
    mine = [s for s in steps if s[2] == steps[0][2]]
    return mine[0][0], max(e for _, e, _ in mine)


def measured_step_us(kineto: Path) -> float:
    """The recorded steps of a Kineto trace: first ProfilerStep start to last end (us)."""
    start, end = recorded_steps(kineto)
    return end - start


def gloo_workers(kineto: Path) -> int:
    """How many threads of the trace ran gloo work (``gloo:*`` annotations)."""
    return len({e["tid"] for e in _events(kineto) if str(e.get("name", "")).startswith("gloo:")})


def recorded_traces(data: Path = DATA) -> list[Path]:
    """The folders of recorded traces (host ET + Kineto per rank) under ``data``."""
    return sorted(d for d in data.iterdir() if d.is_dir() and any(d.glob("kineto.*.json.gz")))


def system_file(ranks: int, latency_ns: float, bandwidth: float, directory: Path,
                endpoint_delay_ns: float | None = None) -> Path:
    """Our system description (JSON) for ``ranks`` NPUs on one Ring with the given link (and
    endpoint delay, else the default), replay compute."""
    path = directory / f"system{ranks}.json"
    network = [{"topology": "Ring", "npus_count": ranks, "bandwidth": round(bandwidth, 3),
                "latency": max(1, round(latency_ns))}]
    system = {"network": network, "compute": "replay", "preferred-dataset-splits": 1,
              "collective-optimization": "baseline", "scheduling-policy": "FIFO"}
    if endpoint_delay_ns is not None:
        system["endpoint-delay"] = max(1, round(endpoint_delay_ns))  # ASTRA-sim refuses 0
    path.write_text(json.dumps(system))
    return path


def recorded_offset_ns(meta) -> int:
    """A converted rank's start offset (ns): its metadata ``start_offset_ns``, else 0."""
    return next((a.int64_val for a in meta.attr if a.name == "start_offset_ns"), 0)


def _error_pct(step: float):
    """The relative error (%) of a time against ``step``."""
    return lambda x: round(100 * (x - step) / step, 2)


def rows_for(folder: Path, latency_ns: float, bandwidth: float, tmp: Path) -> list[dict]:
    """One row per rank of the recorded ``folder``."""
    from chakra_core import compute_stats, convert, open_traceset, simulate

    et = tmp / folder.name
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        convert([str(folder)], et, format="pytorch")
    cut = {Path(str(w.message).split(":", 1)[0]).name for w in seen
           if "still running when the profiler" in str(w.message)}
    traces = open_traceset(str(et))
    paths = {r["rank"]: r["longest_path_us"] for r in compute_stats(traces)["per_rank"]}
    kineto = {rank: folder / f"kineto.{rank}.json.gz" for rank in paths}
    steps = {rank: recorded_steps(k) for rank, k in kineto.items()}
    system = str(system_file(len(traces), latency_ns, bandwidth, tmp)) if len(traces) > 1 else None
    streams = max(1, *(gloo_workers(k) for k in kineto.values()))
    start_ns = [recorded_offset_ns(traces[r].metadata()) for r in traces.ranks]
    offset = {rank: start_ns[rank] / 1000 for rank in paths}
    finish = {}
    for comm, options in (("model", {"start_ns": start_ns}), ("replay", {})):
        sim = simulate(str(et), "simpy", system=system, options={"comm": comm, "streams": streams, **options})
        finish[comm] = {r["rank"]: r["finish_ns"] / 1000 - offset[r["rank"]] for r in sim.ranks}
    rows = []
    for rank in sorted(paths):
        step = steps[rank][1] - steps[rank][0]
        err = _error_pct(step)
        rows.append({"trace": folder.name, "ranks": len(traces), "rank": rank, "measured_us": round(step, 1),
                     "offset_us": round(offset[rank], 1), "streams": streams,
                     "longest_path_us": paths[rank], "path_error_pct": err(paths[rank]),
                     "simulated_us": round(finish["model"][rank], 1), "sim_error_pct": err(finish["model"][rank]),
                     "replayed_us": round(finish["replay"][rank], 1),
                     "replay_error_pct": err(finish["replay"][rank]),
                     "cut_off": kineto[rank].name in cut})
    return rows


def main() -> None:
    """Print the fidelity table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency-ns", type=float, help="link latency (ns) instead of measuring gloo")
    ap.add_argument("--bandwidth", type=float, help="link bandwidth (GB/s, 2^30 B) instead of measuring")
    ap.add_argument("--json", help="also write the rows as JSON here")
    ap.add_argument("--data", type=Path, default=DATA, help="folder of recordings (default: the fixtures)")
    args = ap.parse_args()
    wall, cpu = time.perf_counter(), time.process_time()
    if args.latency_ns is None or args.bandwidth is None:
        t = time.perf_counter()
        latency, bandwidth = measure_loopback()
        print(f"gloo over 127.0.0.1, measured in {time.perf_counter() - t:.1f} s: latency {latency:,.0f} ns "
              f"per message, bandwidth {bandwidth:.3f} GB/s (load average {os.getloadavg()[0]:.1f})")
    else:
        latency, bandwidth = args.latency_ns, args.bandwidth
    warnings.simplefilter("ignore")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as d:
        for folder in recorded_traces(args.data):
            rows += rows_for(folder, latency, bandwidth, Path(d))
    print("| trace | rank | offset us | measured step us | longest path us | error | simulated (network) us "
          "| error | simulated (replay) us | error | recording |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['trace']} | {r['rank']} | {r['offset_us']:,.1f} | {r['measured_us']:,.1f} | "
              f"{r['longest_path_us']:,} | {r['path_error_pct']:+.2f}% | {r['simulated_us']:,.1f} | "
              f"{r['sim_error_pct']:+.2f}% | {r['replayed_us']:,.1f} | {r['replay_error_pct']:+.2f}% |"
              + (" op cut off by the profiler's stop |" if r["cut_off"] else " |"))
    for key, what in (("path_error_pct", "longest paths"), ("sim_error_pct", "simulated (network)"),
                      ("replay_error_pct", "simulated (replay)")):
        within = sum(abs(r[key]) <= 2 for r in rows)
        whole = [r for r in rows if not r["cut_off"]]
        print(f"{what}: {within} of {len(rows)} ranks within 2% of the measured step "
              f"(median |error| {statistics.median(abs(r[key]) for r in rows):.2f}%); of the "
              f"{len(whole)} ranks whose recording has no op cut off: {sum(abs(r[key]) <= 2 for r in whole)}")
    print(f"{time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU (this process), "
          f"load average {os.getloadavg()[0]:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"latency_ns": latency, "bandwidth_gbps": bandwidth,
                                               "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
