"""Benchmark of the ``simpy`` simulator backend: wall time and simulated events per second.

(a) 1,024 ranks x 10 layers (compute + 16 MiB all-reduce) on an 8 x 128 2-D network, symmetry on;
(b) the same with symmetry off;
(c) 64 ranks x 100,000 nodes each (compute chains with an all-reduce every 100 nodes, ranks made
    different so that symmetry does not apply), written as .et files first, symmetry off;
(d) examples/text/gpt3_like.txt on 1,024 NPUs (tensor-parallel 8 x data-parallel 128, 2.5 M
    nodes) on examples/system/system_2d.yaml, written as .et files first and simulated from
    them as ``chakra simulate DIR`` does; ``--check`` also simulates it with symmetry off and
    compares every rank's row.

Run: ``.venv/bin/python benches/bench_simpy.py [a b c d] [--nodes N] [--check]`` ((a) and (b):
best of 3; default: a b c).  Each case prints its load, simulate, rest (the result: rows, spans,
critical path) and total wall time, the CPU time of this process and of the worker processes
that loaded ranks (``-O jobs``), simulated nodes per second of wall (load included) and the
peak RSS of the process so far.  Targets: (d) under 20 s wall, load included; (c) >= 1,000,000
simulated nodes per second of wall, load included.  Figures go to docs/simulator.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from chakra_core import CommType, GeneratedRank, GlobalMetadata, Node, NodeType, TraceSet, set_attr

SYSTEM_2D = {
    "network": [{"topology": "FullyConnected", "npus_count": 8, "bandwidth": 200, "latency": 100},
                {"topology": "Switch", "npus_count": 128, "bandwidth": 25, "latency": 1000}],
    "all-reduce-implementation": ["ring", "ring"], "all-gather-implementation": ["ring", "ring"],
    "reduce-scatter-implementation": ["ring", "ring"], "all-to-all-implementation": ["ring", "ring"],
    "collective-optimization": "localBWAware", "preferred-dataset-splits": 4,
    "active-chunks-per-dimension": 1, "endpoint-delay": 10, "local-mem-bw": 1600,
}


def _comp(i: int, us: int, deps=()) -> Node:
    n = Node(id=i, name=f"layer{i}", type=NodeType.COMP_NODE, duration_micros=us)
    set_attr(n, "is_cpu_op", False)
    n.data_deps.extend(deps)
    return n


def _ar(i: int, size: int, deps=()) -> Node:
    n = Node(id=i, name=f"allreduce{i}", type=NodeType.COMM_COLL_NODE)
    set_attr(n, "is_cpu_op", False)
    set_attr(n, "comm_type", int(CommType.ALL_REDUCE))
    set_attr(n, "comm_size", size)
    n.data_deps.extend(deps)
    return n


def layers(rank: int, count: int = 10):
    """Compute of each layer, then an all-reduce of 16 MiB depending on it (next layer overlaps)."""
    for k in range(count):
        c = 2 * k + 1
        yield _comp(c, 500, [c - 2] if k else [])
        yield _ar(c + 1, 16 << 20, [c])


def chain(rank: int, nodes: int):
    """``nodes`` nodes: a compute chain (durations differ per rank) with an all-reduce every 100."""
    for i in range(1, nodes + 1):
        if i % 100 == 0:
            yield _ar(i, 1 << 20, [i - 1])
        else:
            yield _comp(i, 1 + (((i ^ (rank * 7919)) * 2654435761) >> 9) % 9, [i - 1] if i > 1 else [])


def chains(directory: str, nranks: int, nodes: int) -> TraceSet:
    """Case (c) written as ``.et`` files (rank r's nodes are rank 0's with r's durations)."""
    from chakra_core import EtWriter, open_traceset

    t0 = time.perf_counter()
    os.makedirs(directory)
    template = list(chain(0, nodes))
    for r in range(nranks):
        for n in template:
            if n.type == NodeType.COMP_NODE:
                n.duration_micros = 1 + (((n.id ^ (r * 7919)) * 2654435761) >> 9) % 9
        with EtWriter(f"{directory}/trace.{r}.et") as w:
            w.write_many(template)
    print(f"(c) wrote the set in {time.perf_counter() - t0:.1f} s", flush=True)
    return open_traceset(directory)


def traceset(nranks: int, make) -> TraceSet:
    """A set whose ranks generate their nodes on demand."""
    return TraceSet([GeneratedRank(r, GlobalMetadata(), (lambda r=r: make(r))) for r in range(nranks)])


def run(name: str, traces: TraceSet, options: dict, repeat: int = 1):
    """Simulate (best of ``repeat`` runs) and print wall time, events and events/s."""
    from chakra_simpy.backend import SimpyBackend

    b = SimpyBackend()
    b.name = "simpy"
    best = None
    for _ in range(repeat):
        t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
        res = b.run(traces, b.check_options(options), None)
        wall = time.perf_counter() - t0
        cpu = (time.process_time() - c0, _children_cpu() - k0)
        if best is None or wall < best[1]:  # the whole run: simulate alone rounds to 0.00 s in (a)
            best = (res, wall, cpu)
    res, wall, cpu = best
    s = res.summary
    nodes = sum(r["nodes"] for r in res.ranks if r["simulated_as"] == r["rank"])
    sim_s = s["wall_s"]["simulate"]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"({name}) ranks={s['ranks']} classes={s['symmetry']['classes']} finish={s['finish_ns']} ns "
          f"load {s['wall_s']['load']:.2f} s, simulate {sim_s:.2f} s, "
          f"the rest (the result: rows, spans, critical path) {wall - s['wall_s']['load'] - sim_s:.2f} s, "
          f"total wall {wall:.2f} s (CPU {cpu[0]:.2f} s, loading workers {cpu[1]:.2f} s, "
          f"load average {os.getloadavg()[0]:.1f}); nodes simulated={nodes}: {int(nodes / wall)} per s of wall "
          f"(load included), {int(nodes / sim_s) if sim_s else 0} per s of simulate; events={s['events']} "
          f"(SimPy {s['simpy_events']}); peak RSS so far {rss:.0f} MiB", flush=True)
    return res


def _children_cpu() -> float:
    """CPU time (s) of this process's finished child processes (the loading workers)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main() -> None:
    """Run the chosen cases."""
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*", default=["a", "b", "c"])
    ap.add_argument("--nodes", type=int, default=100_000, help="nodes per rank in case (c)")
    ap.add_argument("--check", action="store_true", help="(d): compare with symmetry off")
    args = ap.parse_args()
    import tempfile

    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        sys_path = f"{tmp}/system.yaml"
        with open(sys_path, "w") as f:
            yaml.safe_dump(SYSTEM_2D, f)
        if "a" in args.cases:
            run("a", traceset(1024, layers), {"system": sys_path}, repeat=3)
        if "b" in args.cases:
            run("b", traceset(1024, layers), {"system": sys_path, "symmetry": False}, repeat=3)
        if "c" in args.cases:
            net64 = f"{tmp}/net64.yml"
            with open(net64, "w") as f:
                f.write("topology: [Switch]\nnpus_count: [64]\nbandwidth: [50]\nlatency: [500]\n")
            run("c", chains(f"{tmp}/chain", 64, args.nodes), {"network": net64, "symmetry": False})
        if "d" in args.cases:
            gpt3(tmp, args.check)


def gpt3(tmp: str, check: bool) -> None:
    """Case (d): the GPT-3-like set written as .et files, then simulated from them."""
    from pathlib import Path

    from chakra_core import load_traces, open_traceset

    root = Path(__file__).resolve().parents[1]
    t0 = time.perf_counter()
    load_traces(str(root / "examples" / "text" / "gpt3_like.txt"), "text",
                {"npus": 1024, "mp_group": 8}).write(f"{tmp}/gpt3/trace")
    print(f"(d) wrote the set in {time.perf_counter() - t0:.1f} s", flush=True)
    system = str(root / "examples" / "system" / "system_2d.yaml")
    on = run("d", open_traceset(f"{tmp}/gpt3"), {"system": system})
    if check:
        off = run("d, symmetry off", open_traceset(f"{tmp}/gpt3"), {"system": system, "symmetry": False})
        same = ([{k: v for k, v in r.items() if k != "simulated_as"} for r in on.ranks]
                == [{k: v for k, v in r.items() if k != "simulated_as"} for r in off.ranks])
        print(f"(d) per-rank rows equal with symmetry on and off: {same}", flush=True)


if __name__ == "__main__":
    main()
