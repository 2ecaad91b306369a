"""The simpy backend side by side with ASTRA-sim's analytical binary, when one is found.

Cases: every text workload of examples/text/ on examples/system/system.yaml (8 NPUs, replay)
and the GPT-3-like one on examples/system/system_2d.yaml (1,024 NPUs, roofline). Each set is
written as .et files first. For each case and congestion mode it prints the simpy backend's
wall and CPU seconds and simulated events per second, and, when an ASTRA-sim binary of that
mode is found (``CHAKRA_ASTRASIM_BIN``, which names one binary, or the usual names on the PATH:
put both there to time both modes), the binary's wall time
(``astrasim-run``: export + run + parse) and how many ranks' cycles differ, with the largest
difference. Without a binary it says so and times simpy alone.

    .venv/bin/python benches/bench_side_by_side.py [--skip-1024] [--aware]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from chakra_core import load_traces, open_traceset

ROOT = Path(__file__).resolve().parents[1]
CASES = [("resnet50_like.txt", {"npus": 8}, "system.yaml"), ("dlrm_like.txt", {"npus": 8}, "system.yaml"),
         ("gpt3_like.txt", {"npus": 8, "mp_group": 8}, "system.yaml"),
         ("gpt3_like.txt", {"npus": 1024, "mp_group": 8}, "system_2d.yaml")]


def _binary(mode: str) -> str | None:
    from chakra_astrasim_runner import binary_mode, find_binary

    try:
        found = find_binary(None, mode)
    except Exception:  # a CHAKRA_ASTRASIM_BIN naming no file: reported as not found
        return None
    if found is None or binary_mode(found) not in (None, mode):
        return None
    return found


def _run(backend_name: str, traces, options: dict):
    if backend_name == "simpy":
        from chakra_simpy import SimpyBackend as cls
    else:
        from chakra_astrasim_runner import AstraSimRunner as cls
    backend = cls()
    backend.name = backend_name
    t0, c0 = time.perf_counter(), time.process_time()
    res = backend.run(traces, backend.check_options(options), None)
    return res, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    """Run every case in each asked congestion mode."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-1024", action="store_true", help="leave out the 1,024-NPU case")
    ap.add_argument("--aware", action="store_true", help="also the congestion-aware mode (1-D networks)")
    args = ap.parse_args()
    modes = ["unaware"] + (["aware"] if args.aware else [])
    binaries = {m: _binary(m) for m in modes}
    for m, b in binaries.items():
        print(f"congestion-{m} ASTRA-sim binary: {b or 'none found (CHAKRA_ASTRASIM_BIN or PATH): simpy only'}",
              flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, opts, system) in enumerate(CASES):
            if args.skip_1024 and opts["npus"] > 8:
                continue
            load_traces(str(ROOT / "examples" / "text" / name), "text", opts).write(f"{tmp}/{k}/trace")
            traces = open_traceset(f"{tmp}/{k}")
            sysf = str(ROOT / "examples" / "system" / system)
            for mode in modes:
                if mode == "aware" and system != "system.yaml":
                    continue
                res, wall, cpu = _run("simpy", traces, {"system": sysf, "congestion": mode})
                s = res.summary
                line = (f"{name} x {opts['npus']} on {system}, {mode}: simpy wall {wall:.2f} s (CPU {cpu:.2f} s), "
                        f"{s['events']} events, {s['events_per_s']} events/s, classes {s['symmetry']['classes']}")
                binary = binaries[mode]
                if binary:
                    astra, awall, _ = _run("astrasim-run", traces, {"system": sysf, "congestion": mode,
                                                                    "binary": binary})
                    diff = [abs(a["finish_ns"] - b["finish_ns"]) for a, b in zip(res.ranks, astra.ranks)]
                    line += (f"; ASTRA-sim wall {awall:.2f} s ({awall / wall:.1f}x simpy), ranks differing "
                             f"{sum(1 for d in diff if d)}/{len(diff)}, largest difference {max(diff, default=0)} ns")
                print(line, flush=True)


if __name__ == "__main__":
    main()
