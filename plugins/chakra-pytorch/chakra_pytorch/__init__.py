"""chakra-pytorch: PyTorch host execution traces + Kineto traces to Chakra ETs."""

from __future__ import annotations

from importlib import import_module

__all__ = ["open_pytorch", "convert_rank", "find_rank_files", "RankFiles", "KNOWN_SCHEMAS", "PyTorchTraceWarning"]

_WHERE = {
    "open_pytorch": "convert",
    "convert_rank": "convert",
    "find_rank_files": "convert",
    "RankFiles": "convert",
    "KNOWN_SCHEMAS": "schema_version",
    "PyTorchTraceWarning": "schema_version",
}


def __getattr__(name: str):
    """Import the public names on first use, so that loading the plugin module stays light."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
