"""Benchmark of the ``pytorch`` input format (chakra-pytorch): time and peak memory.

1. a real trace: records one training step of a 24-layer transformer encoder (d_model 512,
   8 heads, AdamW foreach=False) on the CPU with torch 2.13.0 (about 24k host-ET nodes), then
   converts host ET + Kineto to Chakra ETs (``--layers 24,48`` records and converts both sizes);
2. synthetic traces of 250,000 and 1,000,000 host-ET nodes (plus a Kineto trace with an event
   for every node) in PyTorch's layout, to show that memory grows linearly with the nodes, and
   one of 250,000 nodes with an asynchronous gloo all-reduce after every 10th operator (time
   linear in the communications too).

Each conversion runs in a fresh process that reports its wall and CPU seconds and peak RSS; the
RSS of the same process after the imports alone is printed too, so the conversion's own share is
visible (bytes per host node above the imports), and between two sizes of one kind of trace the
growth per host node (what the conversion keeps per node, without the fixed costs).
Targets (docs/pytorch.md): the real trace in <= 1.55 s (10x faster than 15.5 s) and <= 107 MB
(1/4 of 429 MB).

    python benches/bench_pytorch.py [--layers 24[,48]] [--synthetic 250000,1000000]
                                    [--comm-synthetic 250000] [--keep DIR] [--runs N]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pycache import compile_project

ROOT = Path(__file__).resolve().parents[1]

_RECORD = r'''
import sys, torch
from chakra_collect import record_steps
torch.manual_seed(0)
torch.set_num_threads(2)
layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
model = torch.nn.TransformerEncoder(layer, num_layers=int(sys.argv[2]), enable_nested_tensor=False)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
x = torch.randn(2, 32, 512)
def step():
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()
record_steps(step, sys.argv[1], steps=1, warmup=1, rank=0)
'''

_CONVERT = r'''
import resource, sys, tempfile, time, warnings
warnings.simplefilter("ignore")
from chakra_pytorch import open_pytorch
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t, c = time.perf_counter(), time.process_time()
ts = open_pytorch(sys.argv[1:])
with tempfile.TemporaryDirectory() as d:
    paths = ts.write(d)
    secs, cpu = time.perf_counter() - t, time.process_time() - c
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    from chakra_core import EtReader
    n = sum(sum(1 for _ in EtReader(p).raw()) for p in paths)
print(f"{secs:.3f} {cpu:.3f} {peak:.1f} {base:.1f} {n}")
'''


def record_real(out: Path, layers: int) -> Path:
    """Record the real trace into ``out`` (needs torch); returns the folder."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "adapters" / "chakra-collect"))
    subprocess.run([sys.executable, "-c", _RECORD, str(out), str(layers)], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def _attrs(rf: int, schema: str) -> list[dict]:
    return [{"name": "rf_id", "type": "uint64", "value": rf},
            {"name": "fw_parent", "type": "uint64", "value": 0},
            {"name": "seq_id", "type": "int64", "value": -1},
            {"name": "scope", "type": "uint64", "value": 0},
            {"name": "tid", "type": "uint64", "value": 1},
            {"name": "fw_tid", "type": "uint64", "value": 0},
            {"name": "op_schema", "type": "string", "value": schema}]


def _io(tensor: list | None) -> dict:
    if tensor is None:
        return {"values": [], "shapes": [], "types": [], "strides": []}
    return {"values": [tensor], "shapes": [[32, 32]], "types": ["Tensor(float)"], "strides": [[32, 1]]}


def synthesize(out: Path, n_nodes: int, comm_every: int = 0) -> tuple[Path, Path]:
    """Write a host ET of ``n_nodes`` nodes and its Kineto trace, in PyTorch's layout.

    Blocks of 4 nodes: a top-level ``aten::linear`` holding ``aten::t`` -> ``aten::transpose``
    and ``aten::addmm``; nodes in post-order and in the line layout PyTorch writes; every node
    has a Kineto event (Kineto's layout) with its record-function id and nested timestamps.
    With ``comm_every`` = k, every k-th block is followed by an asynchronous gloo all-reduce
    (``c10d::allreduce_`` with its ``gloo:all_reduce`` on a worker thread, running for 5
    blocks), as DDP issues its buckets: each needs the lane node that waits for it.
    """
    import orjson

    out.mkdir(parents=True, exist_ok=True)
    et, kin = out / "synthetic_et.0.json", out / "synthetic_kineto.0.json"
    blocks = max(1, (n_nodes - 3) // 4)
    pid = 4242
    names = ("aten::linear", "aten::t", "aten::transpose", "aten::addmm")

    def event(name: str, cat: str, ts: float, dur: float, rf: int) -> bytes:
        # Kineto's layout: one event per block of lines
        return (f'  {{\n    "ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {pid},\n'
                f'    "ts": {ts:.3f}, "dur": {dur:.3f},\n    "args": {{\n'
                f'      "External id": {rf}, "Record function id": {rf}\n    }}\n  }}').encode()

    def node(d: dict) -> bytes:
        # the ExecutionTraceObserver's layout: one node per block of lines
        return (f'      {{\n        "id": {d["id"]}, "name": "{d["name"]}", "ctrl_deps": {d["ctrl_deps"]},\n'
                f'        "inputs": {orjson.dumps(d["inputs"]).decode()},\n'
                f'        "outputs": {orjson.dumps(d["outputs"]).decode()},\n'
                f'        "attrs": {orjson.dumps(d["attrs"]).decode()}\n      }}').encode()

    with open(et, "wb") as f, open(kin, "wb") as k:
        head = {"schema": "1.1.1-chakra.0.0.4", "pid": pid, "time": "synthetic", "start_ts": 0}
        f.write(orjson.dumps(head)[:-1] + b',\n  "nodes": [\n')
        k.write(b'{\n  "schemaVersion": 1, "deviceProperties": [], "traceEvents": [\n')
        k.write(event("ProfilerStep#1", "user_annotation", 0.0, blocks * 10.0 + 5, 1))
        nid, rf = 4, 2
        for b in range(blocks):
            t0 = 1.0 + b * 10.0
            ids = (nid, nid + 1, nid + 2, nid + 3)  # linear, t, transpose, addmm
            spans = ((t0, 8.0), (t0 + 0.5, 3.0), (t0 + 1.0, 1.5), (t0 + 4.0, 4.0))
            parents = (3, ids[0], ids[1], ids[0])
            for j in (2, 1, 3, 0):  # post-order: transpose, t, addmm, linear
                d = {"id": ids[j], "name": names[j], "ctrl_deps": parents[j],
                     "inputs": _io([5 + j, 6, 0, 1024, 4, "cpu"]), "outputs": _io([9 + j, 10, 0, 1024, 4, "cpu"]),
                     "attrs": _attrs(rf + j, names[j] + "(Tensor self) -> Tensor")}
                f.write((b"" if (b == 0 and j == 2) else b",\n") + node(d))
            for j in range(4):
                k.write(b",\n" + event(names[j], "cpu_op", spans[j][0], spans[j][1], rf + j))
            nid += 4
            rf += 4
            if comm_every and b % comm_every == comm_every - 1:
                c = {"id": nid, "name": "c10d::allreduce_", "ctrl_deps": 3,
                     "inputs": {"values": [[[5, 6, 0, 1024, 4, "cpu"]], "<Object>", "<Object>", "<None>",
                                           True, -1], "shapes": [], "types": [], "strides": []},
                     "outputs": _io(None), "attrs": _attrs(rf, "c10d::allreduce_(Tensor[] tensors) -> Tensor[]")}
                g = {"id": nid + 1, "name": "gloo:all_reduce", "ctrl_deps": nid,
                     "inputs": _io([5, 6, 0, 1024, 4, "cpu"]), "outputs": _io(None), "attrs": _attrs(rf + 1, "")}
                f.write(b",\n" + node(g) + b",\n" + node(c))
                k.write(b",\n" + event("c10d::allreduce_", "cpu_op", t0 + 8.5, 1.0, rf))
                k.write(b",\n" + event("gloo:all_reduce", "user_annotation", t0 + 9.0, 50.0, rf + 1)
                        .replace(f'"tid": {pid}'.encode(), f'"tid": {pid + 1}'.encode()))
                nid += 2
                rf += 2
        for nid_, name, parent, rf_ in ((3, "ProfilerStep#1", 2, 1),
                                        (2, "[pytorch|profiler|execution_trace|thread]", 1, 0),
                                        (1, "[pytorch|profiler|execution_trace|process]", 1, 0)):
            d = {"id": nid_, "name": name, "ctrl_deps": parent, "inputs": _io(None), "outputs": _io(None),
                 "attrs": _attrs(rf_, "")}
            f.write(b",\n" + node(d))
        f.write(b'\n  ],\n  "finish_ts": 1\n}\n')
        k.write(b'\n], "traceName": "synthetic"}\n')
    return et, kin


def convert(paths: list[Path], runs: int = 1) -> dict:
    """Convert in a fresh process, ``runs`` times: wall and CPU seconds, peak RSS MB, RSS after
    imports MB (each the smallest of the runs: the peak moves by up to a megabyte from run to
    run with the allocator's layout), nodes written."""
    env = dict(os.environ)
    best: dict = {}
    for _ in range(max(runs, 1)):
        r = subprocess.run([sys.executable, "-c", _CONVERT, *map(str, paths)], check=True, env=env,
                           capture_output=True, text=True)
        secs, cpu, peak, base, n = r.stdout.split()
        one = {"seconds": float(secs), "cpu_seconds": float(cpu), "peak_mb": float(peak), "import_mb": float(base),
               "nodes_out": int(n)}
        best = {k: min(v, best.get(k, v)) for k, v in one.items()}
    return best


def _count_host_nodes(path: Path) -> int:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        return sum(line.count(b'"id":') for line in f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="24", help="encoder layers of the real traces (comma-separated)")
    ap.add_argument("--synthetic", default="250000,1000000", help="synthetic sizes (host-ET nodes)")
    ap.add_argument("--comm-synthetic", default="250000",
                    help="synthetic sizes with an async gloo all-reduce after every 10th operator")
    ap.add_argument("--keep", help="keep the traces in this folder (default: a temporary one)")
    ap.add_argument("--runs", type=int, default=1, help="conversions of each trace; the smallest figures are shown")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    compile_project()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_pytorch_"))
    rows = []
    # find torch without importing it: an import would raise this process's peak RSS, which the
    # conversion subprocesses inherit as their starting high-water mark
    if importlib.util.find_spec("torch") is not None:
        for layers in [int(x) for x in args.layers.split(",") if x]:
            real = work / ("real" if layers == 24 else f"real{layers}")
            if not (real / "pytorch_et.0.json.gz").exists():
                t = time.perf_counter()
                record_real(real, layers)
                print(f"recorded the real trace in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            n = _count_host_nodes(real / "pytorch_et.0.json.gz")
            rows.append({"trace": f"real: {layers}-layer encoder, 1 step", "host_nodes": n,
                         **convert([real], args.runs)})
    else:
        print("torch is not installed: skipping the real trace", file=sys.stderr)
    sizes = [(int(s), 0) for s in args.synthetic.split(",") if s]
    sizes += [(int(s), 10) for s in args.comm_synthetic.split(",") if s]
    for size, every in sizes:
        folder = work / f"synthetic_{size}_{every}"
        et, kin = synthesize(folder, size, every)
        label = "synthetic" + (f" + all-reduce/{every} ops" if every else "")
        rows.append({"trace": label, "host_nodes": _count_host_nodes(et), **convert([et, kin], args.runs)})
        if not args.keep:
            et.unlink()
            kin.unlink()
    for r in rows:
        r["bytes_per_node"] = round((r["peak_mb"] - r["import_mb"]) * 2**20 / r["host_nodes"])
    growth = _growth(rows)
    if args.json:
        print(json.dumps({"rows": rows, "growth": growth}, indent=2))
        return
    print(f"{'trace':34} {'host nodes':>10} {'out nodes':>9} {'wall s':>7} {'CPU s':>7} {'peak MB':>8} "
          f"{'imports MB':>10} {'B/node':>7}")
    for r in rows:
        print(f"{r['trace']:34} {r['host_nodes']:>10} {r['nodes_out']:>9} {r['seconds']:>7.2f} "
              f"{r['cpu_seconds']:>7.2f} {r['peak_mb']:>8.1f} {r['import_mb']:>10.1f} {r['bytes_per_node']:>7}")
    for g in growth:
        print(f"growth {g['from']} -> {g['to']} host nodes ({g['trace']}): {g['bytes_per_node']} B of peak RSS "
              f"and {g['cpu_us_per_node']} us of CPU per host node")


def _growth(rows: list[dict]) -> list[dict]:
    """Between consecutive sizes of one kind of trace: peak RSS bytes and CPU microseconds per
    added host node (the per-node cost, without the fixed costs)."""
    out = []
    for a, b in zip(rows, rows[1:]):
        kind = a["trace"].split(":")[0]
        if kind != b["trace"].split(":")[0] or b["host_nodes"] <= a["host_nodes"]:
            continue
        dn = b["host_nodes"] - a["host_nodes"]
        out.append({"trace": kind, "from": a["host_nodes"], "to": b["host_nodes"],
                    "bytes_per_node": round((b["peak_mb"] - a["peak_mb"]) * 2**20 / dn),
                    "cpu_us_per_node": round((b["cpu_seconds"] - a["cpu_seconds"]) * 1e6 / dn, 1)})
    return out


if __name__ == "__main__":
    main()
