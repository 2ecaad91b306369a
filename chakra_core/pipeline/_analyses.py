"""The analysis commands: ``report``, ``diff``, ``compare`` and ``graph``.

Each resolves its inputs and, where a trace set must be run, simulates it; the numbers come from
:mod:`chakra_core.analysis`, which works on what these hand it (spans, loaded sets, reports) and
never runs anything itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chakra_core.analysis._compare import fidelity, profile_set
from chakra_core.analysis._diff import Diff, rows_report
from chakra_core.analysis._graphview import DEPTH, MAX_BOXES, draw_graph, graph_format, refuse_ignored
from chakra_core.analysis._report import Report, analyse, check_run_of, report_format, spans_of_result
from chakra_core.analysis._spans import Spans
from chakra_core.analysis._timeline_options import TIMELINE_OPTIONS
from chakra_core.base._errors import ConfigError
from chakra_core.base._inputguard import note_inputs, refuse_replacing_input
from chakra_core.base._options import check_amount, check_flags, check_whole, options_dict
from chakra_core.base._progress import progress
from chakra_core.host._api import Result
from chakra_core.host._plugins import PluginHost, get_host
from chakra_core.pipeline._commands import (
    Inputs,
    _input_paths,
    _input_pipeline,
    _merge_flags,
    simulation_pipeline,
    transform,
)
from chakra_core.pipeline._commands import simulate as run_simulation
from chakra_core.pipeline._pipeline import Pipeline, detect_format
from chakra_core.pipeline._provenance import provenance
from chakra_core.system import SYSTEM_OPTIONS, system_from_options
from chakra_core.trace._traceset import TraceSet

__all__ = ["report", "diff", "compare", "graph"]


def report(inputs: Any = None, *, result: str | os.PathLike | None = None, backend: str | None = None,
           options: Mapping[str, Any] | None = None, system: str | None = None, network: str | None = None,
           memory: str | None = None, comm_groups: str | None = None, what_if: Sequence[str] | None = None,
           top: int = 20, threshold: float = 0.1, output: str | os.PathLike | None = None,
           format: str | None = None, input_options: Mapping[str, Any] | None = None, validate: bool = True,
           host: PluginHost | None = None) -> Report:
    """Report on a trace set (simulated with ``backend``, default simpy, on the given system), on a
    result (``result``: a ``result.json`` with its ``spans.npz``), or both (the trace set then checks
    the what-if estimates by re-simulation, with the result's backend and recorded options where
    none are given), or on :class:`Spans` given as ``inputs`` (a backend's own).  ``output``
    writes the report there, by its suffix (:meth:`Report.write`)."""
    check_flags(validate=validate)
    check_whole(top=top)
    check_amount(threshold=threshold)
    if inputs is None and result is None:
        raise ConfigError("give a trace set, a result (--result RESULT.json), or both")
    if top < 0:
        raise ConfigError(f"top: {top} operators: give 0 or more")
    if isinstance(inputs, Spans):
        _check_output(output, {})
        return analyse(inputs, what_if=what_if, top=top, threshold=threshold, source={"spans": len(inputs)})
    sim_kwargs = {"options": options, "system": system, "network": network, "memory": memory,
                  "comm_groups": comm_groups, "format": format, "input_options": input_options,
                  "validate": validate, "host": host}
    if result is not None:
        spans, source, groups, rerun = _of_result(inputs, result, what_if, backend, sim_kwargs)
        _check_output(output, sim_kwargs if rerun is None else rerun[1])
    else:
        res, traces = _simulate_with_spans(inputs, backend or "simpy", sim_kwargs, output=output)
        spans, groups = res.spans, traces.process_groups
        rerun = (backend or "simpy", sim_kwargs) if what_if else None
        source = {"traces": _describe(inputs), "backend": res.backend, "notes": res.notes}
    resim = None if rerun is None else _resimulator(inputs, *rerun)
    with progress("building the report", total=1 + (output is not None), unit="step") as bar:
        bar.status("breakdown, critical path, tables")
        rep = analyse(spans, what_if=what_if, top=top, threshold=threshold, source=source, resimulate=resim,
                      groups=groups)
        bar.advance()
        if output is not None:
            bar.status(f"{report_format(output)} file")
            rep.write(output)
            if report_format(output) == "HTML":
                rep.data["html"] = str(output)
            bar.advance()
    return rep


def _of_result(inputs: Any, result: str | os.PathLike, what_if: Sequence[str] | None, backend: str | None,
               sim_kwargs: dict[str, Any]) -> tuple[Spans, dict[str, Any], Any, tuple[str, dict[str, Any]] | None]:
    """The spans of ``result``, the report's source, the process groups of the trace set
    ``inputs`` (None without one; checked to be the set the result ran) and the backend and
    keyword arguments a what-if re-simulates it with (:func:`_rerun_settings`; None without a
    trace set and a what-if)."""
    if inputs is None or not what_if:
        _refuse_unsimulated(dict(sim_kwargs, backend=backend), f"--result {result} (runs already made)",
                           "give the trace set with --what-if to re-simulate it")
    data, spans = spans_of_result(result)
    source: dict[str, Any] = {"result": str(result), "backend": data.get("backend")}
    if inputs is None:
        return spans, source, None, None
    traces = _input_pipeline(inputs, sim_kwargs["format"], sim_kwargs["input_options"], sim_kwargs["host"]).load()
    recorded = _recorded_options(data)
    check_run_of(traces, spans, str(result), sizes=data.get("kind") == "simulator",
                 durations=data.get("kind") == "simulator" and _replays_compute(recorded))
    if not what_if:
        return spans, source, traces.process_groups, None
    name, kwargs, note = _rerun_settings(data, recorded, result, backend, sim_kwargs)
    source["notes"] = [note]
    return spans, source, traces.process_groups, (name, kwargs)


def _resimulator(inputs: Any, backend: str, sim_kwargs: Mapping[str, Any]) -> Any:
    """``resim(option, value)``: the finish (ns) and spans of ``inputs`` scaled by the ``scale``
    transform's ``option`` and simulated with ``backend`` and ``sim_kwargs``."""
    def resim(option: str, value: float) -> tuple[int, Spans]:
        scaled = transform(inputs, "scale", {option: value}, format=sim_kwargs["format"],
                           input_options=sim_kwargs["input_options"], host=sim_kwargs["host"])
        res = _simulate_with_spans(scaled, backend, dict(sim_kwargs, format=None, input_options=None))[0]
        assert res.spans is not None  # kept, or an error
        return int(res.summary["finish_ns"]), res.spans
    return resim


#: the options of a backend that say what it writes, not how it runs: not those of a re-simulation
_OUTPUT_OPTIONS = ("spans", *TIMELINE_OPTIONS)


def _recorded_options(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The options the backend of the result ``data`` ran with (from its provenance), less those
    of its outputs; None where the result records none."""
    prov = data.get("provenance")
    impls = prov.get("implementations") if isinstance(prov, dict) else None
    for impl in impls if isinstance(impls, list) else []:
        if (isinstance(impl, dict) and impl.get("stage") == "backend" and impl.get("name") == data.get("backend")
                and isinstance(impl.get("options"), dict)):
            return {k: v for k, v in impl["options"].items() if k not in _OUTPUT_OPTIONS}
    return None


def _missing_system_file(options: Mapping[str, Any]) -> str | None:
    """The first of the system-description options in ``options`` that names no file here."""
    return next((k for k in SYSTEM_OPTIONS if isinstance(options.get(k), str) and not Path(options[k]).is_file()),
                None)


def _replays_compute(recorded: Mapping[str, Any] | None) -> bool:
    """Whether the system recorded in a result's options (its files still here) times compute
    by the nodes' durations (the replay compute model); False where that cannot be told."""
    if recorded is None or _missing_system_file(recorded):
        return False
    try:
        return system_from_options(recorded).compute_model == "replay"
    except ConfigError:  # a system file changed since into one that does not load: not told
        return False


def _rerun_settings(data: Mapping[str, Any], recorded: dict[str, Any] | None, result: str | os.PathLike,
                    backend: str | None, sim_kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any], str]:
    """The backend, the keyword arguments and a note saying on what system of a what-if's
    re-simulation of the set the result ``data`` ran: the result's backend and the options it
    recorded (those the backend takes), with the backend and options given over them (a
    system description given replaces the recorded one whole); a ConfigError naming what to
    give where the result records no system that can be used."""
    given = _merge_flags(sim_kwargs["options"], {k: sim_kwargs[k] for k in SYSTEM_OPTIONS})
    own_system = any(given.get(k) is not None for k in SYSTEM_OPTIONS)
    name = backend or str(data.get("backend") or "simpy")
    declared = (sim_kwargs["host"] or get_host()).registry.get("backend", name).options or {}
    if recorded is None and not own_system:
        raise ConfigError("--what-if: the result records no options of its backend (no provenance), so not the "
                          "system it ran on: give that system with --system (and --network, --memory, "
                          "--comm-groups as it ran) to re-simulate", str(result))
    base = {k: v for k, v in (recorded or {}).items() if k in declared and not (own_system and k in SYSTEM_OPTIONS)}
    missing = _missing_system_file(base)
    if missing:
        flag = "--" + missing.replace("_", "-")
        raise ConfigError(f"--what-if: the result ran on {flag} {base[missing]}, which is not a file here: give "
                          f"{flag} FILE (the one it ran on, or another) to re-simulate", str(result))
    opts = {**base, **given}
    return name, dict(sim_kwargs, options=opts, **dict.fromkeys(SYSTEM_OPTIONS)), _rerun_note(name, opts, recorded,
                                                                                              given, own_system)


def _rerun_note(name: str, opts: Mapping[str, Any], recorded: Mapping[str, Any] | None, given: Mapping[str, Any],
                own_system: bool) -> str:
    """What a what-if's re-simulation of a result's set ran on (:func:`_rerun_settings`)."""
    system = ", ".join(f"--{k.replace('_', '-')} {_shown(opts[k])}" for k in SYSTEM_OPTIONS if opts.get(k) is not None)
    whose = "the system given" if own_system else "the result's system"
    default = f"{name}'s default"
    said = f"what-if re-simulated with {name} on {whose} ({system or default})"
    if recorded is not None:
        said += ", with the result's other options" if own_system else " and options"
    others = [f"{k}={v}" for k, v in given.items() if k not in SYSTEM_OPTIONS]
    return said + (f"; -O {' '.join(others)} given" if others else "")


def _shown(value: Any) -> str:
    """A system option's value as said in a note: its path, or ``(inline)`` for a mapping."""
    return "(inline)" if isinstance(value, dict) else str(value)


def _check_output(output: str | os.PathLike | None, sim_kwargs: Mapping[str, Any]) -> None:
    """Refuse a report file ``output`` over an input (in the command line's guard: those read, and
    the system files of ``sim_kwargs``, which a backend reads as it runs) or of a suffix no report
    is written in (:func:`report_format`), before the work is done."""
    if output is None:
        return
    opts = sim_kwargs.get("options") or {}
    named = [sim_kwargs.get(k) or (opts.get(k) if isinstance(opts, Mapping) else None) for k in SYSTEM_OPTIONS]
    note_inputs([str(f) for f in named if isinstance(f, (str, os.PathLike))])
    refuse_replacing_input(output)
    report_format(output)


def _describe(inputs: Any) -> Any:
    if isinstance(inputs, TraceSet):
        return inputs.source or f"{len(inputs)} ranks"
    return str(inputs) if isinstance(inputs, (str, os.PathLike)) else [str(p) for p in inputs]


def _simulate_with_spans(inputs: Any, backend: str, kwargs: Mapping[str, Any], keep: bool = True,
                         output: str | os.PathLike | None = None) -> tuple[Result, TraceSet]:
    """Simulate (or emulate) ``inputs`` with ``backend``, asking it to keep its spans; the
    Result and the set as loaded (opened once, for the simulation and the group shapes).  The
    report file ``output`` is checked once the set is read, before it runs (:func:`_check_output`)."""
    host = kwargs.get("host") or get_host()
    impl = host.registry.get("backend", backend)
    opts = dict(kwargs.get("options") or {})
    if keep:
        if "spans" not in (impl.options or {}):
            raise ConfigError(f"backend {backend!r} keeps no spans (it has no 'spans' option): report on its "
                              "result.json if it writes spans.npz, or use a backend that does (simpy)")
        opts["spans"] = True
    pipe = simulation_pipeline(inputs, backend, **dict(kwargs, options=opts, host=host))
    traces = pipe.load()
    _check_output(output, kwargs)
    res = pipe.run_backends(traces)[0]
    if keep and res.spans is None:
        raise ConfigError(f"backend {backend!r} returned no spans")
    return res, traces


#: the settings of the simulation a report or diff runs on a trace set, as their flags, with
#: their values when not given (``backend``: the default simulator)
_SIMULATION_FLAGS = {"backend": ("--backend", "simpy"), "system": ("--system", None),
                     "network": ("--network", None), "memory": ("--memory", None),
                     "comm_groups": ("--comm-groups", None), "options": ("-O", None)}


def _refuse_unsimulated(kwargs: Mapping[str, Any], why: str, instead: str = "") -> None:
    """Refuse simulation settings in ``kwargs`` where nothing is simulated (``why`` says what
    was given, ``instead`` what would simulate): they would be ignored without a word."""
    given = [flag for k, (flag, unset) in _SIMULATION_FLAGS.items() if kwargs.get(k) not in (unset, None, {}, [])]
    if given:
        one = len(given) == 1
        alternative = f", or {instead}" if instead else ""
        raise ConfigError(f"{', '.join(given)}: nothing is simulated with {why}, so {'this' if one else 'these'} "
                          f"would be ignored; leave {'it' if one else 'them'} out{alternative}")


def _is_result_file(x: Any) -> bool:
    """Whether ``x`` names a ``result.json`` file."""
    return isinstance(x, (str, os.PathLike)) and Path(x).is_file() and str(x).endswith(".json") and _is_result(Path(x))


def _side(x: Any, kwargs: Mapping[str, Any]) -> Report:
    """A report of a Report, Spans, a result.json (with its spans) or a trace set."""
    if isinstance(x, Report):
        return x
    if _is_result_file(x):
        try:
            return report(result=x)
        except ConfigError as e:
            if "no spans" not in str(e):
                raise
            return rows_report(Path(x))
    return report(x, **kwargs)


def _is_result(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(4096)
    return b'"summary"' in head or b'"backend"' in head


def diff(a: Any, b: Any, *, backend: str = "simpy", options: Mapping[str, Any] | None = None,
         system: str | None = None, network: str | None = None, memory: str | None = None,
         comm_groups: str | None = None, format: str | None = None,
         input_options: Mapping[str, Any] | None = None, validate: bool = True,
         host: PluginHost | None = None) -> Diff:
    """Compare two runs: each of ``a`` and ``b`` is a trace set (simulated with ``backend`` on
    the given system), a ``result.json`` (with its spans; without them, e.g. ``astrasim-run``'s,
    the totals come from its rows), a :class:`Report` or :class:`Spans`."""
    check_flags(validate=validate)
    kwargs = {"backend": backend, "options": options, "system": system, "network": network, "memory": memory,
              "comm_groups": comm_groups, "format": format, "input_options": input_options,
              "validate": validate, "host": host}
    if all(isinstance(x, (Report, Spans)) or _is_result_file(x) for x in (a, b)):
        _refuse_unsimulated(kwargs, "two results (runs already made)",
                            "give a trace set in place of a result to simulate it")
    return Diff(_side(a, kwargs), _side(b, kwargs))


def compare(a: Inputs, b: Inputs, *, systems: Sequence[str] | str | None = None, backend: str = "simpy",
            options: Mapping[str, Any] | None = None, simulate: bool = True, format: str | None = None,
            input_options: Mapping[str, Any] | None = None, host: PluginHost | None = None) -> dict[str, Any]:
    """The fidelity report of ``b`` against ``a`` (module docstring), with ``provenance``.

    ``systems`` are system-description files (docs/system.md; one may be given as a path) both
    sets are simulated on with the simulator ``backend`` and its ``options`` (the backend's
    default system when None; none with an emulator backend, which measures its replays on this
    machine); ``simulate=False`` leaves the ``simulated`` section out (no ``systems`` or
    ``options`` then).  ``format`` applies to both inputs; each of ``input_options`` to the input
    whose format declares it (one that neither format declares is refused).
    """
    check_flags(simulate=simulate)
    if isinstance(systems, (str, os.PathLike)):
        systems = [systems]  # one system file, not a list of its characters
    if not simulate:
        _refuse_unsimulated({"system": systems, "backend": backend, "options": options},
                            "--no-simulate (simulate=False)")
    host = host or get_host()
    if simulate and systems and host.registry.get("backend", backend).kind == "emulator":
        raise ConfigError(f"--system: backend {backend!r} replays both sets on this machine and measures their step "
                          "times there, whatever the system file says (it sets only the expected times, which "
                          "compare does not show); leave --system out, or compare on a system with a simulator "
                          "backend (--backend simpy)")
    pipes = _compared_inputs({"A": a, "B": b}, format, input_options, host)
    sets = [p.load() for p in pipes]
    with progress("reading", total=len(sets[0]) + len(sets[1])) as bar:
        profiles = [profile_set(ts, lambda _d, _t: bar.advance()) for ts in sets]
    step_times = []
    impls: list[dict[str, Any]] = []
    kind = "simulator"
    if simulate:
        for system in (list(systems) if systems else [None]):
            ra, rb = (run_simulation(ts, backend, system=system, options=options, host=host) for ts in sets)
            step_times.append((system, int(ra.summary["finish_ns"]), int(rb.summary["finish_ns"])))
            impls, kind = ra.provenance["implementations"][-1:], ra.kind
    report = fidelity(profiles[0], profiles[1], step_times, backend, kind)
    prov = [p.provenance() for p in pipes]
    report["provenance"] = provenance([i for p in prov for i in p["inputs"]],
                                      [i for p in prov for i in p["implementations"]] + impls)
    return report


def _compared_inputs(sides: Mapping[str, Inputs], format: str | None, input_options: Mapping[str, Any] | None,
                     host: PluginHost) -> list[Pipeline]:
    """The input pipelines of ``sides`` (``{"A": inputs, "B": inputs}``): each gets the
    ``input_options`` its format declares; an option that no side's format declares is a
    ConfigError naming each side's format, and an error of one side names the side."""
    formats = {side: _format_of(x, format, host) for side, x in sides.items()}
    declared = {side: set(host.registry.get("format", f).options) if f else set() for side, f in formats.items()}
    given = options_dict("input_options", input_options)
    for key in given:
        if not any(key in names for names in declared.values()):
            said = "; ".join(f"{side}'s {f'input format {formats[side]!r}' if formats[side] else 'opened set'} "
                             f"({_shown_inputs(x)}) accepts {', '.join(sorted(declared[side])) or 'none'}"
                             for side, x in sides.items())
            raise ConfigError(f"-I {key}: no input declares this option; {said}")
    pipes = []
    for side, x in sides.items():
        mine = {k: v for k, v in given.items() if k in declared[side]}
        try:
            pipes.append(_input_pipeline(x, formats[side] if formats[side] else format, mine, host))
        except ConfigError as e:
            raise ConfigError(e.message, e.where or f"{side} ({_shown_inputs(x)})", e.location) from None
    return pipes


def _format_of(inputs: Inputs, format: str | None, host: PluginHost) -> str | None:
    """The input format of ``inputs``: ``format``, else the detected one; None for an opened set."""
    if isinstance(inputs, TraceSet):
        return None
    return format or detect_format(_input_paths(inputs), host)


def _shown_inputs(inputs: Inputs) -> str:
    """``inputs`` as the user gave them, for a message: a path, or the first of a list and how many."""
    if isinstance(inputs, TraceSet):
        return "an opened TraceSet"
    paths = _input_paths(inputs)
    return paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"


def graph(inputs: Any, output: str | os.PathLike, *, rank: int = 0, around: int | None = None,
          depth: int | None = None, max_nodes: int = 2000, summary: bool | None = None, max_boxes: int | None = None,
          format: str | None = None, input_options: Mapping[str, Any] | None = None,
          host: PluginHost | None = None) -> dict[str, Any]:
    """Draw rank ``rank``'s graph (or the ``depth``-hop neighbourhood of node id ``around``;
    ``depth`` None: 2 hops) to ``output``: ``.dot`` (Graphviz), ``.svg`` (drawn here, layered by
    dependency depth) or ``.graphml``.  A whole rank of more than 100 nodes (or any, with
    ``summary=True``) is drawn as a summary of at most ``max_boxes`` boxes (None: 30), repeated
    layers folded with their counts; ``summary=False`` draws every node.  A ``depth`` or
    ``max_boxes`` given (not None), whatever its value, or a ``summary`` with ``around``, that the
    drawing would ignore is refused, and so is a rank with two nodes of one id.  Returns
    ``{"path", "format", "rank", "nodes", "edges", "rank_nodes", "summary", "missing_deps"}`` with
    ``depth`` for a neighbourhood and ``max_boxes`` and ``folded`` for a summary (the values
    drawn with)."""
    given = {name: value for name, value in (("around", around), ("depth", depth), ("max_boxes", max_boxes))
             if value is not None}
    check_whole(rank=rank, max_nodes=max_nodes, **given)
    if around is not None and not 0 <= around < 1 << 64:
        raise ConfigError(f"--around {around}: a node id is a whole number from 0 to 2**64-1")
    if (depth is not None and depth < 0) or max_nodes < 1:
        raise ConfigError(f"--depth must be >= 0 and --max-nodes >= 1, got {depth} and {max_nodes}")
    graph_format(output, DEPTH if depth is None else depth, MAX_BOXES if max_boxes is None else max_boxes)
    refuse_ignored(around, summary, depth, max_boxes)
    traces = _input_pipeline(inputs, format, input_options, host).load()
    return draw_graph(traces, output, rank=rank, around=around, depth=depth, max_nodes=max_nodes,
                      summary=summary, max_boxes=max_boxes)
