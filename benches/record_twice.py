"""Record PyTorch workloads twice with the scripts of plugins/chakra-pytorch/recording/, to
measure the distance between two recordings of the same job (docs/synth.md, Privacy).

Usage: ``python benches/record_twice.py OUT [NAME ...]`` (default names: ddp transformer mlp
ddp_buckets collectives); writes ``OUT/NAME/run1`` and ``OUT/NAME/run2``.  Needs torch (CPU).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

RECORDING = Path(__file__).resolve().parents[1] / "plugins" / "chakra-pytorch" / "recording"
NAMES = ("ddp", "transformer", "mlp", "ddp_buckets", "collectives")


def record(name: str, out: Path) -> None:
    """Run ``record_<name>.py`` twice into ``out/run1`` and ``out/run2``."""
    for run in ("run1", "run2"):
        target = out / run
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(RECORDING / f"record_{name}.py"), str(target)], check=True,
                       cwd=RECORDING, timeout=600)


def main() -> int:
    """Record every name given (or :data:`NAMES`) twice under the first argument."""
    out = Path(sys.argv[1])
    for name in sys.argv[2:] or NAMES:
        record(name, out / name)
        print(f"{name}: {out / name}/run1, run2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
