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
from chakra_core.analysis._graphview import draw_graph, graph_format
from chakra_core.analysis._report import Report, analyse, check_run_of, spans_of_result
from chakra_core.analysis._spans import Spans
from chakra_core.base._errors import ConfigError
from chakra_core.base._options import check_amount, check_flags, check_whole
from chakra_core.base._progress import progress
from chakra_core.host._api import Result
from chakra_core.host._plugins import PluginHost, get_host
from chakra_core.pipeline._commands import Inputs, _input_pipeline, simulation_pipeline, transform
from chakra_core.pipeline._commands import simulate as run_simulation
from chakra_core.pipeline._provenance import provenance
from chakra_core.trace._traceset import TraceSet

__all__ = ["report", "diff", "compare", "graph"]


def report(inputs: Any = None, *, result: str | os.PathLike | None = None, backend: str = "simpy",
           options: Mapping[str, Any] | None = None, system: str | None = None, network: str | None = None,
           memory: str | None = None, comm_groups: str | None = None, what_if: Sequence[str] | None = None,
           top: int = 20, threshold: float = 0.1, output: str | os.PathLike | None = None,
           format: str | None = None, input_options: Mapping[str, Any] | None = None, validate: bool = True,
           host: PluginHost | None = None) -> Report:
    """Report on a trace set (simulated with ``backend`` on the given system), on a result
    (``result``: a ``result.json`` with its ``spans.npz``), or both (the trace set then checks
    the what-if estimates by re-simulation), or on :class:`Spans` given as ``inputs`` (a
    backend's own).  ``output`` writes the HTML page there."""
    check_flags(validate=validate)
    check_whole(top=top)
    check_amount(threshold=threshold)
    if inputs is None and result is None:
        raise ConfigError("give a trace set, a result (--result RESULT.json), or both")
    if top < 0:
        raise ConfigError(f"top: {top} operators: give 0 or more")
    if isinstance(inputs, Spans):
        return analyse(inputs, what_if=what_if, top=top, threshold=threshold, source={"spans": len(inputs)})
    sim_kwargs = {"options": options, "system": system, "network": network, "memory": memory,
                  "comm_groups": comm_groups, "format": format, "input_options": input_options,
                  "validate": validate, "host": host}
    groups = None
    if result is not None:
        if inputs is None or not what_if:
            _refuse_unsimulated(dict(sim_kwargs, backend=backend), f"--result {result} (runs already made)",
                               "give the trace set with --what-if to re-simulate it")
        res_data, spans = spans_of_result(result)
        source = {"result": str(result), "backend": res_data.get("backend")}
    else:
        res, traces = _simulate_with_spans(inputs, backend, sim_kwargs)
        spans = res.spans
        source = {"traces": _describe(inputs), "backend": res.backend, "notes": res.notes}
        groups = traces.process_groups
    resim = None
    if inputs is not None and what_if:
        def resim(option: str, value: float) -> tuple[int, Spans]:
            scaled = transform(inputs, "scale", {option: value}, format=format, input_options=input_options,
                               host=host)
            kw = dict(sim_kwargs, format=None, input_options=None)
            res = _simulate_with_spans(scaled, backend, kw)[0]
            assert res.spans is not None  # kept, or an error
            return int(res.summary["finish_ns"]), res.spans
    if groups is None and inputs is not None:
        traces = _input_pipeline(inputs, format, input_options, host).load()
        check_run_of(traces, spans, str(result))
        groups = traces.process_groups
    with progress("building the report", total=1 + (output is not None), unit="step") as bar:
        bar.status("breakdown, critical path, tables")
        rep = analyse(spans, what_if=what_if, top=top, threshold=threshold, source=source, resimulate=resim,
                      groups=groups)
        bar.advance()
        if output is not None:
            bar.status("HTML page")
            rep.write_html(output)
            rep.data["html"] = str(output)
            bar.advance()
    return rep


def _describe(inputs: Any) -> Any:
    if isinstance(inputs, TraceSet):
        return inputs.source or f"{len(inputs)} ranks"
    return str(inputs) if isinstance(inputs, (str, os.PathLike)) else [str(p) for p in inputs]


def _simulate_with_spans(inputs: Any, backend: str, kwargs: Mapping[str, Any],
                         keep: bool = True) -> tuple[Result, TraceSet]:
    """Simulate (or emulate) ``inputs`` with ``backend``, asking it to keep its spans; the
    Result and the set as loaded (opened once, for the simulation and the group shapes)."""
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
    given = [flag for k, (flag, unset) in _SIMULATION_FLAGS.items() if kwargs.get(k) not in (unset, {}, [])]
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
            simulate: bool = True, format: str | None = None, input_options: Mapping[str, Any] | None = None,
            host: PluginHost | None = None) -> dict[str, Any]:
    """The fidelity report of ``b`` against ``a`` (module docstring), with ``provenance``.

    ``systems`` are system-description files (docs/system.md; one may be given as a path) both
    sets are simulated on with the simulator ``backend`` (the backend's default system when
    None; none with an emulator backend, which measures its replays on this machine);
    ``simulate=False`` leaves the ``simulated`` section out (no ``systems`` then).
    ``format``/``input_options`` apply to both inputs.
    """
    check_flags(simulate=simulate)
    if isinstance(systems, (str, os.PathLike)):
        systems = [systems]  # one system file, not a list of its characters
    if not simulate:
        _refuse_unsimulated({"system": systems, "backend": backend}, "--no-simulate (simulate=False)")
    host = host or get_host()
    if simulate and systems and host.registry.get("backend", backend).kind == "emulator":
        raise ConfigError(f"--system: backend {backend!r} replays both sets on this machine and measures their step "
                          "times there, whatever the system file says (it sets only the expected times, which "
                          "compare does not show); leave --system out, or compare on a system with a simulator "
                          "backend (--backend simpy)")
    pipes = [_input_pipeline(x, format, input_options, host) for x in (a, b)]
    sets = [p.load() for p in pipes]
    with progress("reading", total=len(sets[0]) + len(sets[1])) as bar:
        profiles = [profile_set(ts, lambda _d, _t: bar.advance()) for ts in sets]
    step_times = []
    impls: list[dict[str, Any]] = []
    kind = "simulator"
    if simulate:
        for system in (list(systems) if systems else [None]):
            ra, rb = (run_simulation(ts, backend, system=system, host=host) for ts in sets)
            step_times.append((system, int(ra.summary["finish_ns"]), int(rb.summary["finish_ns"])))
            impls, kind = ra.provenance["implementations"][-1:], ra.kind
    report = fidelity(profiles[0], profiles[1], step_times, backend, kind)
    prov = [p.provenance() for p in pipes]
    report["provenance"] = provenance([i for p in prov for i in p["inputs"]],
                                      [i for p in prov for i in p["implementations"]] + impls)
    return report


def graph(inputs: Any, output: str | os.PathLike, *, rank: int = 0, around: int | None = None, depth: int = 2,
          max_nodes: int = 2000, summary: bool | None = None, max_boxes: int = 30, format: str | None = None,
          input_options: Mapping[str, Any] | None = None, host: PluginHost | None = None) -> dict[str, Any]:
    """Draw rank ``rank``'s graph (or the ``depth``-hop neighbourhood of node id ``around``) to
    ``output``: ``.dot`` (Graphviz), ``.svg`` (drawn here, layered by dependency depth) or
    ``.graphml``.  A whole rank of more than 100 nodes (or any, with ``summary=True``) is drawn
    as a summary of at most ``max_boxes`` boxes, repeated layers folded with their counts;
    ``summary=False`` draws every node.  Returns ``{"path", "format", "rank", "nodes", "edges",
    "rank_nodes", "summary"}`` and, for a summary, ``folded``."""
    from chakra_core.pipeline._commands import _input_pipeline
    check_whole(rank=rank, depth=depth, max_nodes=max_nodes, max_boxes=max_boxes,
                **({} if around is None else {"around": around}))
    if around is not None and not 0 <= around < 1 << 64:
        raise ConfigError(f"--around {around}: a node id is a whole number from 0 to 2**64-1")
    if depth < 0 or max_nodes < 1:
        raise ConfigError(f"--depth must be >= 0 and --max-nodes >= 1, got {depth} and {max_nodes}")
    graph_format(output, depth, max_boxes)
    traces = _input_pipeline(inputs, format, input_options, host).load()
    return draw_graph(traces, output, rank=rank, around=around, depth=depth, max_nodes=max_nodes,
                      summary=summary, max_boxes=max_boxes)
