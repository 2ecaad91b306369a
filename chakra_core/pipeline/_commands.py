"""The Python API of the ``chakra`` commands: one call each, with the CLI's options and defaults.

``inputs`` is what a user types for a trace set (a path, a list of paths: file, directory, glob
or prefix, in any registered input format, detected when ``format`` is None) or an already
opened :class:`TraceSet`.  ``input_options`` are the input format's options (the CLI's ``-I``),
``options`` a backend's (the CLI's ``-O``).  Every result carries its provenance
(docs/pipelines.md).  The CLI commands are thin layers over these functions.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Union

from chakra_core.base._errors import ConfigError
from chakra_core.base._options import check_flags, check_whole, options_dict
from chakra_core.base._progress import counted_then, progress
from chakra_core.host._api import Result
from chakra_core.host._plugins import PluginHost, get_host
from chakra_core.pipeline._pipeline import Pipeline, Stage, detect_format, resolve_stage
from chakra_core.pipeline._validated import write_validated_set
from chakra_core.trace._traceset import TraceSet
from chakra_core.validation._finding import Finding

__all__ = ["Inputs", "Validation", "convert", "simulate", "simulation_pipeline", "emulate", "export", "transform",
           "transform_pipeline", "generate", "generate_pipeline", "written_set", "validate", "stats", "jsonize"]

#: a trace set as a user names it, or one already opened
Inputs = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]], TraceSet]  # noqa: UP007 - a runtime alias


class Validation(list):
    """The findings of :func:`validate` (a list of :class:`Finding`), with counts and provenance."""

    def __init__(self, findings: Sequence[Finding], ranks: int, provenance: dict[str, Any]):
        super().__init__(findings)
        self.ranks = ranks
        self.provenance = provenance

    @property
    def errors(self) -> int:
        """How many errors were found (a summary finding counts for what it stands for)."""
        return sum(f.count for f in self if f.severity == "error")

    @property
    def warnings(self) -> int:
        """How many warnings were found."""
        return sum(f.count for f in self) - self.errors

    @property
    def ok(self) -> bool:
        """True when there is no error."""
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        """What ``chakra validate --json`` prints."""
        return {"ok": self.ok, "ranks": self.ranks, "errors": self.errors, "warnings": self.warnings,
                "findings": [f.to_dict() for f in self], "provenance": self.provenance}


def _input_pipeline(inputs: Inputs, format: str | None, input_options: Mapping[str, Any] | None,
                    host: PluginHost | None) -> Pipeline:
    """A pipeline with the input stage only (transforms and backends are added by the caller)."""
    host = host or get_host()
    if isinstance(inputs, TraceSet):
        if format is not None or input_options:
            raise ConfigError("format and input options apply to paths, not to an opened TraceSet")
        return Pipeline(None, [], None, host=host, traces=inputs)
    paths = _input_paths(inputs)
    stage = resolve_stage(host, "format", format or detect_format(paths, host), input_options)
    return Pipeline(None, paths, stage, host=host)


def _input_paths(inputs: Any) -> list[str]:
    """``inputs`` (a path or a list of paths) as a list of strings; anything else (a number,
    None, a list holding something else) is a ConfigError."""
    if isinstance(inputs, (str, os.PathLike)):
        return [str(inputs)]
    if not isinstance(inputs, Iterable) or isinstance(inputs, (bytes, Mapping)):
        raise ConfigError(f"inputs: give a path, a list of paths or an opened TraceSet, got {inputs!r}")
    items = list(inputs)
    for k, p in enumerate(items):
        if not isinstance(p, (str, os.PathLike)):
            raise ConfigError(f"inputs: item {k} of the list is {p!r}, not a path")
    return [str(p) for p in items]


def convert(inputs: Inputs, output: str | os.PathLike, *, format: str | None = None,
            input_options: Mapping[str, Any] | None = None, gzip: bool = False, jobs: int | None = None,
            executor: str | None = None, executor_options: Mapping[str, Any] | None = None,
            validate: bool = True, host: PluginHost | None = None) -> Result:
    """Convert to a ``.et`` set at ``output`` (a directory: ``trace.{rank}.et``; else a prefix).

    All ranks are published together; files of an earlier set at ``output`` that the new one
    lacks are removed.  With ``jobs`` (workers) or ``executor`` (a sweep executor: ``local``,
    ``ray``, ``dask``, with its ``executor_options``), a format whose ranks convert
    independently (``per_rank``) is converted in that many parts at once, to the same bytes;
    another format is converted in this process (a note says so).  The set is written only when
    it passes validation (unless ``validate`` is False; :func:`write_validated_set`).  The Result
    lists the files; ``summary`` is ``{"ranks": N}``.
    """
    check_flags(gzip=gzip, validate=validate)
    if jobs is not None:
        check_whole(jobs=jobs)
    pipe = _input_pipeline(inputs, format, input_options, host)
    notes = []
    if jobs is not None or executor is not None:
        from chakra_core.pipeline._rankparts import can_fan_out, write_parts

        h = pipe.host or get_host()
        impl = h.registry.get("executor", executor or "local")
        opts = dict(executor_options or {})
        if jobs is not None:
            opts["workers"] = jobs
        checked = impl.check_options(opts)
        if can_fan_out(pipe):
            paths = write_parts(pipe, output, impl, checked, compress=gzip, replace_stale=True, validate=validate)
            return Result("convert", "converter", {"ranks": len(paths)}, files=[str(p) for p in paths],
                          provenance=pipe.provenance())
        name = pipe.input.name if pipe.input is not None else "the opened set"
        notes.append(f"format {name} does not convert its ranks independently: converted in one process")
    paths = write_validated_set(pipe.load(), output, compress=gzip, validate=validate, stage_name="converting")
    return Result("convert", "converter", {"ranks": len(paths)}, files=[str(p) for p in paths],
                  notes=notes, provenance=pipe.provenance())


def transform(inputs: Inputs, name: str | Sequence[str],
              options: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None, *,
              output: str | os.PathLike | None = None, gzip: bool = False, format: str | None = None,
              input_options: Mapping[str, Any] | None = None, validate: bool = True,
              host: PluginHost | None = None) -> TraceSet:
    """Apply the registered transform ``name`` (or several names, in order) with ``options``.

    For several names, ``options`` is one mapping per name, or one mapping whose keys are
    ``NAME.key`` or a plain ``key`` that exactly one of the transforms declares.  The new set is
    lazy; with ``output`` it is written there (as :func:`convert` writes, only when valid unless
    ``validate`` is False) and the written set is returned.
    """
    pipe = transform_pipeline(inputs, name, options, format=format, input_options=input_options, host=host)
    return written_set(pipe.load(), output, gzip, validate)


def transform_pipeline(inputs: Inputs, name: str | Sequence[str],
                       options: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None, *,
                       format: str | None = None, input_options: Mapping[str, Any] | None = None,
                       host: PluginHost | None = None) -> Pipeline:
    """The pipeline :func:`transform` loads (its input, then the transforms with their options
    checked): its ``provenance()`` says what ran, options after defaults."""
    names = [name] if isinstance(name, str) else list(name)
    if not names:
        raise ConfigError("transform needs at least one transform name")
    pipe = _input_pipeline(inputs, format, input_options, host)
    h = pipe.host or get_host()
    impls = [h.registry.get("transform", n) for n in names]
    for n, opts in zip(names, _route_options(names, impls, options)):
        pipe.transforms.append(resolve_stage(h, "transform", n, opts))
    return pipe


def _route_options(names: Sequence[str], impls: Sequence[Any],
                   options: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """One options mapping per transform (see :func:`transform`)."""
    if options is not None and not isinstance(options, Mapping):
        if isinstance(options, (str, bytes)):  # "key=value": not a list of mappings either
            options_dict("transform", options)
        listed = list(options)
        if len(listed) != len(names):
            raise ConfigError(f"{len(listed)} option mappings for {len(names)} transforms")
        return [options_dict(f"transform {n!r}", o) for n, o in zip(names, listed)]
    if len(names) == 1:
        return [dict(options or {})]
    out: list[dict[str, Any]] = [{} for _ in names]
    for key, value in (options or {}).items():
        owner, dot, plain = key.rpartition(".")
        at = _instance(owner, names, key) if dot else None
        if at is not None:
            out[at][plain] = value
            continue
        takers = [i for i, impl in enumerate(impls) if key in (impl.options or {})]
        if len(takers) != 1:
            which = "none of" if not takers else "several of"
            one_name = len({names[i] for i in takers}) == 1
            named = f"NAME#K.{key}={value} (the K-th NAME)" if one_name else f"NAME.{key}={value}"
            raise ConfigError(f"option {key!r} is declared by {which} the transforms {', '.join(names)}; "
                              f"name the transform: {named}")
        out[takers[0]][key] = value
    return out


def _instance(owner: str, names: Sequence[str], key: str) -> int | None:
    """The index of the transform ``owner`` names: ``NAME`` (the first of that name) or
    ``NAME#K`` (the K-th, from 1); None when it names none (the key is then a plain key)."""
    if owner in names:
        return names.index(owner)
    name, hash_, k = owner.rpartition("#")
    if not hash_ or name not in names:
        return None
    places = [i for i, n in enumerate(names) if n == name]
    if not (k.isdigit() and 1 <= int(k) <= len(places)):
        raise ConfigError(f"option {key!r}: {name!r} is given {len(places)} time(s): K in {name}#K from 1 "
                          f"to {len(places)}")
    return places[int(k) - 1]


def written_set(traces: TraceSet, output: str | os.PathLike | None, gzip: bool, validate: bool) -> TraceSet:
    """``traces`` itself, or written to ``output`` (when valid, or ``validate`` is False) and
    opened from the files."""
    if output is None:
        return traces
    from chakra_core.trace._traceset import open_traceset

    paths = write_validated_set(traces, output, compress=gzip, validate=validate)
    return open_traceset([str(p) for p in paths])


def generate(name: str, options: Mapping[str, Any] | None = None, *, output: str | os.PathLike | None = None,
             gzip: bool = False, validate: bool = True, host: PluginHost | None = None) -> TraceSet:
    """Run the registered generator ``name`` with ``options``; the set is lazy (ranks are made
    while they are read), or, with ``output``, written there (only when valid, unless ``validate``
    is False) and opened from the files."""
    return written_set(generate_pipeline(name, options, host=host).load(), output, gzip, validate)


def generate_pipeline(name: str, options: Mapping[str, Any] | None = None, *,
                      host: PluginHost | None = None) -> Pipeline:
    """The pipeline :func:`generate` loads (the generator with its options checked): its
    ``provenance()`` says what ran, options after defaults."""
    h = host or get_host()
    return Pipeline(None, [], resolve_stage(h, "generator", name, options), host=h)


def simulate(inputs: Inputs, backend: str = "simpy", *, options: Mapping[str, Any] | None = None,
             system: str | None = None, network: str | None = None, memory: str | None = None,
             comm_groups: str | None = None, timeline: str | None = None, output: str | os.PathLike | None = None,
             format: str | None = None, input_options: Mapping[str, Any] | None = None, validate: bool = True,
             host: PluginHost | None = None) -> Result:
    """Simulate with the simulator (or emulator) backend ``backend``; write ``result.json`` under
    ``output`` when given.  With ``validate`` (the default) a set with validation errors is refused."""
    flags = {"system": system, "network": network, "memory": memory, "comm_groups": comm_groups,
             "timeline": timeline}
    return _backend_pipeline(inputs, backend, ("simulator", "emulator"), options, flags, output, format,
                             input_options, validate, host).run_backends()[0]


def simulation_pipeline(inputs: Inputs, backend: str = "simpy", *, options: Mapping[str, Any] | None = None,
                        system: str | None = None, network: str | None = None, memory: str | None = None,
                        comm_groups: str | None = None, format: str | None = None,
                        input_options: Mapping[str, Any] | None = None, validate: bool = True,
                        host: PluginHost | None = None) -> Pipeline:
    """The one-backend pipeline :func:`simulate` runs (no output directory), for a caller that
    loads the set itself (:meth:`Pipeline.load`) and hands it to :meth:`Pipeline.run_backends`."""
    flags = {"system": system, "network": network, "memory": memory, "comm_groups": comm_groups}
    return _backend_pipeline(inputs, backend, ("simulator", "emulator"), options, flags, None, format,
                             input_options, validate, host)


def emulate(inputs: Inputs, backend: str = "emulator", *, options: Mapping[str, Any] | None = None,
            system: str | None = None, network: str | None = None, memory: str | None = None,
            comm_groups: str | None = None, timeline: str | None = None, output: str | os.PathLike | None = None,
            format: str | None = None, input_options: Mapping[str, Any] | None = None, validate: bool = True,
            host: PluginHost | None = None) -> Result:
    """Replay on this machine with the emulator backend ``backend`` (docs/emulator.md); the
    system files only shape the simulated expectation the replay is compared with.  Writes
    ``result.json`` under ``output`` when given; with ``validate`` (the default) a set with
    validation errors is refused."""
    flags = {"system": system, "network": network, "memory": memory, "comm_groups": comm_groups,
             "timeline": timeline}
    return _run_one(inputs, backend, ("emulator",), options, flags, output, format, input_options, validate, host)


def export(inputs: Inputs, to: str, output: str | os.PathLike, *, options: Mapping[str, Any] | None = None,
           system: str | None = None, network: str | None = None, memory: str | None = None,
           comm_groups: str | None = None, format: str | None = None,
           input_options: Mapping[str, Any] | None = None, validate: bool = True,
           host: PluginHost | None = None) -> Result:
    """Export with the exporter backend ``to`` into the directory ``output`` (with
    ``result.json``).  With ``validate`` (the default) a set with validation errors is refused."""
    flags = {"system": system, "network": network, "memory": memory, "comm_groups": comm_groups}
    return _run_one(inputs, to, ("exporter",), options, flags, output, format, input_options, validate, host)


def _run_one(inputs: Inputs, name: str, kinds: tuple[str, ...], options: Mapping[str, Any] | None,
             flags: Mapping[str, Any], output: str | os.PathLike | None, format: str | None,
             input_options: Mapping[str, Any] | None, validate: bool, host: PluginHost | None) -> Result:
    """Run one backend as a one-backend pipeline (observer hooks, validation, provenance)."""
    return _backend_pipeline(inputs, name, kinds, options, flags, output, format, input_options, validate,
                             host).run_backends()[0]


def _backend_pipeline(inputs: Inputs, name: str, kinds: tuple[str, ...], options: Mapping[str, Any] | None,
                      flags: Mapping[str, Any], output: str | os.PathLike | None, format: str | None,
                      input_options: Mapping[str, Any] | None, validate: bool,
                      host: PluginHost | None) -> Pipeline:
    """The pipeline of the input and the one backend ``name`` (of one of ``kinds``)."""
    check_flags(validate=validate)
    host = host or get_host()
    impl = host.registry.get("backend", name)
    if impl.kind not in kinds:
        others = [e.name for e in host.registry.entries("backend") if _kind_of(e) in kinds]
        raise ConfigError(f"backend {name!r} is of kind {impl.kind!r}, not {' or '.join(map(repr, kinds))}; "
                          f"{' and '.join(k + 's' for k in kinds)}: {', '.join(others) or 'none'}")
    pipe = _input_pipeline(inputs, format, input_options, host)
    opts = _merge_flags(options, flags)
    _hint_input_options(pipe.input, impl, opts)
    stage = resolve_stage(host, "backend", name, opts)
    stage.output = Path(output) if output is not None else None
    stage.validate = validate
    pipe.backends.append(stage)
    return pipe


def _merge_flags(options: Mapping[str, Any] | None, flags: Mapping[str, Any]) -> dict[str, Any]:
    """Backend options with the keyword flags added; the same key given twice differently is refused."""
    opts = options_dict("backend", options)
    for key, value in flags.items():
        if value is None:
            continue
        if key in opts and opts[key] != value:
            raise ConfigError(f"{key!r} given twice: --{key.replace('_', '-')} {value} and -O {key}={opts[key]}")
        opts[key] = value
    return opts


def _kind_of(entry: Any) -> str | None:
    try:
        return entry.load().kind
    except Exception:  # noqa: BLE001 - a broken backend only drops out of the list
        return None


def _hint_input_options(input_stage: Stage | None, backend: Any, opts: Mapping[str, Any]) -> None:
    """Refuse a backend option that the input's own format declares, pointing to ``-I``."""
    if input_stage is None:
        return
    declared = input_stage.impl.options or {}
    for key in opts:
        if key not in (backend.options or {}) and key in declared:
            raise ConfigError(f"{key!r} is an option of the input format {input_stage.name!r}, not of backend "
                              f"{backend.name!r}: give it as an input option (-I {key}={opts[key]})")


def validate(inputs: Inputs, *, cross_rank: bool = True, format: str | None = None,
             input_options: Mapping[str, Any] | None = None, host: PluginHost | None = None) -> Validation:
    """Check every rank (streaming) and, with ``cross_rank``, their consistency
    (docs/validation.md); the result is the list of findings."""
    from chakra_core.validation._validate import CROSS_RANK_STATUS
    from chakra_core.validation._validate import validate as check

    check_flags(cross_rank=cross_rank)
    pipe = _input_pipeline(inputs, format, input_options, host)
    traces = pipe.load()
    with progress("validating", total=len(traces)) as bar:
        findings = check(traces, cross_rank=cross_rank,
                         progress=counted_then(bar, CROSS_RANK_STATUS) if cross_rank else bar)
    return Validation(findings, len(traces), pipe.provenance())


def stats(inputs: Inputs, *, longest_path: bool = True, format: str | None = None,
          input_options: Mapping[str, Any] | None = None, host: PluginHost | None = None) -> dict[str, Any]:
    """Node, communication and longest-path statistics (:func:`compute_stats`'s keys) plus
    ``provenance``."""
    from chakra_core.trace._stats import compute_stats

    check_flags(longest_path=longest_path)
    pipe = _input_pipeline(inputs, format, input_options, host)
    traces = pipe.load()
    with progress("reading", total=len(traces)) as bar:
        out = compute_stats(traces, longest_path=longest_path, progress=bar)
    out["provenance"] = pipe.provenance()
    return out


def _stale_json(target: Path, names: list[str]) -> list[str]:
    """The ranks of an earlier JSON set at prefix ``target`` (``PREFIX.RANK.json[l]``) that the
    new one, written as ``names``, does not have: removed with the publish, as convert does."""
    if names == [target.name]:  # one file named as given: no set at this prefix
        return []
    ranked = re.compile(re.escape(target.name) + r"\.[0-9]+\.jsonl?")
    return sorted(p.name for p in target.parent.glob(glob.escape(target.name) + ".*.json*")
                  if ranked.fullmatch(p.name) and p.name not in names and p.is_file())


def jsonize(inputs: Inputs, output: str | os.PathLike, *, lines: bool = False, format: str | None = None,
            input_options: Mapping[str, Any] | None = None, host: PluginHost | None = None) -> Result:
    """Write the JSON form (JSON Lines with ``lines`` or an ``output`` ending in ``.jsonl``).

    One rank: ``output`` is the file, written as :class:`atomic_output` writes (a symbolic link
    stays and its target is replaced; a FIFO or device is written into); several:
    ``output/trace.{rank}.json`` when ``output`` is a directory (or ends in ``/``), else
    ``output.{rank}.json``, published together (docs/formats.md): a failure (a full disk) leaves
    the earlier output as it was.  A ``.gz`` name is refused (the JSON form is written as
    text).  A rank read from an ``.et`` file is written from its wire bytes (``write_json`` of an
    ``EtReader``; by the compiled transcoder when the set's files hold 8 MiB or more).  A note
    names the ranks given a ``process_groups`` metadata attribute their input lacked.
    """
    from chakra_core.io._publish import commit_files, finish_interrupted, publish_files
    from chakra_core.trace._jsonset import write_set_json

    if str(output).endswith(".gz"):
        raise ConfigError("the JSON form is written as text, not gzip: name the output .json or .jsonl", str(output))
    pipe = _input_pipeline(inputs, format, input_options, host)
    traces = pipe.load()
    out = Path(output)
    lines = lines or str(output).endswith(".jsonl")
    ext = ".jsonl" if lines else ".json"
    as_dir = out.is_dir() or str(output).endswith(("/", os.sep))
    target = out / "trace" if as_dir else out
    names = [f"trace.{r}{ext}" if as_dir else out.name if len(traces) == 1 else f"{out.name}.{r}{ext}"
             for r in traces.ranks]
    with progress("writing JSON", total=len(traces)) as bar:
        if names == [target.name]:  # one file: atomic_output's own publish
            finish_interrupted(target)
            write_set_json(traces, target.parent, names, lines, bar.advance)
        else:
            with publish_files(target) as stage:
                write_set_json(traces, stage, names, lines, bar.advance)
                commit_files(stage, names, _stale_json(target, names))
    files = [str(target.parent / n) for n in names]
    return Result("jsonize", "converter", {"ranks": len(files)}, files=files, notes=_groups_note(traces),
                  provenance=pipe.provenance())


def _groups_note(traces: TraceSet) -> list[str]:
    """The note naming the ranks whose JSON metadata got the set's ``process_groups`` attribute."""
    from chakra_core.trace._jsonset import ranks_given_groups

    given = ranks_given_groups(traces)
    if not given:
        return []
    shown = ", ".join(map(str, given[:10])) + (" ..." if len(given) > 10 else "")
    return [f"rank(s) {shown}: the metadata written carries the set's process groups (attribute process_groups), "
            "which the input's metadata did not: the JSON form is self-contained, as convert writes it"]
