"""Shared helpers of the recording scripts: device count, HLO text, profile, HloModuleProto dump.

Each script records one real JAX program on the CPU, with
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` so that the host platform has N devices,
and writes into ``tests/data/NAME/``: ``program.hlo.txt`` (``compiled.as_text()``),
``profile.xplane.pb`` and ``profile.trace.json.gz`` (one ``jax.profiler`` trace of ``STEPS``
executions after a warm-up), and, where asked, ``program.hlo.pb`` (XLA's own dump of the
optimized HloModuleProto).
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
REPO = DATA.parents[3]
STEPS = 3


def use_devices(n: int, dump_to: str | None = None) -> None:
    """Give the host platform ``n`` devices (call before importing jax)."""
    flags = [f"--xla_force_host_platform_device_count={n}"]
    if dump_to:
        flags += [f"--xla_dump_to={dump_to}", "--xla_dump_hlo_as_proto"]
    os.environ["XLA_FLAGS"] = " ".join(flags)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def record(name: str, jitted, args: tuple, dump_dir: str | None = None) -> Path:
    """Compile ``jitted`` for ``args``, write its HLO text, profile ``STEPS`` runs, copy the files."""
    import jax

    out = DATA / name
    out.mkdir(parents=True, exist_ok=True)
    compiled = jitted.lower(*args).compile()
    # the source paths in its metadata relative to the repository (no path of this machine)
    (out / "program.hlo.txt").write_text(compiled.as_text().replace(f'"{REPO}/', '"'))
    for _ in range(2):
        jax.block_until_ready(compiled(*args))
    with tempfile.TemporaryDirectory() as tmp:
        jax.profiler.start_trace(tmp)
        for step in range(STEPS):
            with jax.profiler.StepTraceAnnotation("step", step_num=step):
                jax.block_until_ready(compiled(*args))
        jax.profiler.stop_trace()
        shutil.copyfile(_one(f"{tmp}/plugins/profile/*/*.xplane.pb"), out / "profile.xplane.pb")
        shutil.copyfile(_one(f"{tmp}/plugins/profile/*/*.trace.json.gz"), out / "profile.trace.json.gz")
    if dump_dir:
        module = compiled.as_text().split(",", 1)[0].split()[1]
        shutil.copyfile(_one(f"{dump_dir}/*.{module}.*after_optimizations.hlo.pb"), out / "program.hlo.pb")
    print(f"wrote {out}", file=sys.stderr)
    return out


def _one(pattern: str) -> str:
    found = sorted(glob.glob(pattern))
    if not found:
        raise SystemExit(f"nothing matches {pattern}")
    return found[-1]
