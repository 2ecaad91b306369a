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

from .lazy import lazy_getattr

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
    "Node": "schema", "GlobalMetadata": "schema", "NodeType": "schema", "CommType": "schema",
    "AttributeProto": "schema", "IOInfo": "schema",
    "EtReader": "etio", "EtWriter": "etio", "read_et": "etio", "write_et": "etio",
    "atomic_output": "etio",
    "TraceSet": "traceset", "RankTrace": "traceset", "FileRank": "traceset",
    "MemoryRank": "traceset", "GeneratedRank": "traceset", "open_traceset": "traceset",
    "write_json": "jsonform", "read_json": "jsonform",
    "get_attr": "attrs", "get_int": "attrs", "get_str": "attrs", "get_bool": "attrs",
    "set_attr": "attrs", "make_attr": "attrs",
    "hookimpl": "hookspecs", "InputFormat": "api", "Backend": "api", "Transform": "api",
    "Synthesizer": "api", "Result": "api", "Option": "options", "get_host": "plugins",
    "ChakraError": "errors", "TraceFormatError": "errors", "ConfigError": "errors",
    "PluginError": "errors",
    "validate": "validate", "Finding": "validate", "compute_stats": "stats",
    "load_traces": "pipeline", "run_pipeline": "pipeline", "load_pipeline": "pipeline", "Pipeline": "pipeline",
}

__version__ = "0.1.0"


__getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(__all__)
