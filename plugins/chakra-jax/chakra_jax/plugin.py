"""Entry point of the ``chakra-jax`` distribution: registers the ``jax`` input format.

Only light code here: the format is named by its import path and loaded on first use; detection
looks at names and the first bytes of one file.
"""

from __future__ import annotations

import os
import zlib

from chakra_core import Register, expand_paths, hookimpl, open_binary

from .suffixes import PROFILE_SUFFIXES


@hookimpl
def chakra_register_formats(register: Register) -> None:
    """Register the ``jax`` input format (compiled XLA programs and JAX profiles)."""
    register("jax", "chakra_jax.format:JaxFormat",
             description="compiled XLA program (HLO text / .hlo.pb) + optional JAX profile to per-device ETs",
             install_hint="pip install chakra-jax")


def _is_hlo_text(path: str) -> bool:
    """Whether ``path`` (plain or gzip-compressed) starts, past ``//`` comments, with ``HloModule``."""
    try:
        with open_binary(path) as f:
            head = f.read(4096)
    except (OSError, EOFError, zlib.error):
        return False
    for line in head.splitlines():
        text = line.strip()
        if text and not text.startswith(b"//"):
            return text.startswith(b"HloModule ")
    return False


@hookimpl
def chakra_detect_format(paths: list[str]) -> str | None:
    """``jax`` for one HLO program (text starting with ``HloModule``, or ``*.hlo.pb``) plus at
    most one profile file (given as files, or as the folder holding them)."""
    names = expand_paths(paths)
    programs = [p for p in names if not p.endswith(PROFILE_SUFFIXES)]
    if len(programs) != 1 or len(names) - len(programs) > 2 or not os.path.isfile(programs[0]):
        return None
    program = programs[0]
    if program.endswith(".hlo.pb"):
        return "jax"
    return "jax" if _is_hlo_text(program) else None
