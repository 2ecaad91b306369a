"""Fit the learned synthesizer on a generated 64-rank set of about 102,000 nodes per rank (two
pipeline stages), in a fresh process, and sample at 10x the nodes of a smaller set
(docs/synth.md, Speed and memory).

Usage: ``python benches/bench_synth_scale.py [OUT]``: generates the set into OUT (default a
temporary folder), then prints the fit's wall and CPU seconds, peak RSS, the rank classes
found, the model's size, and the 10x sampling's mean duration per node against the source's.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import chakra_core as chakra

#: 64 ranks (tp 4 x dp 8 x pp 2), about 102,000 nodes per rank (6.5 M nodes)
BIG = {"layers": 64, "hidden": 1024, "heads": 8, "seq": 512, "micro_batches": 144, "tp": 4, "pp": 2, "dp": 8,
       "vocab": 8000}
SMALL = {**BIG, "layers": 8, "micro_batches": 4, "dp": 2}

_FIT = """
import json, resource, sys, time
import chakra_core as chakra
t0, c0 = time.perf_counter(), time.process_time()
chakra.synth_fit([sys.argv[1]], sys.argv[2], synthesizer="learned")
m = json.load(open(sys.argv[2]))
w = m["workloads"][0]
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "ranks": w["ranks"], "tile": w["tile"], "classes": len(w["classes"]), "roles": w["roles"],
                  "nodes_per_rank": [c["nodes"] for c in w["classes"]],
                  "model_mb": round(__import__("os").path.getsize(sys.argv[2]) / 1e6, 2)}))
"""


def _mean_duration(path: Path) -> tuple[int, float]:
    d = [n.duration_micros for rt in chakra.open_traceset(str(path)) for n in rt.nodes()]
    return len(d), sum(d) / len(d)


def main() -> int:
    """Generate, fit in a fresh process, sample at 10x (module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tmp) / "big"
        if not out.exists():
            t0 = time.perf_counter()
            chakra.generate("transformer", {**BIG, "check": False}, output=str(out) + "/")
            print(f"generated {out} in {time.perf_counter() - t0:.0f} s", flush=True)
        model = Path(tmp) / "big.json"
        r = subprocess.run([sys.executable, "-c", _FIT, str(out), str(model)], capture_output=True, text=True,
                           check=True)
        print("fit:", r.stdout.strip(), flush=True)
        small, small_model, big = Path(tmp) / "small", Path(tmp) / "small.json", Path(tmp) / "x10"
        chakra.generate("transformer", SMALL, output=str(small) + "/")
        chakra.synth_fit([str(small)], small_model, synthesizer="learned")
        nodes, mean = _mean_duration(small)
        per_rank = nodes // len(chakra.open_traceset(str(small)))
        t0 = time.perf_counter()
        chakra.synth_sample(small_model, str(big) + "/", seed=1, options={"nodes_per_rank": 10 * per_rank})
        nodes10, mean10 = _mean_duration(big)
        print(json.dumps({"source_nodes": nodes, "source_mean_us": round(mean, 3), "sample_nodes": nodes10,
                          "sample_mean_us": round(mean10, 3), "relative_change": round(mean10 / mean - 1, 5),
                          "sample_s": round(time.perf_counter() - t0, 1),
                          "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
