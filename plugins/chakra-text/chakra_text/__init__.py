"""ASTRA-sim 1.0 text workloads to Chakra ETs: the ``text`` input format.

Public API: :class:`TextFormat` (the registered format), :func:`parse_workload` and
:func:`convert_workload` for use from Python, :class:`GroupLayout` for the process-group layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .format import TextFormat, convert_workload
    from .groups import GroupLayout
    from .modes import COMM_TYPES, MODES
    from .parse import Workload, parse_workload

__all__ = ["TextFormat", "convert_workload", "parse_workload", "Workload", "GroupLayout", "MODES", "COMM_TYPES"]

_WHERE = {
    "TextFormat": "format",
    "convert_workload": "format",
    "parse_workload": "parse",
    "Workload": "parse",
    "GroupLayout": "groups",
    "MODES": "modes",
    "COMM_TYPES": "modes",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
