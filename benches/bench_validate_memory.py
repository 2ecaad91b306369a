"""Peak memory of ``validate`` (or ``stats``: ``--command stats``) on a large rank: bytes per
node above the interpreter's own.

Writes, in a temporary directory, a 2-rank set with chakra_core's writer: rank 0 has ``--nodes``
compute nodes (a data dep on the previous node, a ctrl dep 8 back, two attributes each) with an
all-reduce every 1,000 nodes; rank 1 has the matching all-reduces only.  ``validate`` then runs
on it in a fresh subprocess (its ru_maxrss is its own), all rules and the deadlock search
included; ``stats`` is ``compute_stats`` with the longest path.  ``--sparse`` numbers the nodes
2, 4, 6, ... (non-consecutive ids), ``--step K`` K, 2K, 3K, ...; ``--descending`` numbers them
from the highest down (each dependency still names an earlier node, as the PyTorch converter
writes; the compiled loops keep a table by id; ``--step 4 --descending`` spreads the ids over 4
times their count, as a converted PyTorch rank's are); ``--warm`` runs the command once on a
2,000-node set before the baseline is taken (numba's runtime and the compiled kernels loaded,
about 85 MB: the figure is then per node above start-up); ``--ref DIR`` imports chakra_core from
DIR instead (another checkout, for a before/after comparison).  ``--ranks N`` measures a set of
many ranks instead: the GPT-3-like text workload (``examples/text/gpt3_like.txt``, model-parallel
groups of 8) at N NPUs, written as .et files (2,483 nodes a rank), with the figure per rank.
Usage: python benches/bench_validate_memory.py [--nodes 5000000] [--sparse | --step K] [--descending]
                                              [--command stats] [--warm] [--ref DIR] [--ranks N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

WRITE = r"""
import sys
from chakra_core import CommType, EtWriter, GlobalMetadata, Node, NodeType, make_attr

prefix, n, step, down = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
ident = (lambda i: (n + 1 - i) * step) if down else (lambda i: i * step)
cpu, ops = make_attr("is_cpu_op", False), make_attr("num_ops", 1 << 20)
coll = [make_attr("comm_type", int(CommType.ALL_REDUCE)), make_attr("comm_size", 1 << 20)]

def rank0():
    for i in range(1, n + 1):
        nid = ident(i)
        is_coll = i % 1000 == 0
        node = Node(id=nid, name="allreduce" if is_coll else "aten::linear",
                    type=NodeType.COMM_COLL_NODE if is_coll else NodeType.COMP_NODE, duration_micros=i % 97)
        if i > 1:
            node.data_deps.append(ident(i - 1))
        if i > 8:
            node.ctrl_deps.append(ident(i - 8))
        node.attr.extend(coll if is_coll else (cpu, ops))
        yield node

def rank1():
    for i in range(1, n // 1000 + 1):
        node = Node(id=i, name="allreduce", type=NodeType.COMM_COLL_NODE)
        if i > 1:
            node.data_deps.append(i - 1)
        node.attr.extend(coll)
        yield node

for rank, nodes in ((0, rank0()), (1, rank1())):
    with EtWriter(f"{prefix}.{rank}.et", GlobalMetadata(version="0.0.4")) as w:
        w.write_many(nodes)
"""

WRITE_RANKS = r"""
import sys
from chakra_core import load_traces

load_traces(sys.argv[3], "text", {"npus": int(sys.argv[2]), "mp_group": 8}).write(sys.argv[1])
"""
#: the many-rank workload of ``--ranks``
GPT3_LIKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples", "text", "gpt3_like.txt")

MEASURE = r"""
import json, resource, sys, time
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
import chakra_core
from chakra_core import compute_stats, open_traceset, validate
if len(sys.argv) > 3:  # --warm: numba loaded first, so that the small set takes the compiled loops too
    import numba
    compute_stats(open_traceset(sys.argv[3])) if sys.argv[2] == "stats" else validate(open_traceset(sys.argv[3]))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t, c = time.perf_counter(), time.process_time()
if sys.argv[2] == "stats":
    assert compute_stats(open_traceset(sys.argv[1]))["nodes"] > 0
else:
    findings = validate(open_traceset(sys.argv[1]))
    assert not findings, [str(f) for f in findings[:3]]
dt, cpu = time.perf_counter() - t, time.process_time() - c
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": dt, "cpu_s": cpu, "peak_rss_mb": peak / 1024, "baseline_rss_mb": base / 1024,
                  "core": chakra_core.__file__}))
"""


def main() -> int:
    """Write the set, measure validate once, print the figures (JSON with --json)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5_000_000, help="nodes of rank 0")
    ap.add_argument("--sparse", action="store_true", help="non-consecutive node ids (--step 2)")
    ap.add_argument("--step", type=int, default=1, help="node ids K apart")
    ap.add_argument("--descending", action="store_true", help="node ids descending in file order")
    ap.add_argument("--command", choices=("validate", "stats"), default="validate")
    ap.add_argument("--warm", action="store_true", help="take the baseline after a run on a small set")
    ap.add_argument("--ref", help="import chakra_core from this directory for the measurement")
    ap.add_argument("--ranks", type=int, help="measure the GPT-3-like text workload at this many NPUs instead")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    step = 2 if args.sparse else args.step
    env = dict(os.environ)
    if args.ref:
        env["PYTHONPATH"] = os.path.abspath(args.ref) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as d:
        prefix = os.path.join(d, "bench")
        if args.ranks:
            subprocess.run([sys.executable, "-c", WRITE_RANKS, prefix, str(args.ranks), GPT3_LIKE], check=True)
        else:
            subprocess.run([sys.executable, "-c", WRITE, prefix, str(args.nodes), str(step),
                            str(int(args.descending))], check=True)
        warm = []
        if args.warm:
            warm = [os.path.join(d, "warm")]
            subprocess.run([sys.executable, "-c", WRITE, warm[0], "2000", "1", str(int(args.descending))],
                           check=True)
        out = subprocess.run([sys.executable, "-c", MEASURE, prefix, args.command, *warm], capture_output=True,
                             text=True, env=env, cwd=d, check=True)
    r = json.loads(out.stdout)
    if args.ranks:
        r["ranks"] = args.ranks
        r["kb_per_rank"] = (r["peak_rss_mb"] - r["baseline_rss_mb"]) * 1024 / args.ranks
        what = f"GPT-3-like text workload at {args.ranks:,} ranks: "
        per = f"{r['kb_per_rank']:.1f} KB/rank"
    else:
        r["nodes"] = args.nodes
        r["bytes_per_node"] = (r["peak_rss_mb"] - r["baseline_rss_mb"]) * 2**20 / args.nodes
        ids = (f"{step} apart" if step > 1 else "consecutive") + (", descending" if args.descending else "")
        what = f"{args.nodes:,} nodes ({ids} ids): "
        per = f"{r['bytes_per_node']:.1f} bytes/node"
    if args.json:
        print(json.dumps(r))
    else:
        print(f"{args.command}, {what}"
              f"{r['seconds']:.1f} s ({r['cpu_s']:.1f} s CPU), peak RSS {r['peak_rss_mb']:.1f} MB (after "
              f"{'a warm-up run' if args.warm else 'imports'} {r['baseline_rss_mb']:.1f} MB): {per}  [{r['core']}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
