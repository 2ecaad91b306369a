"""chakra-dask: run the points of a chakra sweep on a Dask cluster (``chakra sweep --executor dask``)."""

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .executor import DaskExecutor

__all__ = ["DaskExecutor"]

__getattr__, __dir__ = lazy_exports(__name__, {"DaskExecutor": "executor"})
