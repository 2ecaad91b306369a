"""chakra-ray: run the points of a chakra sweep on a Ray cluster (``chakra sweep --executor ray``)."""

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .executor import RayExecutor

__all__ = ["RayExecutor"]

__getattr__, __dir__ = lazy_exports(__name__, {"RayExecutor": "executor"})
