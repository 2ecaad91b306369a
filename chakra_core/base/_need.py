"""Import an optional dependency on first use, with an install hint naming the extra of
``chakra-core`` that brings it (pyproject.toml: ``analysis``, ``fast``, ``tables``)."""

from __future__ import annotations

import importlib
from types import ModuleType

from chakra_core.base._errors import ConfigError

__all__ = ["need"]


def need(module: str, extra: str = "analysis") -> ModuleType:
    """Import ``module`` (pandas, matplotlib, numba, ...); a ConfigError naming ``extra`` when it
    is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ConfigError(f"{module} is needed for this and is not installed ({e}): "
                          f"pip install 'chakra-core[{extra}]'") from None
