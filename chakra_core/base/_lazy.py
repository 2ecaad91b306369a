"""Lazy public names for packages: import a submodule only when one of its names is used."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports", "lazy_getattr", "lazy_dir"]


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package`` that imports ``.<where[name]>`` on first use."""
    namespace = import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        mod = where.get(name)
        if mod is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{mod}", package), name)
        namespace[name] = value
        return value

    return __getattr__


def lazy_dir(package: str, where: Mapping[str, str]) -> Callable[[], list[str]]:
    """A module-level ``__dir__`` for ``package``: its defined names and its lazy ones."""
    namespace = import_module(package).__dict__

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __dir__


def lazy_exports(package: str, where: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package whose public names live in submodules.

    ``where`` maps each lazy name to the submodule (relative to ``package``) that defines it.
    Usage in a package's ``__init__.py``::

        __getattr__, __dir__ = lazy_exports(__name__, {"Exporter": "backend"})
    """
    return lazy_getattr(package, where), lazy_dir(package, where)
