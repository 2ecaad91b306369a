"""Where Chakra keeps what it may throw away and make again."""

from __future__ import annotations

import os

__all__ = ["cache_dir"]


def cache_dir() -> str:
    """The folder of Chakra's caches: ``$XDG_CACHE_HOME/chakra``, ``~/.cache/chakra`` when that
    variable is unset or empty (the folder may not exist yet)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "chakra")
