"""Plot the example sweep's step time against link bandwidth, one line per all-reduce algorithm,
for each data-parallel width (one PNG per width, and docs/sweeps.png for 32 replicas).

    chakra sweep examples/sweep/pipeline.yaml -o out/sweep -j 2
    python examples/sweep/plot.py out/sweep [--docs]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import chakra_core as chakra

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    """Write ``OUT/finish_vs_bandwidth_<width>.png`` for every width of the sweep in OUT."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", type=Path, help="the sweep's directory (chakra sweep -o)")
    ap.add_argument("--docs", action="store_true", help="also write docs/sweeps.png (32 replicas)")
    args = ap.parse_args()
    rows = [r for r in json.loads((args.sweep / "results.json").read_text())["rows"] if r["status"] == "ok"]
    for r in rows:
        r["step time (ms)"] = r["simpy.finish_ns"] / 1e6
        r["bandwidth (GB/s)"] = r["system.network[0].bandwidth"]
        r["algorithm"] = r["system.all-reduce-implementation"]
    for width in sorted({r["input.options.npus"] for r in rows}):
        path = args.sweep / f"finish_vs_bandwidth_{width}.png"
        chakra.plot([r for r in rows if r["input.options.npus"] == width], "bandwidth (GB/s)", "step time (ms)",
                    hue="algorithm", path=path, logx=True,
                    title=f"ResNet-50-like, {width} data-parallel replicas on a ring")
        print(path)
    if args.docs:
        chakra.plot([r for r in rows if r["input.options.npus"] == 32], "bandwidth (GB/s)", "step time (ms)",
                    hue="algorithm", path=ROOT / "docs" / "sweeps.png", logx=True,
                    title="ResNet-50-like, 32 data-parallel replicas on a ring")
        print(ROOT / "docs" / "sweeps.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
