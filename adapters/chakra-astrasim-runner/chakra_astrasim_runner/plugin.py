"""Entry point of ``chakra-astrasim-runner``: registers the ``astrasim-run`` simulator backend."""

from __future__ import annotations

from chakra_core import Register, hookimpl


@hookimpl
def chakra_register_backends(register: Register) -> None:
    """Register ``astrasim-run`` (export, then run a user-provided ASTRA-sim binary)."""
    register("astrasim-run", "chakra_astrasim_runner.backend:AstraSimRunner",
             description="export for ASTRA-sim, run the user's binary (CHAKRA_ASTRASIM_BIN), read its results",
             install_hint="pip install chakra-astrasim-runner")
