"""Entry point of the ``chakra-text`` distribution: registers the ``text`` input format.

Only light code here: the format class is named by its import path and loaded on first use,
and detection reads at most the first 4 KiB of one ``.txt`` file.
"""

from __future__ import annotations

import os

from chakra_core import Register, hookimpl

from .modes import MODES


@hookimpl
def chakra_register_formats(register: Register) -> None:
    """Register the ``text`` input format (ASTRA-sim 1.0 text workloads)."""
    register("text", "chakra_text.format:TextFormat",
             description="ASTRA-sim 1.0 text workload (DATA, MODEL, HYBRID_*, TRANSFORMER, MICRO) to per-rank ETs",
             install_hint="pip install chakra-text")


@hookimpl
def chakra_detect_format(paths: list[str]) -> str | None:
    """``text`` for one ``.txt`` file whose first token is a known parallelism mode."""
    if len(paths) != 1 or not str(paths[0]).endswith(".txt") or not os.path.isfile(paths[0]):
        return None
    try:
        with open(paths[0], "rb") as f:
            head = f.read(4096).removeprefix(b"\xef\xbb\xbf").decode("latin-1")  # UTF-8 BOM
    except OSError:
        return None
    for line in head.splitlines():
        tokens = line.split("#", 1)[0].split()
        if tokens:
            return "text" if tokens[0] in MODES else None
    return None
