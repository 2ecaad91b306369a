"""Read/write throughput (nodes/s) and peak memory of the .et reader and writer.

Each measurement runs in a fresh subprocess so that its peak RSS (ru_maxrss) is its own.
``jsonize`` writes the JSON form of an ``.et`` file (the compiled transcoder from the wire
bytes when numba is installed); ``jsonize_objects`` writes it from Node objects (the path of
other ranks, and of every rank before the transcoder) and checks that both files are the same.
Usage: python benches/bench_io.py [--sizes 250000,500000,1000000] [--json-sizes 200000,1000000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time
from chakra_core import make_attr
from chakra_core import EtReader, EtWriter, read_et
from chakra_core import GlobalMetadata, Node

mode, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if mode.startswith("jsonize"):  # numba's import and the kernels' load, outside the timing
    import chakra_core.io._jsonform
_use = resource.getrusage(resource.RUSAGE_SELF)
cpu0 = _use.ru_utime + _use.ru_stime

def nodes():
    cpu, ops = make_attr("is_cpu_op", False), make_attr("num_ops", 1 << 20)
    for i in range(1, n + 1):
        node = Node(id=i, name="aten::linear", type=4, duration_micros=i % 97)
        if i > 1:
            node.data_deps.append(i - 1)
        if i > 8:
            node.ctrl_deps.append(i - 8)
        node.attr.append(cpu)
        node.attr.append(ops)
        yield node

t = time.perf_counter()
if mode == "write":
    with EtWriter(path, GlobalMetadata(version="0.0.4")) as w:
        w.write_many(nodes())
    count = w.count
elif mode == "build":  # cost of making the Node objects alone, to separate it from writing
    count = sum(1 for _ in nodes())
elif mode == "stream":
    count = 0
    for batch in EtReader(path).batches():
        for node in batch:
            count += 1
elif mode == "stream_fields":  # touch id, type, deps of every node as a consumer would
    count = 0
    acc = 0
    for batch in EtReader(path).batches():
        for node in batch:
            acc += node.id + node.type + len(node.data_deps)
            count += 1
elif mode == "plain":  # baseline: a plain protobuf parse loop over the whole file, one message at a time
    from google.protobuf.internal.decoder import _DecodeVarint32
    data = open(path, "rb").read()
    ln, pos = _DecodeVarint32(data, 0)
    pos += ln
    count = 0
    while pos < len(data):
        ln, pos = _DecodeVarint32(data, pos)
        node = Node.FromString(data[pos:pos + ln])
        pos += ln
        count += 1
elif mode == "validate":  # chakra validate: compact graph, dep and cycle checks
    from chakra_core import open_traceset, validate
    findings = validate(open_traceset(path))
    assert not findings, findings[:3]
    count = n
elif mode == "stats":  # chakra stats, including the longest path
    from chakra_core import compute_stats, open_traceset
    count = compute_stats(open_traceset(path))["nodes"]
elif mode == "jsonize":  # .et -> JSON form
    from chakra_core import write_json
    r = EtReader(path)
    count = write_json(path + ".json", r.metadata, r)
elif mode == "jsonize_objects":  # the same from Node objects, same bytes
    from chakra_core import write_json
    r = EtReader(path)
    count = write_json(path + ".objects.json", r.metadata, iter(r))
    assert open(path + ".objects.json", "rb").read() == open(path + ".json", "rb").read()
elif mode == "unjsonize":  # JSON form -> .et (the exact inverse)
    from chakra_core import read_json
    meta, it, _ = read_json(path + ".json")
    with EtWriter(path + ".back.et", meta) as w:
        w.write_many(it)
    count = w.count
    assert open(path + ".back.et", "rb").read() == open(path, "rb").read()
elif mode == "memory":
    meta, all_nodes = read_et(path)
    count = len(all_nodes)
dt = time.perf_counter() - t
use = resource.getrusage(resource.RUSAGE_SELF)
cpu = use.ru_utime + use.ru_stime - cpu0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"mode": mode, "nodes": count, "seconds": dt, "nodes_per_s": count / dt, "cpu_s": cpu,
                  "nodes_per_cpu_s": count / max(cpu, 1e-9),
                  "peak_rss_mb": peak / 1024, "baseline_rss_mb": base / 1024}))
"""


def run(mode: str, path: str, n: int) -> dict:
    """Run one measurement in a subprocess and return its figures."""
    out = subprocess.run([sys.executable, "-c", CHILD, mode, path, str(n)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def _print_row(n: int, mode: str, r: dict) -> None:
    print(f"{n:>9} nodes  {mode:<15} {r['nodes_per_s']:>12,.0f} nodes/s  {r['seconds']:7.2f} s  "
          f"({r['nodes_per_cpu_s']:>12,.0f} nodes per CPU s)  "
          f"peak RSS {r['peak_rss_mb']:7.1f} MB (interpreter+libs {r['baseline_rss_mb']:.1f} MB)", flush=True)


def main() -> int:
    """Print a table of figures (and JSON with --json)."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="250000,500000,1000000")
    ap.add_argument("--json-sizes", default="200000,1000000", help="nodes for the JSON-form rows")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in map(int, filter(None, args.sizes.split(","))):
            path = os.path.join(d, f"bench{n}.0.et")
            for mode in ("build", "write", "plain", "stream", "stream_fields", "memory", "validate", "stats"):
                r = run(mode, path, n)
                r["file_mb"] = os.path.getsize(path) / 2**20 if os.path.exists(path) else 0
                rows.append(r)
                _print_row(n, mode, r)
        for n in map(int, filter(None, args.json_sizes.split(","))):
            path = os.path.join(d, f"json{n}.0.et")
            for mode in ("write", "jsonize", "jsonize_objects", "unjsonize"):
                r = run(mode, path, n)
                if mode != "write":
                    rows.append(r)
                    _print_row(n, mode, r)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
