"""Fidelity against privacy of the synthesizers (docs/synth.md, Privacy): per source and privacy
level, the simulated step-time error of ``learned`` samples and their distance to the source,
beside the distance between two recordings of the same job.

Usage: ``python benches/bench_synth_privacy.py [RECORDINGS]`` where RECORDINGS is the folder
``benches/record_twice.py`` wrote (``NAME/run1``, ``NAME/run2``, the JAX mesh program as
``jax_mesh8``); without it, only the sources
bundled in the repo are measured and the two-recording column is empty.  Prints one row per
(source, synthesizer, level): worst step error and mean privacy figures over three seeds.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import chakra_core as chakra

REPO = Path(__file__).resolve().parents[1]
PYTORCH = REPO / "plugins" / "chakra-pytorch" / "tests" / "data"
BUNDLED = {
    "gpt3 text x16": ([REPO / "examples" / "text" / "gpt3_like.txt"], None, {"npus": 8}),
    "resnet50 text x4": ([REPO / "examples" / "text" / "resnet50_like.txt"], None, {"npus": 4}),
    "jax mesh8": ([REPO / "plugins" / "chakra-jax" / "tests" / "data" / "mesh8" / "program.hlo.txt",
                   REPO / "plugins" / "chakra-jax" / "tests" / "data" / "mesh8" / "profile.xplane.pb"], "jax", {}),
}
RECORDED = ("ddp", "transformer", "mlp", "ddp_buckets", "collectives")
#: the JAX program recorded twice (``benches/record_twice.py OUT jax_mesh8``): the files given to ``convert``
JAX_FILES = ("program.hlo.txt", "profile.xplane.pb")
#: a generated hybrid-parallel set (tp 2 x pp 2 x dp 2, sends and receives between stages)
HYBRID = {"layers": 8, "hidden": 4096, "heads": 32, "seq": 2048, "micro_batches": 4, "tp": 2, "pp": 2, "dp": 2}
LEVELS = (0.0, 0.3, 0.5, 0.6, 1.0)
SEEDS = (1, 2, 3)


def _convert(paths, fmt, opts, out: Path) -> Path:
    chakra.convert([str(p) for p in paths], str(out) + "/", format=fmt, input_options=opts)
    return out


def _row(name: str, src: Path, second: Path | None, work: Path, synthesizer: str, level: float | None) -> str:
    model = work / f"{name}.{synthesizer}.json".replace(" ", "_")
    t0 = time.perf_counter()
    chakra.synth_fit([str(src)], model, synthesizer=synthesizer)
    fit_s = time.perf_counter() - t0
    errs, dist, exact, run = [], [], [], []
    for seed in SEEDS:
        out = work / f"{name}.{synthesizer}.{level}.{seed}".replace(" ", "_")
        opts = {"level": level} if level is not None else {}
        chakra.synth_sample(model, str(out) + "/", seed=seed, options=opts)
        r = chakra.compare(str(src), str(out))
        errs.append(r["simulated"]["relative_error"])
        dist.append(r["privacy"]["distance"])
        exact.append(r["privacy"]["exact_durations"])
        run.append(r["privacy"]["longest_duration_run"])
    base = chakra.compare(str(src), str(second), simulate=False)["privacy"]["distance"] if second else None
    lv = "-" if level is None else f"{level:.1f}"
    two = "-" if base is None else f"{base:.3f}"
    return (f"{name:<18} {synthesizer:<10} {lv:>5} {max(errs):>8.2%} {sum(dist) / len(dist):>8.3f} {two:>8} "
            f"{sum(exact) / len(exact):>8.2%} {max(run):>6} {fit_s:>6.2f}")


def main() -> int:
    """Print the table (module docstring)."""
    recordings = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    print(f"{'source':<18} {'synth':<10} {'level':>5} {'step err':>8} {'distance':>8} {'2 recs':>8} "
          f"{'exact d':>8} {'run':>6} {'fit s':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sources: list[tuple[str, Path, Path | None]] = []
        for name in RECORDED:
            if recordings and (recordings / name / "run2").is_dir():
                a = _convert([recordings / name / "run1"], None, {}, work / f"{name}.run1")
                b = _convert([recordings / name / "run2"], None, {}, work / f"{name}.run2")
                sources.append((f"pytorch {name}", a, b))
            else:
                sources.append((f"pytorch {name}", _convert([PYTORCH / name], None, {}, work / name), None))
        jax_runs = recordings / "jax_mesh8" if recordings else None
        for name, (paths, fmt, opts) in BUNDLED.items():
            if name == "jax mesh8" and jax_runs and (jax_runs / "run2").is_dir():
                a, b = (_convert([jax_runs / run / f for f in JAX_FILES], "jax", {}, work / f"jax.{run}")
                        for run in ("run1", "run2"))
                sources.append((name, a, b))
                continue
            sources.append((name, _convert(paths, fmt, opts, work / name.replace(" ", "_")), None))
        chakra.generate("transformer", HYBRID, output=str(work / "hybrid") + "/")
        sources.append(("generated hybrid", work / "hybrid", None))
        for name, src, second in sources:
            print(_row(name, src, second, work, "structural", None), flush=True)
            for level in LEVELS:
                print(_row(name, src, second, work, "learned", level), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
