"""Record workloads twice, to measure the distance between two recordings of the same job
(docs/synth.md, Privacy): the PyTorch scripts of plugins/chakra-pytorch/recording/ and the JAX
scripts of plugins/chakra-jax/recording/ (``jax_NAME``: ``record_NAME.py`` on the CPU with
``--xla_force_host_platform_device_count`` devices, as the script sets).

Usage: ``python benches/record_twice.py OUT [NAME ...]`` (default names: ddp transformer mlp
ddp_buckets collectives jax_mesh8); writes ``OUT/NAME/run1`` and ``OUT/NAME/run2`` (a JAX run:
``program.hlo.txt``, ``profile.xplane.pb``).  Needs torch (CPU) and jax (CPU).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
RECORDING = PLUGINS / "chakra-pytorch" / "recording"
JAX_RECORDING = PLUGINS / "chakra-jax" / "recording"
NAMES = ("ddp", "transformer", "mlp", "ddp_buckets", "collectives", "jax_mesh8")
#: runs a JAX recording script with its output folder moved from tests/data to argv[2]
JAX_RUNNER = ("import runpy, sys; from pathlib import Path; sys.path.insert(0, '.'); import _common; "
              "_common.DATA = Path(sys.argv[2]); "
              "runpy.run_path(sys.argv[1], run_name='__main__')")


def _command(name: str, target: Path) -> tuple[list[str], Path]:
    """The command recording ``name`` into ``target`` and the folder to run it in."""
    if name.startswith("jax_"):
        script = f"record_{name[4:]}.py"
        return [sys.executable, "-c", JAX_RUNNER, script, str(target)], JAX_RECORDING
    return [sys.executable, str(RECORDING / f"record_{name}.py"), str(target)], RECORDING


def record(name: str, out: Path) -> None:
    """Record ``name`` twice into ``out/run1`` and ``out/run2``."""
    for run in ("run1", "run2"):
        target = out / run
        target.mkdir(parents=True, exist_ok=True)
        cmd, cwd = _command(name, target)
        subprocess.run(cmd, check=True, cwd=cwd, timeout=600)
        if name.startswith("jax_"):
            for f in (target / name[4:]).iterdir():
                f.replace(target / f.name)
            (target / name[4:]).rmdir()


def main() -> int:
    """Record every name given (or :data:`NAMES`) twice under the first argument."""
    out = Path(sys.argv[1])
    for name in sys.argv[2:] or NAMES:
        record(name, out / name)
        print(f"{name}: {out / name}/run1, run2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
