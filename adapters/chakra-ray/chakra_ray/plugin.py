"""Entry point of the ``chakra-ray`` distribution: registers the ``ray`` executor (Ray itself is
imported only when a sweep runs on it)."""

from __future__ import annotations

from chakra_core import Register, hookimpl


@hookimpl
def chakra_register_executors(register: Register) -> None:
    """Register the ``ray`` executor."""
    register("ray", "chakra_ray.executor:RayExecutor",
             description="a Ray cluster: an existing one by address, or a local one started for the sweep",
             install_hint="pip install chakra-ray")
