"""chakra-collect-jax: compile and profile a jitted JAX step and write its per-device Chakra ETs.

Public API: :func:`collect` and its result :class:`Collected`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .record import Collected, collect

__all__ = ["Collected", "collect"]

__getattr__, __dir__ = lazy_exports(__name__, {"Collected": "record", "collect": "record"})
