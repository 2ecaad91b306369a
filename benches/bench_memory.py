"""Benchmark of peak memory and speed of ``chakra stats`` and ``chakra export --to astrasim`` on
one large rank.

The rank is generated in a temporary directory with the core writer: a chain of compute nodes
(every 16th also has a control dependency 16 nodes back), where every 64th node is an
all-reduce of 1 MiB and every 64th (offset by 32) a 0-duration CPU bookkeeping op (which the
exporter removes, rewiring its dependents).  The network is a ring of 2 NPUs, so the
collectives are kept and rank 1 gets the idle node.

Each command runs once, in its own process; the figures are its wall seconds, nodes per second
and peak resident memory (``ru_maxrss`` of that process, from ``os.wait4``).

    .venv/bin/python benches/bench_memory.py [--nodes 5000000] [--skip stats export]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from chakra_core import CommType, GlobalMetadata, Node, NodeType, set_attr, write_et

CHAKRA = str(Path(sys.executable).with_name("chakra"))


def chain_nodes(count: int) -> Iterator[Node]:
    """The nodes of the benchmark rank (see the module docstring), ids 1..count."""
    for nid in range(1, count + 1):
        k = nid % 64
        if k == 0:
            n = Node(id=nid, name="allreduce", type=NodeType.COMM_COLL_NODE)
            set_attr(n, "comm_type", int(CommType.ALL_REDUCE))
            set_attr(n, "comm_size", 1 << 20)
        elif k == 32:
            n = Node(id=nid, name="aten::view", type=NodeType.COMP_NODE)
            set_attr(n, "is_cpu_op", True)
        else:
            n = Node(id=nid, name="gemm", type=NodeType.COMP_NODE, duration_micros=10 + nid % 7)
            set_attr(n, "is_cpu_op", False)
        if nid > 1:
            n.data_deps.append(nid - 1)
        if nid > 16 and nid % 16 == 0:
            n.ctrl_deps.append(nid - 16)
        yield n


def measure(args: list[str]) -> tuple[float, float]:
    """Run ``args``; return (wall seconds, peak RSS in MB) of that process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed with status {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    """Generate the rank, run each command once, print one line each."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5_000_000)
    ap.add_argument("--skip", nargs="*", default=[], choices=("stats", "export"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        write_et(root / "trace.0.et", GlobalMetadata(version="0.0.4"), chain_nodes(args.nodes))
        (root / "network.yml").write_text("topology: [ Ring ]\nnpus_count: [ 2 ]\nbandwidth: [ 50 ]\n"
                                          "latency: [ 500 ]\n")
        size = (root / "trace.0.et").stat().st_size
        print(f"generated {args.nodes:,} nodes ({size / 2**20:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        commands = {
            "stats": [CHAKRA, "stats", str(root / "trace.0.et"), "--json"],
            "export": [CHAKRA, "export", str(root / "trace.0.et"), "--to", "astrasim",
                       "--network", str(root / "network.yml"), "-o", str(root / "out")],
        }
        print(f"{'command':<8} {'nodes':>10} {'wall s':>8} {'nodes/s':>10} {'peak RSS MB':>11} {'bytes/node':>10}")
        for name, cmd in commands.items():
            if name in args.skip:
                continue
            wall, peak = measure(cmd)
            print(f"{name:<8} {args.nodes:>10} {wall:>8.1f} {args.nodes / wall:>10,.0f} {peak:>11.0f} "
                  f"{peak * 2**20 / args.nodes:>10.0f}")


if __name__ == "__main__":
    main()
