"""Whether a compiled loop is worth loading numba for: loading it costs about 0.35 s of CPU and
85 MB once per process, which a small input never pays back: the rule by which callers choose a
kernel's compiled form or the kernel itself (:mod:`chakra_core.base._kernels`)."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable

__all__ = ["compiled_worthwhile", "files_hold"]


def compiled_worthwhile(paths: str | os.PathLike | Iterable[str | os.PathLike], from_bytes: int) -> bool:
    """True when numba is installed and either loaded already in this process or the files
    ``paths`` (one path or several) hold at least ``from_bytes`` bytes together (a path that
    cannot be sized counts 0)."""
    if "numba" not in sys.modules and not files_hold(paths, from_bytes):
        return False
    return importlib.util.find_spec("numba") is not None


def files_hold(paths: str | os.PathLike | Iterable[str | os.PathLike], nbytes: int) -> bool:
    """Whether the files ``paths`` (one path or several) hold at least ``nbytes`` bytes together
    (a path that cannot be sized counts 0; sizing stops once they do)."""
    total = 0
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        if total >= nbytes:
            break
        try:
            total += os.path.getsize(path)
        except OSError:
            continue
    return total >= nbytes
