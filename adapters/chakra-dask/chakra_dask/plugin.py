"""Entry point of the ``chakra-dask`` distribution: registers the ``dask`` executor (Dask itself
is imported only when a sweep runs on it)."""

from __future__ import annotations

from chakra_core import Register, hookimpl


@hookimpl
def chakra_register_executors(register: Register) -> None:
    """Register the ``dask`` executor."""
    register("dask", "chakra_dask.executor:DaskExecutor",
             description="a Dask cluster: an existing scheduler by address, or a local cluster started for the sweep",
             install_hint="pip install chakra-dask")
