"""A corpus of 50 generated sets (10 depths x 5 hidden sizes, 40 layers left out): fit the learned
synthesizer on it and sample 40 layers, against the generated 40-layer set (docs/synth.md, Corpus).

Usage: ``python benches/bench_synth_corpus.py``; prints the fit's seconds and peak memory and,
per seed and hidden size, the sample's simulated step-time error.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import chakra_core as chakra

BASE = {"heads": 8, "seq": 512, "micro_batches": 2, "tp": 2, "dp": 2, "vocab": 8000}
DEPTHS = (8, 12, 16, 20, 24, 28, 32, 36, 44, 48)
HIDDEN = (512, 1024, 2048, 3072, 4096)
LEFT_OUT = 40


def main() -> int:
    """Generate, fit, sample and compare (module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        listing = work / "corpus.list"
        lines = []
        t0 = time.perf_counter()
        for layers in DEPTHS:
            for hidden in HIDDEN:
                out = work / f"l{layers}h{hidden}"
                chakra.generate("transformer", {**BASE, "layers": layers, "hidden": hidden}, output=str(out) + "/")
                lines.append(f"{out}\n")
        listing.write_text("".join(lines))
        print(f"generated {len(lines)} sets in {time.perf_counter() - t0:.1f} s", flush=True)
        t0, c0 = time.perf_counter(), time.process_time()
        chakra.synth_fit([f"@{listing}"], work / "model.json", synthesizer="learned")
        print(f"fit: {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU, peak RSS "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, model "
              f"{(work / 'model.json').stat().st_size / 1e6:.2f} MB", flush=True)
        print(f"{'hidden':>7} {'seed':>5} {'real ns':>12} {'sample ns':>12} {'error':>8}")
        for hidden in (1024, 2048, 4096):
            real = work / f"real{hidden}"
            chakra.generate("transformer", {**BASE, "layers": LEFT_OUT, "hidden": hidden}, output=str(real) + "/")
            for seed in (1, 2, 3):
                out = work / f"s{hidden}-{seed}"
                chakra.synth_sample(work / "model.json", str(out) + "/", seed=seed,
                                    options={"target": {"layers": LEFT_OUT, "hidden": hidden}})
                r = chakra.compare(str(real), str(out))["simulated"]
                print(f"{hidden:>7} {seed:>5} {r['a_ns']:>12} {r['b_ns']:>12} {r['relative_error']:>8.2%}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
