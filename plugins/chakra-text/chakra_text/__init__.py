"""ASTRA-sim 1.0 text workloads to Chakra ETs: the ``text`` input format.

Public API: :class:`TextFormat` (the registered format), :func:`parse_workload` and
:func:`convert_workload` for use from Python, :class:`Layout` for the process-group layout.
"""

from __future__ import annotations

from chakra_core._lazy import lazy_getattr

__all__ = ["TextFormat", "convert_workload", "parse_workload", "Workload", "Layout", "MODES", "COMM_TYPES"]

_WHERE = {
    "TextFormat": "format",
    "convert_workload": "format",
    "parse_workload": "parse",
    "Workload": "parse",
    "Layout": "groups",
    "MODES": "modes",
    "COMM_TYPES": "modes",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
