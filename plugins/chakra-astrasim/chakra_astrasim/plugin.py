"""Entry point of the ``chakra-astrasim`` distribution: registers the ``astrasim`` exporter.

Only light code here: the backend is named by its import path and loaded on first use.
"""

from __future__ import annotations

from chakra_core import Register, hookimpl


@hookimpl
def chakra_register_backends(register: Register) -> None:
    """Register the ``astrasim`` exporter backend."""
    register("astrasim", "chakra_astrasim.backend:AstraSimExporter",
             description="export a ready-to-run ASTRA-sim 2.x directory (workload, configs, run.sh)",
             install_hint="pip install chakra-astrasim")
