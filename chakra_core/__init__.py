"""chakra_core: the small core of the Chakra execution-trace ecosystem.

Public API (everything else is private; docs/api.md describes each name):

- schema: :class:`Node`, :class:`GlobalMetadata`, :class:`AttributeProto`, :class:`IOInfo`,
  :class:`NodeType`, :class:`CommType`, :data:`PG_INIT_NAME`
- I/O: :class:`EtReader`, :class:`EtWriter`, :func:`read_et`, :func:`write_et`, :func:`frame_nodes`,
  :func:`open_binary`, :func:`write_json`, :func:`read_json`
- outputs: :class:`atomic_output` (one file), :func:`output_directory` (a directory built aside
  and swapped into place), :func:`inside_output` (an option naming a file in the output directory)
- trace sets: :class:`TraceSet`, :class:`RankTrace`, :class:`FileRank`, :class:`MemoryRank`,
  :class:`GeneratedRank`, :func:`open_traceset`, :func:`expand_paths`,
  :func:`with_process_groups`, :func:`process_groups_json`
- attributes: :func:`get_attr`, :func:`get_int`, :func:`get_str`, :func:`get_bool`,
  :func:`set_attr`, :func:`add_attr`, :func:`make_attr`, :class:`NodeAttrs`
- plugins: :data:`hookimpl`, :class:`Register`, :class:`InputFormat`, :class:`Backend`,
  :class:`Transform`, :class:`Synthesizer`, :class:`Generator`, :class:`Executor`, :class:`Result`,
  :class:`Option`, :func:`get_host`,
  :func:`lazy_getattr`, :func:`lazy_exports`
- errors: :class:`ChakraError`, :class:`TraceFormatError`, :class:`ConfigError`,
  :class:`PluginError`
- commands (one call each, as the CLI): :func:`convert`, :func:`validate` (:class:`Validation`),
  :func:`stats`, :func:`jsonize`, :func:`transform`, :func:`generate`, :func:`simulate`,
  :func:`emulate`, :func:`export`
- work: :class:`Finding`, :func:`compute_stats`, :class:`DepGraph`, :func:`detect_format`,
  :func:`load_traces`, :func:`run_pipeline`, :func:`load_pipeline`, :class:`Pipeline`
- sweeps: :func:`sweep` (every point of a pipeline's ``sweep:``, one results table)
- progress: :func:`progress`, :class:`Progress` (a bar on stderr, only on a terminal),
  :func:`set_progress_enabled`
- limits: :func:`check_limit`, :func:`get_limit` (resource limits, docs/limits.md)
- node selection for transforms: :data:`SELECTION_OPTIONS`, :func:`node_selection`,
  :data:`NODE_KINDS`, :func:`parse_ranks`
- roles: :func:`role_key`, :class:`RoleKey`, :class:`RoleHasher` (a rank's trace up to
  relabelled groups and peers)
- columns: :func:`node_columns`, :class:`NodeColumns`, :class:`AttrColumn` (a rank's nodes as
  numpy arrays, decoded from the wire format)
- analysis (docs/report.md): :class:`Spans`, :class:`SpanBuilder`, :data:`SPAN_KINDS`,
  :data:`FLOW_KINDS`, :func:`breakdown`, :func:`critical_path` (:class:`CriticalPath`),
  :func:`write_timeline`, :func:`report` (:class:`Report`), :func:`diff` (:class:`Diff`),
  :func:`plot`, :func:`graph`

Public subpackages: :mod:`chakra_core.system` (the system description),
:mod:`chakra_core.hookspecs` (the hooks), :mod:`chakra_core.testing` (pytest fixtures).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports, lazy_getattr

if TYPE_CHECKING:
    from ._api import Backend, Executor, Generator, InputFormat, Result, Synthesizer, Transform
    from ._attrs import NodeAttrs, add_attr, get_attr, get_bool, get_int, get_str, make_attr, set_attr
    from ._breakdown import breakdown
    from ._columns import AttrColumn, NodeColumns, node_columns
    from ._commands import (
        Validation,
        convert,
        emulate,
        export,
        generate,
        jsonize,
        simulate,
        stats,
        transform,
        validate,
    )
    from ._compare import compare
    from ._critical import CriticalPath, critical_path
    from ._diff import Diff, diff
    from ._errors import ChakraError, ConfigError, PluginError, TraceFormatError
    from ._etio import EtReader, EtWriter, atomic_output, frame_nodes, open_binary, read_et, write_et
    from ._graph import DepGraph
    from ._graphview import graph
    from ._jsonform import read_json, write_json
    from ._limits import check_limit, get_limit
    from ._options import Option
    from ._paths import expand_paths
    from ._pipeline import Pipeline, detect_format, load_pipeline, load_traces, run_pipeline
    from ._plots import plot
    from ._plugins import get_host
    from ._progress import Progress, progress, set_progress_enabled
    from ._publish import inside_output, output_directory
    from ._report import Report, report
    from ._roles import RoleHasher, RoleKey, role_key
    from ._schema import PG_INIT_NAME, AttributeProto, CommType, GlobalMetadata, IOInfo, Node, NodeType
    from ._selection import NODE_KINDS, SELECTION_OPTIONS, node_selection, parse_ranks
    from ._spans import FLOW_KINDS, SPAN_KINDS, SpanBuilder, Spans
    from ._stats import compute_stats
    from ._sweep import sweep
    from ._synth import read_model, synth_fit, synth_sample, synth_show
    from ._timeline import write_timeline, write_timeline_from_options
    from ._timeline_options import TIMELINE_OPTIONS
    from ._traceset import (
        FileRank,
        GeneratedRank,
        MemoryRank,
        RankTrace,
        TraceSet,
        open_traceset,
        process_groups_json,
        with_process_groups,
    )
    from ._validate import Finding
    from .hookspecs import Register, hookimpl

__all__ = [
    "Node", "GlobalMetadata", "NodeType", "CommType", "AttributeProto", "IOInfo", "PG_INIT_NAME",
    "EtReader", "EtWriter", "read_et", "write_et", "open_binary", "atomic_output", "frame_nodes",
    "output_directory", "inside_output",
    "TraceSet", "RankTrace", "FileRank", "MemoryRank", "GeneratedRank", "open_traceset",
    "expand_paths", "with_process_groups", "process_groups_json",
    "write_json", "read_json",
    "get_attr", "get_int", "get_str", "get_bool", "set_attr", "add_attr", "make_attr", "NodeAttrs",
    "hookimpl", "Register", "InputFormat", "Backend", "Transform", "Synthesizer", "Result", "Option",
    "Generator", "generate",
    "get_host", "lazy_getattr", "lazy_exports",
    "ChakraError", "TraceFormatError", "ConfigError", "PluginError",
    "validate", "Finding", "compute_stats", "DepGraph", "detect_format", "load_traces", "run_pipeline",
    "load_pipeline", "Pipeline",
    "convert", "simulate", "emulate", "export", "transform", "stats", "jsonize", "Validation", "progress", "Progress",
    "set_progress_enabled",
    "check_limit", "get_limit",
    "role_key", "RoleKey", "RoleHasher", "node_columns", "NodeColumns", "AttrColumn",
    "synth_fit", "synth_sample", "synth_show", "read_model", "compare",
    "SELECTION_OPTIONS", "NODE_KINDS", "node_selection", "parse_ranks",
    "sweep", "Executor",
    "Spans", "SpanBuilder", "SPAN_KINDS", "FLOW_KINDS", "breakdown", "critical_path", "CriticalPath",
    "write_timeline", "write_timeline_from_options", "TIMELINE_OPTIONS",
    "report", "Report", "diff", "Diff", "plot", "graph",
]

_WHERE = {
    "Node": "_schema", "GlobalMetadata": "_schema", "NodeType": "_schema", "CommType": "_schema",
    "AttributeProto": "_schema", "IOInfo": "_schema", "PG_INIT_NAME": "_schema",
    "EtReader": "_etio", "EtWriter": "_etio", "read_et": "_etio", "write_et": "_etio",
    "open_binary": "_etio", "atomic_output": "_etio", "frame_nodes": "_etio",
    "output_directory": "_publish", "inside_output": "_publish",
    "TraceSet": "_traceset", "RankTrace": "_traceset", "FileRank": "_traceset",
    "MemoryRank": "_traceset", "GeneratedRank": "_traceset", "open_traceset": "_traceset",
    "expand_paths": "_paths", "with_process_groups": "_traceset",
    "process_groups_json": "_traceset",
    "write_json": "_jsonform", "read_json": "_jsonform",
    "get_attr": "_attrs", "get_int": "_attrs", "get_str": "_attrs", "get_bool": "_attrs",
    "set_attr": "_attrs", "add_attr": "_attrs", "make_attr": "_attrs", "NodeAttrs": "_attrs",
    "hookimpl": "hookspecs", "Register": "hookspecs",
    "InputFormat": "_api", "Backend": "_api", "Transform": "_api",
    "Synthesizer": "_api", "Generator": "_api", "generate": "_commands", "Result": "_api",
    "Option": "_options", "get_host": "_plugins",
    "lazy_getattr": "_lazy", "lazy_exports": "_lazy",
    "ChakraError": "_errors", "TraceFormatError": "_errors", "ConfigError": "_errors",
    "PluginError": "_errors",
    "validate": "_commands", "Finding": "_validate", "compute_stats": "_stats", "DepGraph": "_graph",
    "detect_format": "_pipeline", "load_traces": "_pipeline", "run_pipeline": "_pipeline",
    "load_pipeline": "_pipeline", "Pipeline": "_pipeline",
    "convert": "_commands", "simulate": "_commands", "emulate": "_commands", "export": "_commands",
    "transform": "_commands",
    "stats": "_commands", "jsonize": "_commands", "Validation": "_commands",
    "progress": "_progress", "Progress": "_progress", "set_progress_enabled": "_progress",
    "check_limit": "_limits", "get_limit": "_limits",
    "SELECTION_OPTIONS": "_selection", "NODE_KINDS": "_selection", "node_selection": "_selection",
    "parse_ranks": "_selection",
    "role_key": "_roles", "RoleKey": "_roles", "RoleHasher": "_roles",
    "node_columns": "_columns", "NodeColumns": "_columns", "AttrColumn": "_columns",
    "synth_fit": "_synth", "synth_sample": "_synth", "synth_show": "_synth", "read_model": "_synth",
    "sweep": "_sweep", "Executor": "_api",
    "Spans": "_spans", "SpanBuilder": "_spans", "SPAN_KINDS": "_spans", "FLOW_KINDS": "_spans",
    "breakdown": "_breakdown", "critical_path": "_critical", "CriticalPath": "_critical",
    "write_timeline": "_timeline", "write_timeline_from_options": "_timeline",
    "TIMELINE_OPTIONS": "_timeline_options", "report": "_report", "Report": "_report", "diff": "_diff", "Diff": "_diff",
    "plot": "_plots", "graph": "_graphview",
    "compare": "_compare",
}

__version__ = "0.1.0"


__getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(__all__)
