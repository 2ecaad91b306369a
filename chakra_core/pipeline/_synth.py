"""The Python API of ``chakra synth fit|sample|show``: one call each, as the CLI.

A model is the JSON a synthesizer's ``fit`` returns; the file records which synthesizer made it
(``"synthesizer"``), so that ``sample`` and ``show`` need no name.  See docs/synth.md.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from chakra_core.base._docparse import decode_text, parse_json
from chakra_core.base._errors import ChakraError, ConfigError, PluginError, TraceFormatError
from chakra_core.base._limits import check_limit
from chakra_core.base._progress import progress
from chakra_core.host._api import Result
from chakra_core.host._plugins import PluginHost, get_host
from chakra_core.io._etio import atomic_output
from chakra_core.pipeline._commands import Inputs, _input_pipeline, _merge_flags
from chakra_core.pipeline._pipeline import Stage, resolve_stage
from chakra_core.pipeline._provenance import implementation, provenance
from chakra_core.trace._attrs import attr_value
from chakra_core.trace._traceset import TraceSet

__all__ = ["synth_fit", "synth_sample", "synth_show", "read_model"]



#: the synthesizer ``synth_fit`` takes when none is named, and what its note says of it
DEFAULT_SYNTHESIZER = "structural"
_DEFAULT_NOTE = ("synthesizer 'structural' (the default): its samples keep their source's node sequence and most of "
                 "its numbers; --synthesizer learned (synthesizer='learned') shares less (docs/synth.md, Privacy)")


def synth_fit(inputs: Sequence[Inputs], output: str | os.PathLike, *, synthesizer: str | None = None,
              options: Mapping[str, Any] | None = None, format: str | None = None,
              input_options: Mapping[str, Any] | None = None, host: PluginHost | None = None) -> Result:
    """Fit ``synthesizer`` on the trace sets ``inputs`` (each item one set, in any registered
    input format, or ``@FILE``: a list file of sets, :func:`_expand_lists`) and write the model as
    JSON to ``output`` (atomically).  Parameters a list file gives its sets reach the synthesizer
    as the option ``params`` (one mapping per set).

    ``synthesizer`` None is :data:`DEFAULT_SYNTHESIZER`, and a note says so.
    ``summary`` holds ``workloads`` (sets fitted) and ``model_bytes``; ``files`` the model path.
    """
    host = host or get_host()
    notes = [_DEFAULT_NOTE] if synthesizer is None else []
    synthesizer = DEFAULT_SYNTHESIZER if synthesizer is None else synthesizer
    if isinstance(inputs, (str, os.PathLike)) or not inputs:
        raise ConfigError("give a list of trace sets to fit (one item per set)")
    inputs, given, origins = _expand_lists(inputs)
    if any(given):
        options = {**(options or {}), "params": given}
    stage = resolve_stage(host, "synthesizer", synthesizer, options)
    _refuse_other_step(stage, set(options or {}), "fit")
    pipes = []
    with progress("reading", total=len(inputs)) as bar:
        corpus = []
        for item, origin in zip(inputs, origins):
            with _listed_at(origin):
                pipes.append(_input_pipeline(item, format, input_options, host))
                corpus.append(pipes[-1].load())
            bar.advance()
    model = stage.impl.fit(corpus, stage.options)
    model.setdefault("synthesizer", stage.name)
    text = json.dumps(model, separators=(",", ":"), sort_keys=True) + "\n"
    path = Path(output)
    with atomic_output(path) as tmp:
        tmp.write_text(text)
    inputs_seen = [x for p in pipes for x in p.provenance()["inputs"]]
    impls = [i for p in pipes for i in p.provenance()["implementations"]] + [_impl(stage)]
    return Result("synth-fit", "synthesizer", {"workloads": len(corpus), "model_bytes": len(text)},
                  files=[str(path)], notes=notes, provenance=provenance(inputs_seen, impls))


def _expand_lists(inputs: Sequence[Inputs]) -> tuple[list[Inputs], list[dict[str, Any]], list[tuple[str, int] | None]]:
    """The sets of ``inputs`` with ``@FILE`` items replaced by the sets the file lists, one per
    line: ``PATH [KEY=NUMBER ...]`` (``#`` starts a comment; a relative PATH is taken from the
    file's folder; a list does not name other lists), per set the parameters its line gives
    (empty for other items), and per set its list file and line (None for other items)."""
    sets: list[Inputs] = []
    given: list[dict[str, Any]] = []
    origins: list[tuple[str, int] | None] = []
    for item in inputs:
        if not (isinstance(item, str) and item.startswith("@")):
            sets.append(item)
            given.append({})
            origins.append(None)
            continue
        path = Path(item[1:])
        try:
            text = decode_text(path.read_bytes(), str(path))
        except OSError as e:
            raise ConfigError(f"cannot read the list of trace sets ({e.strerror or e})", str(path)) from None
        for number, line in enumerate(text.splitlines(), 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if words[0].startswith("@"):
                raise ConfigError(f"{words[0]!r}: a list file names trace sets, not other lists; list that "
                                  "file's sets here, or give it as another @FILE argument", str(path),
                                  f"line {number}")
            sets.append(str(path.parent / words[0]))
            given.append(_line_params(words[1:], str(path), number))
            origins.append((str(path), number))
    if not sets:
        lists = [i[1:] for i in inputs if isinstance(i, str) and i.startswith("@")]
        raise ConfigError("the list of trace sets names no set", lists[0] if lists else None)
    return sets, given, origins


@contextlib.contextmanager
def _listed_at(origin: tuple[str, int] | None) -> Iterator[None]:
    """Run the block that opens one set; an error about a set that a list file names is raised
    again prefixed with the list file and the line (``LIST:line N: SET: message``)."""
    try:
        yield
    except ChakraError as e:
        if origin is None:
            raise
        raise type(e)(str(e), origin[0], f"line {origin[1]}") from None


def _line_params(words: Sequence[str], where: str, number: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for w in words:
        key, eq, value = w.partition("=")
        try:
            number_value = float(value)
        except ValueError:
            number_value = float("nan")
        if not eq or not key or not (abs(number_value) < 2 ** 63):
            raise ConfigError(f"{w!r}: wants KEY=NUMBER after the path", where, f"line {number}")
        if key in out:
            raise ConfigError(f"{key!r} is given twice", where, f"line {number}")
        out[key] = int(number_value) if number_value.is_integer() else number_value
    return out


def read_model(model: str | os.PathLike | Mapping[str, Any]) -> dict[str, Any]:
    """A model from a JSON file (or the mapping itself); a ConfigError naming the file when it
    is not a JSON object with a ``synthesizer``."""
    where = None
    if isinstance(model, Mapping):
        obj: Any = dict(model)
    else:
        where = str(model)
        try:
            data = Path(model).read_bytes()
        except OSError as e:
            raise ConfigError(f"cannot read the model ({e.strerror or e})", where) from None
        obj = parse_json(decode_text(data, where), where)
    if not isinstance(obj, dict) or not isinstance(obj.get("synthesizer"), str):
        raise ConfigError("not a synthesizer model (a JSON object with a \"synthesizer\" name)", where)
    return obj


def _stage(host: PluginHost, model: Mapping[str, Any], options: Mapping[str, Any] | None,
           where: str | None = None) -> Stage:
    """The stage of the synthesizer that fitted ``model`` (a PluginError naming the model file
    ``where`` when none of that name is installed)."""
    try:
        return resolve_stage(host, "synthesizer", str(model["synthesizer"]), options)
    except PluginError as e:
        if e.where is None:
            e.where = where
        raise


def _refuse_other_step(stage: Stage, given: set[str], step: str) -> None:
    """Refuse an option given to ``step`` ("fit" or "sample") that the synthesizer uses only in the
    other step (its ``fit_options`` names those of fit, the others are sample's; a synthesizer
    without ``fit_options`` is not checked)."""
    fit_only = getattr(stage.impl, "fit_options", None)
    if fit_only is None:
        return
    for key in sorted(given):
        other = "fit" if key in fit_only else "sample"
        if other != step:
            raise ConfigError(f"option {key!r} is a {other} option of synthesizer {stage.name!r}: give it to "
                              f"'chakra synth {other}' (synth_{other}), not to {step}")


def _impl(stage: Stage) -> dict[str, Any]:
    return implementation("synthesizer", stage.entry, stage.options)


def synth_sample(model: str | os.PathLike | Mapping[str, Any], output: str | os.PathLike, *,
                 seed: int | None = None, ranks: int | None = None, options: Mapping[str, Any] | None = None,
                 gzip: bool = False, validate: bool = True, host: PluginHost | None = None) -> Result:
    """Generate a trace set from ``model`` (a model file or mapping) with the synthesizer that
    fitted it and write it to ``output`` (a directory: ``trace.{rank}.et``; else a prefix), all
    ranks published together.  ``seed`` and ``ranks`` are the synthesizer's options of those
    names, ``options`` any others (``nodes_per_rank``, ...); ``summary`` is ``{"ranks": N}``.
    The set is validated before it is written (a TraceFormatError and nothing written when it
    has errors) unless ``validate`` is false."""
    host = host or get_host()
    m = read_model(model)
    where = None if isinstance(model, Mapping) else str(model)
    stage = _stage(host, m, _merge_flags(options, {"seed": seed, "ranks": ranks}), where)
    given = set(options or {}) | {k for k, v in (("seed", seed), ("ranks", ranks)) if v is not None}
    _refuse_other_step(stage, given, "sample")
    picked = stage.options.get("seed")
    if isinstance(picked, int) and not 0 <= picked < 2 ** 63:
        raise ConfigError(f"seed {picked}: give a seed from 0 to 2**63-1")
    if isinstance(stage.options.get("ranks"), int):
        check_limit("npus", stage.options["ranks"], "ranks", error=ConfigError)
    try:
        traces = stage.impl.generate(m, stage.options)
    except ChakraError as e:
        if e.where is None:
            e.where = where
        raise
    if validate:
        _refuse_invalid(traces, where)
    with progress("writing", total=len(traces)) as bar:
        paths = traces.write(output, compress=gzip, progress=bar, replace_stale=True)
    inputs = [] if isinstance(model, Mapping) else [str(model)]
    return Result("synth-sample", "synthesizer", {"ranks": len(paths)}, files=[str(p) for p in paths],
                  notes=_defaults_note(stage, given, traces), provenance=provenance(inputs, [_impl(stage)]))


def _defaults_note(stage: Stage, given: set[str], traces: TraceSet) -> list[str]:
    """A note naming the sampling defaults taken: each sample option not given that has a value,
    the value the sample records in its metadata where it records one (the workload a target
    picks, say) and the rank count; options without a value (the model's size, no target) are
    not named."""
    recorded = {a.name: attr_value(a)[1] for a in traces[traces.ranks[0]].metadata().attr}
    fit_only: frozenset[str] = getattr(stage.impl, "fit_options", frozenset())
    taken = []
    for key, value in stage.options.items():
        shown = recorded.get(key, value)
        if key not in given and key not in fit_only and key != "ranks" and shown is not None:
            taken.append(f"{key}={shown}")
    if "ranks" not in given:
        taken.append(f"ranks={len(traces)} (the model's)")
    return [f"defaults taken: {', '.join(taken)}"] if taken else []


def _refuse_invalid(traces, where: str | None) -> None:
    """Raise TraceFormatError (the first error and the count) when the sample has validation errors."""
    from chakra_core.validation._validate import validate

    with progress("validating", total=len(traces)) as bar:
        errors = [f for f in validate(traces, progress=bar) if f.severity == "error"]
    if errors:
        raise TraceFormatError(f"the sampled set has {sum(f.count for f in errors)} validation error(s), so it was "
                               f"not written; the first: {errors[0]} (--no-validate writes it anyway)", where)


def synth_show(model: str | os.PathLike | Mapping[str, Any], *, host: PluginHost | None = None) -> dict[str, Any]:
    """What ``model`` holds, as the synthesizer that fitted it describes it
    (:meth:`Synthesizer.describe`)."""
    host = host or get_host()
    m = read_model(model)
    where = None if isinstance(model, Mapping) else str(model)
    stage = _stage(host, m, None, where)
    try:
        return stage.impl.describe(m)
    except ChakraError as e:
        if e.where is None:
            e.where = where
        raise
