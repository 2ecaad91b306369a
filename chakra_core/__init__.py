"""chakra_core: the small core of the Chakra execution-trace ecosystem.

Public API (everything else is private; docs/api.md describes each name):

- schema: :class:`Node`, :class:`GlobalMetadata`, :class:`AttributeProto`, :class:`IOInfo`,
  :class:`NodeType`, :class:`CommType`, :data:`PG_INIT_NAME`, :data:`IDLE_NAME`
- I/O: :class:`EtReader`, :class:`EtWriter`, :func:`read_et`, :func:`write_et`, :func:`frame_nodes`,
  :func:`open_binary`, :func:`write_json`, :func:`read_json`, :func:`encode_varint`,
  :func:`decode_varint` (protobuf varints)
- outputs: :class:`atomic_output` (one file), :func:`output_directory` (a directory built aside
  and swapped into place), :func:`inside_output` (an option naming a file in the output directory),
  :func:`cache_dir` (the folder of Chakra's caches)
- trace sets: :class:`TraceSet`, :class:`RankTrace`, :class:`FileRank`, :class:`MemoryRank`,
  :class:`GeneratedRank`, :func:`open_traceset`, :func:`expand_paths`,
  :func:`with_process_groups`, :func:`process_groups_json`
- attributes: :func:`get_attr`, :func:`get_int`, :func:`get_str`, :func:`get_bool`,
  :func:`set_attr`, :func:`add_attr`, :func:`make_attr`, :class:`NodeAttrs`
- plugins: :data:`hookimpl`, :class:`Register`, :class:`InputFormat`, :class:`Backend`,
  :class:`Transform`, :class:`Synthesizer`, :class:`Generator`, :class:`Executor`, :class:`Result`,
  :class:`Option`, :func:`get_host` (:class:`PluginHost`, :class:`PluginInfo`),
  :func:`lazy_getattr`, :func:`lazy_exports`
- errors: :class:`ChakraError`, :class:`TraceFormatError`, :class:`ConfigError`,
  :class:`PluginError`; warnings: :class:`TraceFormatWarning`
- commands (one call each, as the CLI): :func:`convert`, :func:`validate` (:class:`Validation`),
  :func:`stats`, :func:`jsonize`, :func:`transform`, :func:`generate`, :func:`simulate`,
  :func:`emulate`, :func:`export`
- work: :class:`Finding`, :func:`custom_collective` (a system's custom-collective ETs, checked),
  :func:`compute_stats`, :class:`DepGraph`, :func:`detect_format`,
  :func:`load_traces`, :func:`run_pipeline`, :func:`load_pipeline`, :class:`Pipeline`
  (:class:`Stage`)
- sweeps: :func:`sweep` (every point of a pipeline's ``sweep:``, one results table),
  :func:`worker_function` (a task function set up for a Ray or Dask executor's workers)
- progress: :func:`progress`, :class:`Progress` (a bar on stderr, only on a terminal),
  :func:`set_progress_enabled`
- limits: :func:`check_limit`, :func:`get_limit` (resource limits, docs/limits.md)
- node selection for transforms: :data:`SELECTION_OPTIONS`, :func:`node_selection`,
  :data:`NODE_KINDS`, :func:`parse_ranks`
- roles: :func:`role_key`, :func:`role_keys`, :class:`RoleKey`, :class:`RoleHasher` (a rank's
  trace up to relabelled groups and peers)
- columns: :func:`node_columns`, :class:`NodeColumns`, :class:`AttrColumn` (a rank's nodes as
  numpy arrays, decoded from the wire format); :func:`classify_nodes` (:class:`NodeClasses`,
  :class:`NodeKind`, :class:`NodeResource`: what each node is to a replay and what it occupies)
- compiled loops: :func:`compiled_worthwhile` (whether an input is large enough to load numba for;
  :func:`ranks_compiled_worthwhile` for ranks of a trace set, :func:`keys_compiled_worthwhile`
  for their role keys),
  :func:`kernel`, :func:`compiled`, :func:`chosen` (a loop written once, run as Python or compiled)
- analysis (docs/report.md): :class:`Spans`, :class:`SpanBuilder`, :data:`SPAN_KINDS`,
  :data:`FLOW_KINDS`, :func:`breakdown`, :func:`critical_path` (:class:`CriticalPath`),
  :func:`write_timeline`, :func:`report` (:class:`Report`), :func:`diff` (:class:`Diff`),
  :func:`plot`, :func:`graph`

Public subpackages: :mod:`chakra_core.system` (the system description),
:mod:`chakra_core.hookspecs` (the hooks), :mod:`chakra_core.testing` (pytest fixtures).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core.base._lazy import lazy_exports, lazy_getattr
from chakra_core.base._version import __version__ as __version__

if TYPE_CHECKING:
    from chakra_core.analysis._breakdown import breakdown
    from chakra_core.analysis._critical import CriticalPath, critical_path
    from chakra_core.analysis._diff import Diff
    from chakra_core.analysis._plots import plot
    from chakra_core.analysis._report import Report
    from chakra_core.analysis._spans import FLOW_KINDS, SPAN_KINDS, SpanBuilder, Spans
    from chakra_core.analysis._timeline import add_span_outputs, write_timeline, write_timeline_from_options
    from chakra_core.analysis._timeline_options import TIMELINE_OPTIONS
    from chakra_core.base._cachedir import cache_dir
    from chakra_core.base._errors import ChakraError, ConfigError, PluginError, TraceFormatError, TraceFormatWarning
    from chakra_core.base._jitchoice import compiled_worthwhile
    from chakra_core.base._kernels import chosen, compiled, kernel
    from chakra_core.base._limits import check_limit, get_limit
    from chakra_core.base._options import Option
    from chakra_core.base._paths import expand_paths
    from chakra_core.base._progress import Progress, progress, set_progress_enabled
    from chakra_core.base._signals import signals_held
    from chakra_core.builtin.executors import worker_function
    from chakra_core.hookspecs import Register, hookimpl
    from chakra_core.host._api import Backend, Executor, Generator, InputFormat, Result, Synthesizer, Transform
    from chakra_core.host._plugins import PluginHost, PluginInfo, get_host
    from chakra_core.io._etio import EtReader, EtWriter, atomic_output, frame_nodes, open_binary, read_et, write_et
    from chakra_core.io._jsonform import read_json, write_json
    from chakra_core.io._publish import inside_output, output_directory
    from chakra_core.io._schema import (
        IDLE_NAME,
        PG_INIT_NAME,
        AttributeProto,
        CommType,
        GlobalMetadata,
        IOInfo,
        Node,
        NodeType,
    )
    from chakra_core.io._varint import decode_varint, encode_varint
    from chakra_core.pipeline._analyses import compare, diff, graph, report
    from chakra_core.pipeline._commands import (
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
    from chakra_core.pipeline._pipeline import Pipeline, Stage, detect_format, load_pipeline, load_traces, run_pipeline
    from chakra_core.pipeline._synth import read_model, synth_fit, synth_sample, synth_show
    from chakra_core.sweeps._sweep import sweep
    from chakra_core.trace._attrs import NodeAttrs, add_attr, get_attr, get_bool, get_int, get_str, make_attr, set_attr
    from chakra_core.trace._columns import AttrColumn, NodeColumns, node_columns
    from chakra_core.trace._graph import DepGraph
    from chakra_core.trace._kinds import NodeClasses, NodeKind, NodeResource, classify_nodes
    from chakra_core.trace._roles import RoleHasher, RoleKey, role_key, role_keys
    from chakra_core.trace._selection import NODE_KINDS, SELECTION_OPTIONS, node_selection, parse_ranks
    from chakra_core.trace._setchoice import keys_compiled_worthwhile, ranks_compiled_worthwhile
    from chakra_core.trace._stats import compute_stats
    from chakra_core.trace._traceset import (
        FileRank,
        GeneratedRank,
        MemoryRank,
        RankTrace,
        TraceSet,
        check_group_ranks,
        groups_by_rank,
        open_traceset,
        process_groups_json,
        with_process_groups,
    )
    from chakra_core.validation._custom import custom_collective
    from chakra_core.validation._finding import Finding

__all__ = [
    "Node", "GlobalMetadata", "NodeType", "CommType", "AttributeProto", "IOInfo", "PG_INIT_NAME", "IDLE_NAME",
    "EtReader", "EtWriter", "read_et", "write_et", "open_binary", "atomic_output", "frame_nodes",
    "output_directory", "inside_output", "cache_dir", "encode_varint", "decode_varint",
    "TraceSet", "RankTrace", "FileRank", "MemoryRank", "GeneratedRank", "open_traceset",
    "expand_paths", "signals_held", "with_process_groups", "process_groups_json", "check_group_ranks", "groups_by_rank",
    "write_json", "read_json",
    "get_attr", "get_int", "get_str", "get_bool", "set_attr", "add_attr", "make_attr", "NodeAttrs",
    "hookimpl", "Register", "InputFormat", "Backend", "Transform", "Synthesizer", "Result", "Option",
    "Generator", "generate",
    "get_host", "PluginHost", "PluginInfo", "lazy_getattr", "lazy_exports",
    "ChakraError", "TraceFormatError", "ConfigError", "PluginError", "TraceFormatWarning",
    "validate", "Finding", "compute_stats", "DepGraph", "detect_format", "load_traces", "run_pipeline",
    "load_pipeline", "Pipeline", "Stage", "custom_collective",
    "convert", "simulate", "emulate", "export", "transform", "stats", "jsonize", "Validation", "progress", "Progress",
    "set_progress_enabled",
    "check_limit", "get_limit",
    "role_key", "role_keys", "RoleKey", "RoleHasher", "node_columns", "NodeColumns", "AttrColumn",
    "classify_nodes", "NodeClasses", "NodeKind", "NodeResource", "compiled_worthwhile",
    "ranks_compiled_worthwhile", "keys_compiled_worthwhile",
    "synth_fit", "synth_sample", "synth_show", "read_model", "compare",
    "SELECTION_OPTIONS", "NODE_KINDS", "node_selection", "parse_ranks",
    "sweep", "Executor", "worker_function",
    "Spans", "SpanBuilder", "SPAN_KINDS", "FLOW_KINDS", "breakdown", "critical_path", "CriticalPath",
    "write_timeline", "write_timeline_from_options", "add_span_outputs", "TIMELINE_OPTIONS",
    "report", "Report", "diff", "Diff", "plot", "graph",
    "kernel", "compiled", "chosen",
]

#: public name -> the private module (relative to this package) that defines it
_EXPORTS = {
    "io._schema": ("Node", "GlobalMetadata", "NodeType", "CommType", "AttributeProto", "IOInfo", "PG_INIT_NAME",
                   "IDLE_NAME"),
    "io._etio": ("EtReader", "EtWriter", "read_et", "write_et", "open_binary", "atomic_output", "frame_nodes"),
    "io._publish": ("output_directory", "inside_output"),
    "io._varint": ("encode_varint", "decode_varint"),
    "trace._traceset": ("TraceSet", "RankTrace", "FileRank", "MemoryRank", "GeneratedRank", "open_traceset",
                        "with_process_groups", "process_groups_json", "check_group_ranks", "groups_by_rank"),
    "base._paths": ("expand_paths",),
    "base._cachedir": ("cache_dir",),
    "base._signals": ("signals_held",),
    "io._jsonform": ("write_json", "read_json"),
    "trace._attrs": ("get_attr", "get_int", "get_str", "get_bool", "set_attr", "add_attr", "make_attr", "NodeAttrs"),
    "hookspecs": ("hookimpl", "Register"),
    "host._api": ("InputFormat", "Backend", "Transform", "Synthesizer", "Generator", "Result", "Executor"),
    "pipeline._commands": ("generate", "validate", "convert", "simulate", "emulate", "export", "transform", "stats",
                           "jsonize", "Validation"),
    "base._options": ("Option",),
    "host._plugins": ("get_host", "PluginHost", "PluginInfo"),
    "base._lazy": ("lazy_getattr", "lazy_exports"),
    "base._errors": ("ChakraError", "TraceFormatError", "ConfigError", "PluginError", "TraceFormatWarning"),
    "validation._finding": ("Finding",),
    "validation._custom": ("custom_collective",),
    "trace._stats": ("compute_stats",),
    "trace._graph": ("DepGraph",),
    "pipeline._pipeline": ("detect_format", "load_traces", "run_pipeline", "load_pipeline", "Pipeline", "Stage"),
    "base._progress": ("progress", "Progress", "set_progress_enabled"),
    "base._limits": ("check_limit", "get_limit"),
    "trace._selection": ("SELECTION_OPTIONS", "NODE_KINDS", "node_selection", "parse_ranks"),
    "trace._roles": ("role_key", "role_keys", "RoleKey", "RoleHasher"),
    "trace._setchoice": ("ranks_compiled_worthwhile", "keys_compiled_worthwhile"),
    "trace._columns": ("node_columns", "NodeColumns", "AttrColumn"),
    "trace._kinds": ("classify_nodes", "NodeClasses", "NodeKind", "NodeResource"),
    "base._jitchoice": ("compiled_worthwhile",),
    "pipeline._synth": ("synth_fit", "synth_sample", "synth_show", "read_model"),
    "sweeps._sweep": ("sweep",),
    "builtin.executors": ("worker_function",),
    "analysis._spans": ("Spans", "SpanBuilder", "SPAN_KINDS", "FLOW_KINDS"),
    "analysis._breakdown": ("breakdown",),
    "analysis._critical": ("critical_path", "CriticalPath"),
    "analysis._timeline": ("write_timeline", "write_timeline_from_options", "add_span_outputs"),
    "analysis._timeline_options": ("TIMELINE_OPTIONS",),
    "pipeline._analyses": ("report", "diff", "graph", "compare"),
    "analysis._report": ("Report",),
    "analysis._diff": ("Diff",),
    "analysis._plots": ("plot",),
    "base._kernels": ("kernel", "compiled", "chosen"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(__all__)
