"""The worked what-if example of docs/transforms.md: one generated LLM step, then more data
parallelism and a straggler, each simulated with the simpy backend on a two-level network.

    .venv/bin/python examples/whatif/whatif.py [--out out/whatif]

Prints one line per case: ranks, simulated step time (ms), samples per second
(``dp * micro_batches * micro_batch / step``), the slowest rank's exposed communication (ms).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

import chakra_core as chakra

MODEL = {"layers": 16, "hidden": 4096, "heads": 32, "seq": 2048, "vocab": 51200, "micro_batches": 8,
         "tp": 4, "pp": 2, "dp": 2, "device": "h100"}


def system(ranks: int, directory: Path) -> str:
    """4 GPUs per node on a 300 GB/s switch, nodes on a 50 GB/s switch (GB = 2^30 B)."""
    path = directory / f"system_{ranks}.yaml"
    path.write_text(yaml.safe_dump({"network": [
        {"topology": "Switch", "npus_count": 4, "bandwidth": 300, "latency": 500},
        {"topology": "Switch", "npus_count": ranks // 4, "bandwidth": 50, "latency": 2000}]}))
    return str(path)


def main() -> None:
    """Run every case and print its line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/whatif")
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    base = chakra.generate("transformer", MODEL, output=f"{out}/base/")
    cases = [("generated: tp 4 x pp 2 x dp 2", base)]
    for dp in (4, 8, 16):
        cases.append((f"resize_dp dp={dp}", chakra.transform(base, "resize_dp", {"dp": dp}, output=f"{out}/dp{dp}/")))
    cases.append(("straggler rank 0 x1.5", chakra.transform(base, "straggler", {"ranks": [0], "factor": 1.5})))
    cases.append(("straggler rank 0 x1.5, then resize_dp dp=8",
                  chakra.transform(base, ["straggler", "resize_dp"], {"ranks": [0], "factor": 1.5, "dp": 8})))
    cases.append(("retime to a100", chakra.transform(base, "retime", {"device": "a100"})))
    for label, traces in cases:
        result = chakra.simulate(traces, system=system(len(traces), out))
        exposed = max(r["exposed_comm_ns"] for r in result.ranks)
        step_s = result.summary["finish_ns"] / 1e9
        dp = len(traces) // (MODEL["tp"] * MODEL["pp"])
        print(f"{label:45s} ranks {len(traces):3d}  step {step_s * 1e3:8.1f} ms  "
              f"{dp * MODEL['micro_batches'] / step_s:6.1f} samples/s  max exposed comm {exposed / 1e6:6.1f} ms")


if __name__ == "__main__":
    main()
