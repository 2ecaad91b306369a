"""Benchmark of the ``astrasim`` exporter: export 1,024-rank trace sets to ASTRA-sim directories.

Cases (each set is first written as ``.et`` files, then opened and exported, as
``chakra export PATH --to astrasim`` does):

- ``resnet50 DATA``: examples/text/resnet50_like.txt, data-parallel, identical ranks
  (each distinct rank is converted once, the others reuse it);
- ``gpt3 hybrid``: examples/text/gpt3_like.txt with model-parallel groups of 8 on an 8 x 128
  network: every rank differs in its groups (converted from templates);
- ``p2p ring``: a generated set, per rank 50 x (METADATA, compute, CPU bookkeeping op,
  all-reduce, send to the next rank, recv from the previous one): removals and dependency
  rewiring on every rank, no reuse.

Prints wall and CPU seconds, nodes in/out, nodes per second, and how many ranks reused an
identical rank's conversion or were converted from a template (ranks differing only in groups),
and the process's peak RSS so far (it includes writing the input set; run one case with --skip
to see one case's peak).

    .venv/bin/python benches/bench_astrasim.py [--npus 1024] [--skip gpt3]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from chakra_astrasim import export_astrasim
from chakra_core import (
    CommType,
    GeneratedRank,
    GlobalMetadata,
    Node,
    NodeType,
    TraceSet,
    load_traces,
    open_traceset,
    set_attr,
)

ROOT = Path(__file__).resolve().parents[1]
TEXT = ROOT / "examples" / "text"


def ring_rank(rank: int, npus: int, steps: int = 50):
    """Nodes of one rank of the ``p2p ring`` case."""
    prev = None
    nid = 0
    for s in range(steps):
        kinds = []
        for _ in range(6):
            nid += 1
            kinds.append(nid)
        meta, comp, cpu, coll, send, recv = kinds
        yield Node(id=meta, name="meta", type=NodeType.METADATA_NODE,
                   data_deps=[prev] if prev else [])
        n = Node(id=comp, name=f"gemm{s}", type=NodeType.COMP_NODE, duration_micros=20, data_deps=[meta])
        set_attr(n, "is_cpu_op", False)
        yield n
        n = Node(id=cpu, name="aten::view", type=NodeType.COMP_NODE, duration_micros=0, data_deps=[meta])
        set_attr(n, "is_cpu_op", True)
        yield n
        n = Node(id=coll, name="allreduce", type=NodeType.COMM_COLL_NODE, data_deps=[comp, cpu])
        set_attr(n, "comm_type", int(CommType.ALL_REDUCE))
        set_attr(n, "comm_size", 1 << 20)
        yield n
        n = Node(id=send, name="send", type=NodeType.COMM_SEND_NODE, data_deps=[coll])
        for k, v in (("comm_dst", (rank + 1) % npus), ("comm_size", 4096), ("comm_tag", s)):
            set_attr(n, k, v)
        yield n
        n = Node(id=recv, name="recv", type=NodeType.COMM_RECV_NODE, data_deps=[coll])
        for k, v in (("comm_src", (rank - 1) % npus), ("comm_size", 4096), ("comm_tag", s)):
            set_attr(n, k, v)
        yield n
        prev = recv


def make_set(case: str, npus: int) -> TraceSet:
    """The trace set of ``case`` for ``npus`` ranks (lazy)."""
    if case == "resnet50 DATA":
        return load_traces(str(TEXT / "resnet50_like.txt"), "text", {"npus": npus})
    if case == "gpt3 hybrid":
        return load_traces(str(TEXT / "gpt3_like.txt"), "text", {"npus": npus, "mp_group": 8})
    meta = GlobalMetadata(version="0.0.4")
    return TraceSet([GeneratedRank(r, meta, lambda r=r: ring_rank(r, npus)) for r in range(npus)])


def network(case: str, npus: int, tmp: Path) -> str:
    """A network file: 8 x (npus/8) for the hybrid case, else a ring of ``npus``."""
    p = tmp / "network.yml"
    if case == "gpt3 hybrid":
        p.write_text(f"topology: [ FullyConnected, Switch ]\nnpus_count: [ 8, {npus // 8} ]\n"
                     "bandwidth: [ 200, 25 ]\nlatency: [ 100, 1000 ]\n")
    else:
        p.write_text(f"topology: [ Ring ]\nnpus_count: [ {npus} ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    return str(p)


def main() -> None:
    """Run every case and print one line each."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npus", type=int, default=1024)
    ap.add_argument("--skip", nargs="*", default=[], help="cases to skip (first word: resnet50, gpt3, p2p)")
    args = ap.parse_args()
    print(f"{'case':<14} {'ranks':>5} {'nodes in':>10} {'nodes out':>10} {'wall s':>7} {'cpu s':>7} "
          f"{'nodes/s (wall)':>14} {'reused':>6} {'template':>8} {'peak RSS MB':>11}")
    for case in ("resnet50 DATA", "gpt3 hybrid", "p2p ring"):
        if case.split()[0] in args.skip:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            make_set(case, args.npus).write(tmp / "in" / "trace")
            ts = open_traceset(str(tmp / "in" / "trace"))
            t0, c0 = time.perf_counter(), time.process_time()
            res = export_astrasim(ts, tmp / "out", {"network": network(case, args.npus, tmp)})
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            s = res.summary
            print(f"{case:<14} {s['ranks']:>5} {s['nodes_in']:>10} {s['nodes_out']:>10} {wall:>7.2f} "
                  f"{cpu:>7.2f} {s['nodes_in'] / wall:>14,.0f} "
                  f"{s['report']['ranks']['converted_once_reused']:>6} "
                  f"{s['report']['ranks']['converted_from_template']:>8} "
                  f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:>11.0f}")


if __name__ == "__main__":
    main()
