"""The simpy backend against ASTRA-sim's binary over a sweep of 8-NPU systems and the recorded sets.

Systems: examples/system/system.yaml with each topology (Ring, Switch, FullyConnected), active
chunks per dimension 1, 2 and 4, every collective implemented as ring, direct or
halvingDoubling, and 4 or 16 dataset splits; sets: the three text workloads on 8 NPUs. Then the
recorded PyTorch sets of plugins/chakra-pytorch/tests/data on their default system. For each case
and congestion mode it prints the cases whose per-rank cycles differ (and by how much) or that
fail, and a count of the equal ones. Needs the binaries (``--unaware``/``--aware`` paths).

    .venv/bin/python benches/side_by_side_sweep.py --aware PATH [--unaware PATH] [--recorded-only]
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
from pathlib import Path

import yaml
from bench_side_by_side import _run

from chakra_core import ChakraError, load_traces

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ("ddp", "collectives", "ddp_buckets", "ddp_steps", "collectives_steps", "mlp", "transformer")


def _systems(tmp: str):
    base = yaml.safe_load((ROOT / "examples" / "system" / "system.yaml").read_text())
    for topo, chunks, impl, splits in itertools.product(["Ring", "Switch", "FullyConnected"], [1, 2, 4],
                                                        ["ring", "direct", "halvingDoubling"], [4, 16]):
        sysd = dict(base, network=[{"topology": topo, "npus_count": 8, "bandwidth": 50, "latency": 500}],
                    **{"active-chunks-per-dimension": chunks, "preferred-dataset-splits": splits},
                    **{f"{k}-implementation": impl for k in ("all-reduce", "all-gather", "reduce-scatter",
                                                              "all-to-all")})
        path = f"{tmp}/{topo}_{chunks}_{impl}_{splits}.yaml"
        Path(path).write_text(yaml.safe_dump(sysd))
        yield f"{topo} chunks={chunks} {impl} splits={splits}", {"system": path}


def _compare(label: str, traces, options: dict, mode: str, binary: str) -> bool:
    try:
        ours, _, _ = _run("simpy", traces, {**options, "congestion": mode})
        theirs, _, _ = _run("astrasim-run", traces, {**options, "congestion": mode, "binary": binary})
    except ChakraError as e:
        print(f"{label}, {mode}: not run ({str(e)[-160:]})", flush=True)
        return False
    diff = [a["finish_ns"] - b["finish_ns"] for a, b in zip(ours.ranks, theirs.ranks)]
    if any(diff):
        print(f"{label}, {mode}: simpy - ASTRA-sim per rank {diff} ns", flush=True)
    return not any(diff)


def main() -> None:
    """Run the sweep in each mode whose binary is given."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--unaware", help="the congestion-unaware binary")
    ap.add_argument("--aware", help="the congestion-aware binary")
    ap.add_argument("--recorded-only", action="store_true")
    args = ap.parse_args()
    binaries = {m: b for m, b in (("unaware", args.unaware), ("aware", args.aware)) if b}
    equal = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = [] if args.recorded_only else [
            (f"{name} on {label}", load_traces(str(ROOT / "examples" / "text" / name), "text",
                                               {"npus": 8, **({"mp_group": 8} if "gpt3" in name else {})}), opts)
            for label, opts in _systems(tmp)
            for name in ("resnet50_like.txt", "dlrm_like.txt", "gpt3_like.txt")]
        data = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"
        cases += [(f"recorded {n}", load_traces(str(data / n), "pytorch"), {}) for n in RECORDED]
        for (label, traces, opts), (mode, binary) in itertools.product(cases, binaries.items()):
            total += 1
            equal += _compare(label, traces, opts, mode, binary)
    print(f"{equal} of {total} cases give equal cycles on every rank")


if __name__ == "__main__":
    main()
