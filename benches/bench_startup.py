"""Start-up time of ``chakra --help`` and ``chakra plugins``: wall and CPU seconds per run.

    python benches/bench_startup.py [--runs 5] [--core DIR]

Each run is a fresh interpreter (``python -m chakra_core.cli.main ...``); the figures are the
minimum and the median over the runs.  CPU time (user + system of the child) is the figure to
compare on a busy machine; wall time includes waiting for the CPU.  ``--core DIR`` puts DIR
first on ``PYTHONPATH`` to time another checkout's ``chakra_core`` against the same plugins.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

from pycache import compile_project

COMMANDS = (["--help"], ["plugins"], ["plugins", "--json"])


def _time(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "chakra_core.cli.main", *args], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    """Print one line per command: wall and CPU seconds, minimum and median."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--core", help="a directory holding another chakra_core to time")
    args = p.parse_args()
    compile_project([args.core] if args.core else [])
    env = dict(os.environ)
    if args.core:
        env["PYTHONPATH"] = os.pathsep.join([args.core, env.get("PYTHONPATH", "")])
    for cmd in COMMANDS:
        runs = [_time(cmd, env) for _ in range(args.runs)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(f"chakra {' '.join(cmd):<16} wall min {min(walls):.3f} s median {statistics.median(walls):.3f} s; "
              f"cpu min {min(cpus):.3f} s median {statistics.median(cpus):.3f} s")


if __name__ == "__main__":
    main()
