"""chakra_core: the small core of the Chakra execution-trace ecosystem.

Public API (everything else is private):

- schema: :class:`Node`, :class:`GlobalMetadata`, :class:`NodeType`, :class:`CommType`
- I/O: :class:`EtReader`, :class:`EtWriter`, :func:`read_et`, :func:`write_et`,
  :class:`TraceSet`, :func:`open_traceset`, :func:`write_json`, :func:`read_json`
- attributes: :func:`get_int`, :func:`get_str`, :func:`get_attr`, :func:`set_attr`, :func:`make_attr`
- plugins: :data:`hookimpl`, :class:`InputFormat`, :class:`Backend`, :class:`Transform`,
  :class:`Synthesizer`, :class:`Result`, :class:`Option`, :func:`get_host`
- work: :func:`validate`, :func:`compute_stats`, :func:`load_traces`, :func:`run_pipeline`
"""

from __future__ import annotations

from ._lazy import lazy_getattr

__all__ = [
    "Node", "GlobalMetadata", "NodeType", "CommType", "AttributeProto", "IOInfo",
    "EtReader", "EtWriter", "read_et", "write_et", "atomic_output",
    "TraceSet", "RankTrace", "FileRank", "MemoryRank", "GeneratedRank", "open_traceset",
    "write_json", "read_json",
    "get_attr", "get_int", "get_str", "get_bool", "set_attr", "make_attr",
    "hookimpl", "InputFormat", "Backend", "Transform", "Synthesizer", "Result", "Option",
    "get_host", "ChakraError", "TraceFormatError", "ConfigError", "PluginError",
    "validate", "Finding", "compute_stats", "load_traces", "run_pipeline", "load_pipeline", "Pipeline",
]

_WHERE = {
    "Node": "_schema", "GlobalMetadata": "_schema", "NodeType": "_schema", "CommType": "_schema",
    "AttributeProto": "_schema", "IOInfo": "_schema",
    "EtReader": "_etio", "EtWriter": "_etio", "read_et": "_etio", "write_et": "_etio",
    "atomic_output": "_etio",
    "TraceSet": "_traceset", "RankTrace": "_traceset", "FileRank": "_traceset",
    "MemoryRank": "_traceset", "GeneratedRank": "_traceset", "open_traceset": "_traceset",
    "write_json": "_jsonform", "read_json": "_jsonform",
    "get_attr": "_attrs", "get_int": "_attrs", "get_str": "_attrs", "get_bool": "_attrs",
    "set_attr": "_attrs", "make_attr": "_attrs",
    "hookimpl": "hookspecs", "InputFormat": "_api", "Backend": "_api", "Transform": "_api",
    "Synthesizer": "_api", "Result": "_api", "Option": "_options", "get_host": "_plugins",
    "ChakraError": "_errors", "TraceFormatError": "_errors", "ConfigError": "_errors",
    "PluginError": "_errors",
    "validate": "_validate", "Finding": "_validate", "compute_stats": "_stats",
    "load_traces": "_pipeline", "run_pipeline": "_pipeline", "load_pipeline": "_pipeline", "Pipeline": "_pipeline",
}

__version__ = "0.1.0"


__getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(__all__)
