"""Bytecode for the benches that time fresh processes: the project's modules compiled first.

With ``PYTHONDONTWRITEBYTECODE`` set (the development machine's shell sets it), a module
changed since its ``.pyc`` was written is compiled from source at every start of a child
process, which an installed package never does: about 15 ms for the PyTorch plugin, enough to
hide or fake a change's gain (docs/benchmarks.md, *A PyTorch op's inputs and outputs one line a
list*).
"""

from __future__ import annotations

import compileall
import os
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compile_project(more: Iterable[str | os.PathLike] = ()) -> None:
    """Compile every module of ``chakra_core``, the plugins, the adapters and the folders
    ``more`` to its ``.pyc``, and let this process's children write theirs."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    tops = [ROOT / "chakra_core", *sorted((ROOT / "plugins").iterdir()), *sorted((ROOT / "adapters").iterdir()),
            *map(Path, more)]
    for top in tops:
        if top.is_dir():
            compileall.compile_dir(str(top), quiet=2)
