"""Benchmark of the synthesizers: fidelity on every recorded source, and fit/sample speed and memory.

Fidelity: each source (the PyTorch recordings of chakra-pytorch, the ASTRA-sim text examples,
the JAX recordings of chakra-jax) is fitted with ``structural`` and with the ``markov``
baseline, sampled with several seeds at the source's size, validated, and compared with
``chakra compare`` (simpy, default system); one line per source and synthesizer with the worst
seed's figures.  Speed: fit times, then sampling 1 rank x 100,000 and x 1,000,000 nodes (the
transformer model) and 64 ranks x 10,000 and x 100,000 nodes (ddp_buckets), written to a
temporary directory, each in a fresh process whose peak RSS is printed: memory flat in the node
count shows as equal peaks.

    .venv/bin/python benches/bench_synth.py [--seeds 3] [--skip-fidelity] [--skip-speed]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import chakra_core as chakra

REPO = Path(__file__).resolve().parents[1]
PYTORCH = REPO / "plugins" / "chakra-pytorch" / "tests" / "data"
JAX = REPO / "plugins" / "chakra-jax" / "tests" / "data"
TEXT = REPO / "examples" / "text"

#: name -> (inputs of one set, input format or None, input options)
SOURCES = {
    "pytorch transformer": ([PYTORCH / "transformer"], None, {}),
    "pytorch mlp": ([PYTORCH / "mlp"], None, {}),
    "pytorch ddp": ([PYTORCH / "ddp"], None, {}),
    "pytorch ddp_buckets": ([PYTORCH / "ddp_buckets"], None, {}),
    "pytorch collectives": ([PYTORCH / "collectives"], None, {}),
    "text resnet50 x8": ([TEXT / "resnet50_like.txt"], None, {"npus": 8}),
    "text gpt3 x16": ([TEXT / "gpt3_like.txt"], None, {"npus": 16}),
    "text dlrm x8": ([TEXT / "dlrm_like.txt"], None, {"npus": 8}),
    **{f"jax {d}": ([JAX / d / "program.hlo.txt", JAX / d / "profile.xplane.pb"], "jax", {})
       for d in ("mlp", "mesh8", "scan", "shard_map")},
}


def fidelity(seeds: int, work: Path) -> None:
    """Print the fidelity table."""
    print(f"{'source':<22} {'synthesizer':<11} {'valid':>6} {'step err':>9} {'max KS':>7} {'hist':>7} "
          f"{'crit err':>9} {'fit s':>6}")
    for name, (paths, fmt, opts) in SOURCES.items():
        if not all(p.exists() for p in paths):
            print(f"{name:<22} (not recorded here)")
            continue
        src = work / name.replace(" ", "_")
        chakra.convert([str(p) for p in paths] if len(paths) > 1 else str(paths[0]), f"{src}/",
                       format=fmt, input_options=opts)
        for synth in ("structural", "markov"):
            model = work / f"{src.name}.{synth}.json"
            t0 = time.perf_counter()
            chakra.synth_fit([str(src)], model, synthesizer=synth)
            fit_s = time.perf_counter() - t0
            worst = {"valid": 0, "err": 0.0, "ks": 0.0, "hist": 0.0, "crit": 0.0}
            for seed in range(1, seeds + 1):
                out = work / f"{src.name}.{synth}.{seed}"
                chakra.synth_sample(model, f"{out}/", seed=seed)
                worst["valid"] += chakra.validate(str(out)).ok
                r = chakra.compare(str(src), str(out))
                worst["err"] = max(worst["err"], r["simulated"]["relative_error"] or 0.0)
                worst["ks"] = max(worst["ks"], r["max_ks"] if r["max_ks"] is not None else 1.0)  # None: no kind in both
                worst["hist"] = max(worst["hist"], r["kinds"]["histogram_distance"])
                worst["crit"] = max(worst["crit"], r["graph"]["critical_path_us"]["relative_error"] or 0.0)
            print(f"{name:<22} {synth:<11} {worst['valid']:>3}/{seeds:<2} {worst['err']:>9.2%} {worst['ks']:>7.3f} "
                  f"{worst['hist']:>7.3f} {worst['crit']:>9.2%} {fit_s:>6.2f}", flush=True)


def _sample_child(model: str, out: str, ranks: int, nodes: int) -> None:
    """In a child process: sample, then print seconds, nodes written and peak RSS as JSON."""
    t0 = time.perf_counter()
    res = chakra.synth_sample(model, out, ranks=ranks, seed=1, options={"nodes_per_rank": nodes})
    seconds = time.perf_counter() - t0
    written = sum(1 for _ in chakra.EtReader(res.files[0]).raw())
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "rank0_nodes": written, "peak_rss_mb": rss_mb,
                      "bytes": sum(Path(f).stat().st_size for f in res.files)}))


def speed(work: Path) -> None:
    """Print fit and sample figures (one rank from the transformer, 64 from ddp_buckets)."""
    models = {}
    for name in ("transformer", "ddp_buckets"):
        src = work / f"{name}_speed"
        chakra.convert(str(PYTORCH / name), f"{src}/")
        models[name] = work / f"{name}_speed.json"
        t0 = time.perf_counter()
        chakra.synth_fit([str(src)], models[name])
        print(f"fit structural on pytorch {name}: {time.perf_counter() - t0:.2f} s")
    print(f"{'case':<34} {'seconds':>8} {'rank-0 nodes':>12} {'GB written':>10} {'peak RSS MB':>11}")
    for label, model, ranks, nodes in (("transformer, 1 rank x 100,000", "transformer", 1, 100_000),
                                       ("transformer, 1 rank x 1,000,000", "transformer", 1, 1_000_000),
                                       ("ddp_buckets, 64 ranks x 10,000", "ddp_buckets", 64, 10_000),
                                       ("ddp_buckets, 64 ranks x 100,000", "ddp_buckets", 64, 100_000)):
        out = work / f"s{ranks}x{nodes}"
        proc = subprocess.run([sys.executable, __file__, "--child", str(models[model]), f"{out}/", str(ranks),
                               str(nodes)], capture_output=True, text=True, check=True)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{label:<34} {r['seconds']:>8.1f} {r['rank0_nodes']:>12} {r['bytes'] / 1e9:>10.2f} "
              f"{r['peak_rss_mb']:>11.0f}", flush=True)


def main() -> None:
    """Run the benchmark."""
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _sample_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--skip-fidelity", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args()
    chakra.set_progress_enabled(False)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_fidelity:
            fidelity(args.seeds, Path(tmp))
        if not args.skip_speed:
            speed(Path(tmp))


if __name__ == "__main__":
    main()
