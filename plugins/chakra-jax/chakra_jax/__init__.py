"""Compiled XLA programs and JAX profiles to per-device Chakra ETs: the ``jax`` input format.

Public API: :class:`JaxFormat` (the registered format), :func:`load_module` /
:func:`parse_hlo_text` to parse a program, :func:`convert_module` to turn it (with a
:class:`Profile` from :func:`read_profile`) into a TraceSet, :func:`lower` for the
device-independent operation list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .format import JaxFormat, convert_module, load_module
    from .hlo_text import HloModule, parse_hlo_text
    from .lowering import Lowered, lower
    from .profile import Profile, read_profile

__all__ = ["JaxFormat", "convert_module", "load_module", "HloModule", "parse_hlo_text", "Lowered", "lower",
           "Profile", "read_profile"]

_WHERE = {
    "JaxFormat": "format",
    "convert_module": "format",
    "load_module": "format",
    "HloModule": "hlo_text",
    "parse_hlo_text": "hlo_text",
    "Lowered": "lowering",
    "lower": "lowering",
    "Profile": "profile",
    "read_profile": "profile",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
