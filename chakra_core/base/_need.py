"""Import an optional dependency of the analysis layer on first use, with an install hint."""

from __future__ import annotations

import importlib
from types import ModuleType

from chakra_core.base._errors import ConfigError

__all__ = ["need"]


def need(module: str) -> ModuleType:
    """Import ``module`` (pandas, matplotlib, ...); a ConfigError naming the ``report`` extra when missing."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ConfigError(f"{module} is needed for this and is not installed ({e}): "
                          "pip install 'chakra-core[report]'") from None
