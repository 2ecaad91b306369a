"""Loading traces through the registry, and YAML pipelines (input -> transforms -> backends).

A pipeline file::

    requires: ["chakra-text>=0.1"]        # optional distribution requirements
    prefer: {simpy: chakra-simpy}         # optional: the distribution a clashing bare name means
    input:
      format: text                        # optional: detected from the paths when omitted
      paths: [workload.txt]               # relative to the pipeline file
      options: {npus: 8}
    transforms:                           # optional, applied in order
      - name: scale
        options: {compute_speedup: 2}
    backends:                             # one or more
      - name: simpy
        output: out/sim                   # default: out/<name>; relative to the pipeline file
        options: {timeline: timeline.json}

The whole pipeline is validated (keys, names, each plugin's options) before anything runs; each
backend's result is written as ``result.json`` in its output directory.
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata as md
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import InvalidRequirement, Requirement

from ._api import Backend
from ._errors import ConfigError, PluginError, TraceFormatError
from ._options import suggest
from ._plugins import PluginHost, get_host
from ._traceset import TraceSet

__all__ = ["load_traces", "Pipeline", "Stage", "run_pipeline", "load_pipeline", "detect_format"]

_TOP_KEYS = ("requires", "prefer", "input", "transforms", "backends")
_INPUT_KEYS = ("format", "paths", "options")
_STAGE_KEYS = ("name", "options")
_BACKEND_KEYS = ("name", "options", "output")


def detect_format(paths: Sequence[str], host: PluginHost | None = None) -> str:
    """The input format of ``paths`` as the installed plugins detect it (raises when none does)."""
    host = host or get_host()
    name = host.detect_format(list(paths))
    if name is None:
        first = paths[0] if paths else ""
        if os.path.isdir(first) and not any(os.scandir(first)):
            raise TraceFormatError("no trace files in this directory", first)
        if first and not os.path.exists(first) and not glob.glob(glob.escape(first) + ".*"):
            raise TraceFormatError("no such file, directory or trace-set prefix", first)
        known = ", ".join(host.registry.names("format"))
        raise TraceFormatError(f"cannot tell the input format; name one with --format ({known})",
                               paths[0] if paths else None)
    return name


def load_traces(paths: str | Sequence[str], format: str | None = None,
                options: Mapping[str, Any] | None = None, host: PluginHost | None = None) -> TraceSet:
    """Open ``paths`` with input format ``format`` (detected when None) and its ``options``."""
    host = host or get_host()
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    paths = [str(p) for p in paths]
    fmt = host.registry.get("format", format or detect_format(paths, host))
    return fmt.open(paths, fmt.check_options(options))


@dataclass
class Stage:
    """One resolved stage: the implementation, its checked options and (backends) its output."""

    kind: str
    name: str
    impl: Any
    options: dict[str, Any]
    output: Path | None = None


@dataclass
class Pipeline:
    """A validated pipeline, ready to :meth:`run`."""

    source: str
    input_paths: list[str]
    input: Stage
    transforms: list[Stage] = field(default_factory=list)
    backends: list[Stage] = field(default_factory=list)
    host: PluginHost | None = None

    def load(self) -> TraceSet:
        """Open the input and apply the transforms (lazily where the plugins allow)."""
        host = self.host or get_host()
        traces = self._stage(host, "input", self.input,
                             lambda: self.input.impl.open(self.input_paths, self.input.options))
        for t in self.transforms:
            traces = self._stage(host, "transform", t, lambda t=t, tr=traces: t.impl.apply(tr, t.options))
        return traces

    def run(self) -> dict[str, Any]:
        """Run input, transforms and every backend; return ``{"backends": [...]}`` summaries."""
        host = self.host or get_host()
        traces = self.load()
        out = []
        for b in self.backends:
            assert b.output is not None
            b.output.mkdir(parents=True, exist_ok=True)
            result = self._stage(host, "backend", b, lambda b=b: b.impl.run(traces, b.options, b.output))
            path = result.write_json(b.output / "result.json")
            out.append({"name": b.name, "output": str(b.output), "result_file": str(path),
                        "result": result.to_dict()})
        return {"pipeline": self.source, "backends": out}

    @staticmethod
    def _stage(host: PluginHost, stage: str, s: Stage, fn):
        ctx = {"options": s.options, "output": str(s.output) if s.output else None}
        host.notify("chakra_stage_started", stage=stage, name=s.name, context=ctx)
        t0 = time.perf_counter()
        result = fn()
        host.notify("chakra_stage_finished", stage=stage, name=s.name, context=ctx, result=result,
                    seconds=time.perf_counter() - t0)
        return result


def _check_keys(where: str, obj: Any, allowed: Sequence[str], source: str) -> dict:
    if not isinstance(obj, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(obj).__name__}", source)
    for k in obj:
        if k not in allowed:
            raise ConfigError(f"unknown key {k!r} in {where}{suggest(str(k), allowed)}; "
                              f"allowed: {', '.join(allowed)}", source)
    return obj


def _check_requires(reqs: Any, source: str) -> None:
    if not isinstance(reqs, list) or not all(isinstance(r, str) for r in reqs):
        raise ConfigError("'requires' must be a list of requirement strings", source)
    problems = []
    for text in reqs:
        try:
            req = Requirement(text)
        except InvalidRequirement as e:
            raise ConfigError(f"bad requirement {text!r} ({e})", source) from None
        try:
            have = md.version(req.name)
        except md.PackageNotFoundError:
            problems.append(f"{req.name} is not installed (pip install '{text}')")
            continue
        if req.specifier and not req.specifier.contains(have, prereleases=True):
            problems.append(f"{req.name} {have} is installed but {text} is required")
    if problems:
        raise ConfigError("; ".join(problems), source, "requires")


def _resolve_paths(impl: Any, options: dict[str, Any], base: Path) -> dict[str, Any]:
    specs = getattr(impl, "options", {}) or {}
    out = dict(options)
    for key, spec in specs.items():
        v = out.get(key)
        if spec.type == "path" and isinstance(v, str) and v and not os.path.isabs(v):
            out[key] = os.path.normpath(base / v)
    return out


def _stage(host: PluginHost, kind: str, entry: Any, where: str, allowed: Sequence[str], source: str,
           base: Path, prefer: Mapping[str, str]) -> tuple[Stage, dict]:
    entry = _check_keys(where, entry, allowed, source)
    name = entry.get("name")
    if not isinstance(name, str):
        raise ConfigError(f"{where} needs a 'name' (a registered {kind})", source)
    opts = entry.get("options") or {}
    if not isinstance(opts, dict):
        raise ConfigError(f"{where}.options must be a mapping", source)
    try:
        impl = host.registry.get(kind, name, prefer)
        checked = impl.check_options(opts)
    except (PluginError, ConfigError) as e:
        raise ConfigError(f"{where}: {e.message}", source) from None
    return Stage(kind, name, impl, _resolve_paths(impl, checked, base)), entry


def load_pipeline(spec: str | os.PathLike | Mapping[str, Any], host: PluginHost | None = None,
                  base_dir: str | os.PathLike | None = None) -> Pipeline:
    """Parse and fully validate a pipeline (a YAML file path or an already loaded mapping)."""
    host = host or get_host()
    if isinstance(spec, Mapping):
        data, source = dict(spec), "<pipeline>"
        base = Path(base_dir or ".")
    else:
        source = str(spec)
        base = Path(base_dir) if base_dir else Path(spec).resolve().parent
        try:
            text = Path(spec).read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"cannot read ({e.strerror or e})", source) from None
        except UnicodeDecodeError as e:
            raise ConfigError(f"not UTF-8 text ({e.reason} at byte {e.start})", source) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            loc = f"line {mark.line + 1}" if mark else None
            raise ConfigError(f"malformed YAML ({getattr(e, 'problem', None) or e})", source, loc) from None
        except (ValueError, TypeError) as e:  # a tag such as !!int on a value it cannot convert
            raise ConfigError(f"bad YAML value ({e})", source) from None
    data = _check_keys("the pipeline", data, _TOP_KEYS, source)
    if "requires" in data:
        _check_requires(data["requires"], source)
    prefer = data.get("prefer") or {}
    if not isinstance(prefer, dict) or not all(isinstance(v, str) for v in [*prefer, *prefer.values()]):
        raise ConfigError("'prefer' must map names to distributions (simpy: chakra-simpy)", source)
    inp = _check_keys("input", data.get("input"), _INPUT_KEYS, source)
    paths = inp.get("paths")
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise ConfigError("input.paths must be a path or a non-empty list of paths", source)
    paths = [p if os.path.isabs(p) else os.path.normpath(base / p) for p in paths]
    fmt = inp.get("format")
    if fmt is not None and not isinstance(fmt, str):
        raise ConfigError("input.format must be a string", source)
    fmt = fmt or detect_format(paths, host)
    input_stage, _ = _stage(host, "format", {"name": fmt, "options": inp.get("options")}, "input",
                            ("name", "options"), source, base, prefer)
    transforms = data.get("transforms") or []
    if not isinstance(transforms, list):
        raise ConfigError("'transforms' must be a list", source)
    tstages = [_stage(host, "transform", t, f"transforms[{i}]", _STAGE_KEYS, source, base, prefer)[0]
               for i, t in enumerate(transforms)]
    backends = data.get("backends")
    if not isinstance(backends, list) or not backends:
        raise ConfigError("'backends' must be a non-empty list", source)
    bstages: list[Stage] = []
    for i, b in enumerate(backends):
        st, entry = _stage(host, "backend", b, f"backends[{i}]", _BACKEND_KEYS, source, base, prefer)
        if not isinstance(st.impl, Backend):
            raise ConfigError(f"backends[{i}]: {st.name!r} is not a backend", source)
        taken = sum(1 for other in bstages if other.name == st.name)
        out = entry.get("output", f"out/{st.name}" + (f"-{taken + 1}" if taken else ""))
        if not isinstance(out, str):
            raise ConfigError(f"backends[{i}].output must be a path", source)
        st.output = Path(out) if os.path.isabs(out) else Path(os.path.normpath(base / out))
        bstages.append(st)
    return Pipeline(source, paths, input_stage, tstages, bstages, host)


def run_pipeline(spec: str | os.PathLike | Mapping[str, Any], host: PluginHost | None = None,
                 base_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Validate and run a pipeline in one call; return the backends' summaries."""
    return load_pipeline(spec, host, base_dir).run()
