"""Loading traces through the registry, and YAML pipelines (input -> transforms -> backends).

A pipeline file::

    requires: ["chakra-text>=0.1"]        # optional distribution requirements
    prefer: {simpy: chakra-simpy}         # optional: the distribution a clashing bare name means
    validate: true                        # optional: refuse a set with validation errors (default)
    input:
      format: text                        # optional: detected from the paths when omitted
      paths: [workload.txt]               # relative to the pipeline file
      options: {npus: 8}
      # or, instead of format and paths, a registered generator (with its options):
      # generator: transformer
    transforms:                           # optional, applied in order
      - name: scale
        options: {compute_speedup: 2}
    backends:                             # one or more
      - name: simpy
        output: out/sim                   # default: out/<name>; relative to the pipeline file
        options: {timeline: timeline.json}
        validate: false                   # optional: this backend runs even on an invalid set
    system:                               # optional: the system description inline (docs/system.md),
      network: [{topology: Ring, npus_count: 8, bandwidth: 50, latency: 500}]   # for every backend
                                          # that takes one and names no file of its own
    sweep:                                # chakra sweep only (docs/sweeps.md)
      grid:
        system.network[0].bandwidth: [25, 50]

The whole pipeline is validated (its keys and types against the JSON Schema of :mod:`._schema`,
then names and each plugin's options) before anything runs; a lazy input (a conversion, a
transform) is converted once into a temporary .et set that validation and every backend read;
each backend's result, with its provenance, is written as ``result.json`` in its output directory.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from chakra_core.base._errors import ChakraError, ConfigError, PluginError, TraceFormatError
from chakra_core.base._options import options_dict
from chakra_core.base._paths import expand_paths
from chakra_core.base._progress import counted_then, progress
from chakra_core.host._api import Backend, Result
from chakra_core.host._plugins import PluginHost, get_host
from chakra_core.io._publish import new_directories, staged_output
from chakra_core.pipeline._provenance import implementation, provenance
from chakra_core.trace._traceset import FileRank, MemoryRank, TraceSet, check_group_ranks

__all__ = ["load_traces", "Pipeline", "Stage", "resolve_stage", "run_pipeline", "load_pipeline", "detect_format",
           "materialise", "refuse_invalid"]

def detect_format(paths: Sequence[str], host: PluginHost | None = None) -> str:
    """The input format of ``paths`` as the installed plugins detect it (raises when none does)."""
    host = host or get_host()
    name = host.detect_format(list(paths))
    if name is None:
        for p in paths:  # raises for a path that names no file, or a file that cannot be read
            expand_paths(p, required="trace files")
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
    """One resolved stage: the registry entry, the implementation, its checked options and, for
    backends, its output directory and whether the set must pass validation first."""

    kind: str
    name: str
    impl: Any
    options: dict[str, Any]
    output: Path | None = None
    entry: Any = None
    validate: bool = True
    #: where a pipeline file gives it (``backends[0]``); "" for a stage of a command
    where: str = ""
    #: where a pipeline file gives its system description as data (``system``,
    #: ``backends[0].options.system``); "" for none
    system_where: str = ""

    @property
    def label(self) -> str:
        """The stage as the observer hooks name it: ``input``, ``transform`` or ``backend``."""
        return "input" if self.kind in ("format", "generator") else self.kind


def _placed_in_stage(b: Stage, e: ChakraError | OSError, source: str, traces: TraceSet) -> ChakraError | None:
    """The error ``e`` of backend stage ``b`` of pipeline file ``source``, placed in that file
    where the stage's entry is its cause: an error naming no file (about the stage, or its inline
    system), a rank of ``traces`` that has no file, or the path one of its options gives (or that
    path's folder); None for an error about another file (an input trace)."""
    where = e.where if isinstance(e, ChakraError) else e.filename
    message = e.message if isinstance(e, ChakraError) else (e.strerror or str(e))
    location = f"{e.location}: " if isinstance(e, ChakraError) and e.location else ""
    key = _path_option_of(b, where) if where else None
    if key is not None:
        place, message = f"{b.where}.options.{key}", f"{where}: {message}"
    elif isinstance(e, ConfigError) and where == "<mapping>" and b.system_where:
        place = b.system_where
    elif isinstance(e, ChakraError) and (not where or where in {rt.label for rt in traces if not rt.path}):
        place, location = f"{b.where} ({b.name})", f"{where}: {location}" if where else location
    else:
        return None
    cls = type(e) if isinstance(e, ChakraError) else ConfigError
    return cls(f"{place}: {location}{message}", source)


def _path_option_of(b: Stage, where: str) -> str | None:
    """The ``path`` option of stage ``b`` that gives ``where`` or a path inside folder ``where``."""
    for key, value in b.options.items():
        spec = b.impl.options.get(key)
        if spec is not None and spec.type == "path" and isinstance(value, (str, os.PathLike)) \
                and (Path(value) == Path(where) or Path(where) in Path(value).parents):
            return key
    return None


def resolve_stage(host: PluginHost, kind: str, name: str, options: Mapping[str, Any] | None,
                  base: Path | None = None, prefer: Mapping[str, str] | None = None) -> Stage:
    """Look the bare or qualified ``name`` up as a ``kind`` (a clashing bare name resolved by
    ``prefer``) and check its options (``path`` options taken relative to ``base`` when given);
    raises PluginError or ConfigError."""
    entry = host.registry.entry(kind, name, prefer)
    impl = entry.load()
    checked = impl.check_options(options_dict(f"{kind} {name!r}", options))
    return Stage(kind, name, impl, _resolve_paths(impl, checked, base) if base else checked, entry=entry)


@dataclass
class Pipeline:
    """A validated pipeline, ready to :meth:`run`.

    ``source`` is the pipeline file (``"<pipeline>"`` for a mapping, None for a command of the
    Python API or CLI); ``traces`` is an already opened set that replaces the input stage.
    """

    source: str | None
    input_paths: list[str]
    input: Stage | None
    transforms: list[Stage] = field(default_factory=list)
    backends: list[Stage] = field(default_factory=list)
    host: PluginHost | None = None
    traces: TraceSet | None = None

    def load(self) -> TraceSet:
        """Open the input and apply the transforms (lazily where the plugins allow)."""
        host = self.host or get_host()
        if self.traces is not None:
            traces = self.traces
        else:
            assert self.input is not None
            inp = self.input
            opened = (partial(inp.impl.generate, inp.options) if inp.kind == "generator"
                      else partial(inp.impl.open, self.input_paths, inp.options))
            traces = _run_observed(host, inp, opened)
        for t in self.transforms:
            traces = _run_observed(host, t, partial(t.impl.apply, traces, t.options))
        return traces

    def run_backends(self, traces: TraceSet | None = None) -> list[Result]:
        """Load the set once (or take ``traces``, the set :meth:`load` gives), validate it once
        (unless every backend opts out), run every backend on it, write each ``result.json``;
        return the Results with their provenance."""
        host = self.host or get_host()
        traces = self.load() if traces is None else traces
        checked = [b for b in self.backends if b.validate]
        with ExitStack() as stack:
            if _is_lazy(traces) and len(self.backends) + bool(checked) > 1:
                traces = materialise(traces, stack.enter_context(tempfile.TemporaryDirectory(prefix="chakra-")))
            compiled = bool(checked) and any(_loads_compiled(b, traces) for b in self.backends)
            for (groups, streams), names in _validation_assumptions(checked, traces).items():
                refuse_invalid(traces, names, groups=dict(groups), streams=streams, compiled=compiled)
            results = []
            with progress("backends", total=len(self.backends), unit="backend") as bar:
                for b in self.backends:
                    results.append(self._run_backend(host, b, traces))
                    bar.advance()
        return results

    def _run_backend(self, host: PluginHost, b: Stage, traces: TraceSet) -> Result:
        try:
            return self._run_backend_here(host, b, traces)
        except (ChakraError, OSError) as e:
            placed = _placed_in_stage(b, e, self.source, traces) if self.source and b.where else None
            if placed is None:
                raise
            raise placed from None

    def _run_backend_here(self, host: PluginHost, b: Stage, traces: TraceSet) -> Result:
        if b.output is None:
            result = _run_observed(host, b, lambda: b.impl.run(traces, b.options, None))
            result.provenance = self.provenance([b])
            return result
        with new_directories(b.output):  # a failed backend leaves no directory it made
            b.output.mkdir(parents=True, exist_ok=True)
            with staged_output(b.output) as staged:  # result.json is published with the backend's files
                result = _run_observed(host, b, lambda: b.impl.run(traces, b.options, b.output))
                result.provenance = self.provenance([b])
                result.write_json(staged.file("result.json"))
        return result

    def provenance(self, backends: Sequence[Stage] = ()) -> dict[str, Any]:
        """The provenance of a result made by ``backends`` from this pipeline's input."""
        stages = ([self.input] if self.input is not None and self.traces is None else []) + self.transforms
        impls = [implementation(s.label, s.entry, s.options) for s in [*stages, *backends]]
        inputs = self.input_paths or ([self.traces.source] if self.traces is not None and self.traces.source else [])
        return provenance(inputs, impls, self.source)

    def run(self, traces: TraceSet | None = None) -> dict[str, Any]:
        """Run input, transforms (or take their ``traces``) and every backend; return
        ``{"pipeline", "backends": [...]}``."""
        out = []
        for b, result in zip(self.backends, self.run_backends(traces)):
            out.append({"name": b.name, "output": str(b.output) if b.output else None,
                        "result_file": str(b.output / "result.json") if b.output else None,
                        "result": result.to_dict()})
        return {"pipeline": self.source, "backends": out}


def _loads_compiled(b: Stage, traces: TraceSet) -> bool:
    """What backend ``b`` says of its run on ``traces`` (:meth:`Backend.loads_compiled`): False
    for an implementation without the method (one that does not subclass Backend) or whose answer
    fails; a hint for the validation's way, which gives the same findings either way."""
    ask = getattr(b.impl, "loads_compiled", None)
    try:
        return bool(ask(traces, b.options)) if callable(ask) else False
    except Exception:  # noqa: BLE001 - a failing hint is no answer
        return False


def _run_observed(host: PluginHost, s: Stage, fn: Callable[[], Any]) -> Any:
    """Run one stage between the ``chakra_stage_started``/``_finished`` observer hooks."""
    ctx = {"options": s.options, "output": str(s.output) if s.output else None}
    host.notify("chakra_stage_started", stage=s.label, name=s.name, context=ctx)
    t0 = time.perf_counter()
    result = fn()
    host.notify("chakra_stage_finished", stage=s.label, name=s.name, context=ctx, result=result,
                seconds=time.perf_counter() - t0)
    return result


def _is_lazy(traces: TraceSet) -> bool:
    """Whether reading the set runs a conversion (not plain .et files, not nodes in memory)."""
    return any(not isinstance(rt, (FileRank, MemoryRank)) for rt in traces)


def materialise(traces: TraceSet, directory: str) -> TraceSet:
    """Convert a lazy set once into ``.et`` files under ``directory`` and return the set read
    from them; its ranks keep the input's labels, so messages name the input, not the copy."""
    with progress("converting", total=len(traces)) as bar:
        paths = traces.write(Path(directory) / "trace", progress=bar)
    ranks = []
    for rt, path in zip(traces, paths):
        fr = FileRank(rt.rank, path, rt.rank_known)
        fr.path = rt.path
        ranks.append(fr)
    return TraceSet(ranks, traces.process_groups, traces.source)


def _validation_assumptions(backends: Sequence[Stage],
                            traces: TraceSet | None = None) -> dict[tuple[tuple, int], list[str]]:
    """The backends grouped by what their validation assumes: the process groups their
    ``comm_groups`` file adds and the ``streams`` (ops in flight per rank) they run with.  With
    ``traces``, a group that names a rank outside the set, or one twice, is refused naming the
    groups file (validation would name the set's first file); one file is one rank of a job of
    unknown size, so a set of one is not checked."""
    from chakra_core.system import load_system

    out: dict[tuple[tuple, int], list[str]] = {}
    for b in backends:
        path = b.options.get("comm_groups")
        groups = tuple(sorted(load_system(comm_groups=path).comm_groups.items())) if path else ()
        if traces is not None and len(traces) > 1:
            for name, ranks in groups:
                check_group_ranks(name, sorted(ranks), max(traces.ranks) + 1, path)
        streams = b.options.get("streams", 1)
        out.setdefault((groups, streams if isinstance(streams, int) else 1), []).append(b.name)
    return out


def refuse_invalid(traces: TraceSet, backends: Sequence[str], *,
                   groups: Mapping[str, Sequence[int]] | None = None, streams: int = 1,
                   compiled: bool = False) -> None:
    """Raise TraceFormatError naming the first error and the count when ``traces`` has errors
    under the backends' ``groups`` (a comm-group file's) and ``streams``; by the compiled loops
    with ``compiled`` (a backend to run loads them anyway, :meth:`Backend.loads_compiled`) when
    numba is installed, else as a validation alone chooses."""
    from chakra_core.base._kernels import INSTALLED
    from chakra_core.validation._validate import CROSS_RANK_STATUS, compiled_pays, validate_as

    compile_it = (compiled and INSTALLED) or compiled_pays(traces)
    with progress("validating", total=len(traces)) as bar:
        findings = validate_as(traces, compile_it, progress=counted_then(bar, CROSS_RANK_STATUS),
                               groups=groups or None, streams=streams)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        count = sum(f.count for f in errors)
        raise TraceFormatError(
            f"the trace set has {count} validation error(s), so {', '.join(backends)} will not run it; "
            f"the first: {errors[0]} (see chakra validate; --no-validate, or validate: false in a "
            "pipeline, runs it anyway)")


def _check_requires(reqs: list[str], source: str) -> None:
    from importlib import metadata as md  # about 20 ms to import: only here

    from packaging.requirements import InvalidRequirement, Requirement  # 35 ms to import: only here

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


def _stage_from_yaml(host: PluginHost, kind: str, entry: Mapping[str, Any], where: str, source: str, base: Path,
                     prefer: Mapping[str, str]) -> Stage:
    """Resolve one checked ``{name, options, ...}`` mapping of a pipeline file into a Stage."""
    try:
        stage = resolve_stage(host, kind, entry["name"], entry.get("options") or {}, base, prefer)
    except (PluginError, ConfigError) as e:
        raise ConfigError(f"{where}: {e.message}", source) from None
    stage.where = where
    system = stage.options.get("system")
    if isinstance(system, Mapping) and getattr(stage.impl, "options", {}).get("system") is not None:
        stage.system_where = f"{where}.options.system"
        _check_system(system, [stage], stage.system_where, source)
    return stage


def _input_stage(host: PluginHost, inp: Mapping[str, Any], source: str, base: Path,
                 prefer: Mapping[str, str]) -> tuple[list[str], Stage]:
    """The input paths and stage of ``input: {format, paths, options}`` or, without paths,
    ``input: {generator: NAME, options}``."""
    if "generator" in inp:
        if "paths" in inp or "format" in inp:
            raise ConfigError("input takes either 'generator' or 'paths' (with 'format'), not both", source)
        return [], _stage_from_yaml(host, "generator", {"name": inp["generator"], "options": inp.get("options")},
                                    "input", source, base, prefer)
    paths = inp.get("paths")
    if paths is None:
        raise ConfigError("input.paths must be a path or a non-empty list of paths", source)
    paths = [paths] if isinstance(paths, str) else paths
    paths = [p if os.path.isabs(p) else os.path.normpath(base / p) for p in paths]
    fmt = inp.get("format") or detect_format(paths, host)
    return paths, _stage_from_yaml(host, "format", {"name": fmt, "options": inp.get("options")}, "input",
                                   source, base, prefer)


def _backend_stages(host: PluginHost, backends: Sequence[Mapping[str, Any]], validate_all: bool, source: str,
                    base: Path, prefer: Mapping[str, str]) -> list[Stage]:
    """The stages of ``backends:``, each with its output directory (default ``out/NAME``,
    ``out/NAME-2`` for a second one of a name) and whether it needs a valid set."""
    stages: list[Stage] = []
    for i, entry in enumerate(backends):
        st = _stage_from_yaml(host, "backend", entry, f"backends[{i}]", source, base, prefer)
        if not isinstance(st.impl, Backend):
            raise ConfigError(f"backends[{i}]: {st.name!r} is not a backend", source)
        taken = sum(1 for other in stages if other.name == st.name)
        out = entry.get("output", f"out/{st.name}" + (f"-{taken + 1}" if taken else ""))
        st.output = Path(out) if os.path.isabs(out) else Path(os.path.normpath(base / out))
        if not str(out).strip():
            raise ConfigError(f"backends[{i}].output: an empty path (leave the key out for out/{st.name})", source)
        _refuse_shared_output(stages, st, i, source)
        st.validate = entry.get("validate", validate_all)
        stages.append(st)
    return stages


def _refuse_shared_output(stages: Sequence[Stage], st: Stage, i: int, source: str) -> None:
    """Refuse a stage whose output directory is an earlier stage's, or inside or around one: the
    later stage would replace the earlier one's files (its result.json, its set)."""
    assert st.output is not None
    for j, other in enumerate(stages):
        assert other.output is not None
        if st.output == other.output or other.output in st.output.parents or st.output in other.output.parents:
            raise ConfigError(f"backends[{i}].output {st.output} overlaps backends[{j}].output {other.output}: "
                              "give each stage a directory of its own", source)


def load_pipeline(spec: str | os.PathLike | Mapping[str, Any], host: PluginHost | None = None,
                  base_dir: str | os.PathLike | None = None, *, source: str | None = None) -> Pipeline:
    """Parse and fully validate a pipeline (a YAML file path or an already loaded mapping, which
    messages and provenance call ``source``, default ``<pipeline>``): first against the pipeline's
    JSON Schema (``schema/pipeline.schema.json``), then names, options, requirements and the inline
    system; one with a ``sweep:`` section is refused (it runs with :func:`chakra_core.sweep`)."""
    from chakra_core.pipeline._document import check_pipeline, read_document  # YAML: only for pipelines

    host = host or get_host()
    data, source, lines = read_document(spec, source)
    data = check_pipeline(data, source, lines)
    if "sweep" in data:
        raise ConfigError("the pipeline has a sweep: section: run it with chakra sweep", source)
    base = Path(base_dir or ".") if isinstance(spec, Mapping) else _file_base(spec, base_dir)
    _check_requires(data.get("requires", []), source)
    prefer = data.get("prefer") or {}
    paths, input_stage = _input_stage(host, data["input"], source, base, prefer)
    tstages = [_stage_from_yaml(host, "transform", t, f"transforms[{i}]", source, base, prefer)
               for i, t in enumerate(data.get("transforms") or [])]
    bstages = _backend_stages(host, data["backends"], data.get("validate", True), source, base, prefer)
    if "system" in data:
        _use_inline_system(data["system"], [input_stage, *tstages, *bstages], source)
    return Pipeline(source, paths, input_stage, tstages, bstages, host)


def _file_base(spec: str | os.PathLike, base_dir: str | os.PathLike | None) -> Path:
    """Where a pipeline file's relative paths start: ``base_dir``, else the file's directory."""
    return Path(base_dir) if base_dir else Path(spec).resolve().parent


def _use_inline_system(system: dict[str, Any], stages: Sequence[Stage], source: str) -> None:
    """Check the pipeline's inline ``system:`` and give it to every stage that takes a system
    description (declares :data:`chakra_core.system.SYSTEM_OPTIONS`) and names no file of its own."""
    from chakra_core.system import SYSTEM_OPTIONS

    _check_system(system, stages, "system", source)
    for st in stages:
        declared = getattr(st.impl, "options", None) or {}
        takes = all(k in declared for k in SYSTEM_OPTIONS)
        if takes and all(st.options.get(k) is None for k in SYSTEM_OPTIONS):
            if not declared["system"].inline:
                raise ConfigError(f"system: {st.kind} {st.name!r} takes its system description as a file only "
                                  "(its option 'system' is a path): give it options: {system: FILE}", source)
            st.options["system"] = system
            st.system_where = "system"


def _check_system(system: Mapping[str, Any], stages: Sequence[Stage], where: str, source: str) -> None:
    """Refuse (ConfigError naming ``source`` and ``where``) an inline system description that the
    backends among ``stages`` could not load."""
    from chakra_core.system import load_system

    algorithms = {name for st in stages if st.kind == "backend" for name in st.impl.algorithms()}
    try:
        load_system(system, algorithms=algorithms)
    except ConfigError as e:
        place = f"{where}: {e.location}: " if e.location else f"{where}: "
        raise ConfigError(place + e.message, source) from None


def run_pipeline(spec: str | os.PathLike | Mapping[str, Any], host: PluginHost | None = None,
                 base_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Validate and run a pipeline in one call; return the backends' summaries."""
    return load_pipeline(spec, host, base_dir).run()
