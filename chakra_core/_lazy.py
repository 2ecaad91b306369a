"""Lazy public names for packages: import a submodule only when one of its names is used."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package`` that imports ``.<where[name]>`` on first use.

    Usage in a package's ``__init__.py``::

        __getattr__ = lazy_getattr(__name__, {"Exporter": "backend"})
    """
    namespace = import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        mod = where.get(name)
        if mod is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{mod}", package), name)
        namespace[name] = value
        return value

    return __getattr__
