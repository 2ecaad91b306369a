"""chakra-astrasim-runner: run an exported ASTRA-sim directory and read its results.

The ASTRA-sim binary is the user's (this project does not build it): give its path with the
``binary`` option or the ``CHAKRA_ASTRASIM_BIN`` environment variable, or put
``AstraSim_Analytical_Congestion_Unaware`` / ``..._Aware`` on the PATH.

Public API: :func:`parse_output` (ASTRA-sim's stdout -> per-rank results in ns),
:func:`run_directory` (run an export made by chakra-astrasim), :func:`find_binary`,
:func:`binary_mode` (which analytical backend a binary is),
:class:`AstraSimRunner` (backend ``astrasim-run``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .backend import AstraSimRunner
    from .parse import parse_output
    from .runner import binary_mode, find_binary, run_directory

__all__ = ["AstraSimRunner", "parse_output", "run_directory", "find_binary", "binary_mode"]

_WHERE = {"AstraSimRunner": "backend", "parse_output": "parse", "run_directory": "runner", "find_binary": "runner",
          "binary_mode": "runner"}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
