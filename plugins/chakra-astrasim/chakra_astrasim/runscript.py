"""The exact ASTRA-sim command lines for an exported directory, and its ``run.sh``."""

from __future__ import annotations

import shlex

__all__ = ["BINARIES", "command", "run_sh"]

#: executable names of ASTRA-sim's analytical backends.
BINARIES = {
    "unaware": "AstraSim_Analytical_Congestion_Unaware",
    "aware": "AstraSim_Analytical_Congestion_Aware",
}


def command(binary: str, prefix: str, has_groups: bool) -> list[str]:
    """Arguments to run ``binary`` from inside the exported directory (relative paths, so that
    no path contains the substring "empty", which ASTRA-sim takes for "no comm-group file")."""
    args = [
        binary,
        f"--workload-configuration=workload/{prefix}",
        "--system-configuration=system.json",
        "--network-configuration=network.yml",
        "--remote-memory-configuration=memory.json",
    ]
    if has_groups:
        args.append("--comm-group-configuration=groups.json")
    return args


def run_sh(prefix: str, has_groups: bool, one_dim: bool) -> str:
    """The text of ``run.sh``: ``./run.sh [unaware|aware]``; the binary comes from
    ``$CHAKRA_ASTRASIM_BIN`` or the PATH (congestion-aware only for a 1-D network).  Every
    argument is shell-quoted."""
    binary, *rest = command('"$bin"', prefix, has_groups)
    args = " \\\n  ".join([binary, *map(shlex.quote, rest)])
    aware = (f'aware) bin="${{CHAKRA_ASTRASIM_BIN:-{BINARIES["aware"]}}}" ;;' if one_dim else
             'aware) echo "the congestion-aware binary runs 1-D networks only; this one has more '
             'dimensions" >&2; exit 2 ;;')
    return f"""#!/bin/sh
# Run this ASTRA-sim export (written by chakra-astrasim).
# usage: ./run.sh [unaware|aware]   (default unaware; aware = congestion-aware, 1-D networks only)
# The binary is $CHAKRA_ASTRASIM_BIN when set, else the usual name found on the PATH.
# Output: one line per rank, "sys[R] finished, N cycles, exposed communication M cycles." (1 cycle = 1 ns)
set -eu
cd "$(dirname "$0")"
mode="${{1:-unaware}}"
case "$mode" in
  unaware) bin="${{CHAKRA_ASTRASIM_BIN:-{BINARIES["unaware"]}}}" ;;
  {aware}
  *) echo "usage: $0 [unaware|aware]" >&2; exit 2 ;;
esac
exec {args}
"""
