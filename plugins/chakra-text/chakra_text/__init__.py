"""ASTRA-sim 1.0 text workloads to Chakra ETs: the ``text`` input format.

Public API: :class:`TextFormat` (the registered format), :func:`parse_workload` and
:func:`convert_workload` for use from Python, :class:`Layout` for the process-group layout.
"""

from __future__ import annotations

from importlib import import_module

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


def __getattr__(name: str):
    """Import the public names on first use, so that loading the plugin module stays light."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
