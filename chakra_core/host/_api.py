"""Base classes that plugin implementations subclass, and the Result a backend returns."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from chakra_core.base._options import Option, check_options
from chakra_core.trace._traceset import TraceSet

__all__ = ["Component", "InputFormat", "Transform", "Backend", "Synthesizer", "Generator", "Executor", "Result",
           "BACKEND_KINDS"]

BACKEND_KINDS = ("simulator", "exporter", "emulator")


class Component(ABC):
    """Common part of every implementation: a registered name, a description and options.

    Declare options as a class attribute ``options = {"name": Option(...)}``; the default
    :meth:`check_options` validates against it.  Override it for cross-option checks (call
    ``super().check_options`` first).
    """

    name: str = ""
    qualified_name: str = ""
    description: ClassVar[str] = ""
    options: ClassVar[Mapping[str, Option]] = {}

    def check_options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validate user options and return them with defaults filled in (raises ConfigError)."""
        return check_options(f"{self.kind_label} {self.name!r}", self.options, options)

    kind_label: ClassVar[str] = "plugin"


class InputFormat(Component):
    """Turns files of some format into a :class:`TraceSet`.

    Set ``per_rank = True`` when the ranks convert independently: the set :meth:`open` returns
    builds each rank only when its nodes are read, and any process that opens the same paths
    with the same options gets the same set.  ``chakra convert -j N`` and sweeps then convert
    the ranks in parallel, each worker opening the input and writing its share of the ranks.
    Set ``reads_in_place = True`` when the format's files are already Chakra ETs.
    """

    kind_label = "input format"
    per_rank: ClassVar[bool] = False
    #: True when :meth:`open` reads the files where they are, converting nothing (Chakra ``.et``
    #: files): a pipeline without transforms then needs no converted copy of them.
    reads_in_place: ClassVar[bool] = False

    @abstractmethod
    def open(self, paths: Sequence[str], options: Mapping[str, Any]) -> TraceSet:
        """Open ``paths`` as a trace set; ``options`` went through :meth:`check_options`.

        Bad input raises :class:`chakra_core.TraceFormatError` naming file and place.
        """


class Transform(Component):
    """Rewrites a trace set (what-if scaling, obfuscation, filtering).

    Set ``per_rank = True`` when each rank of the result depends only on the same rank of the
    input (and the options), so that a conversion fanned out per rank may apply it
    (:attr:`InputFormat.per_rank`).
    """

    kind_label = "transform"
    per_rank: ClassVar[bool] = False

    @abstractmethod
    def apply(self, traces: TraceSet, options: Mapping[str, Any]) -> TraceSet:
        """Return the transformed set (preferably lazily, with :meth:`TraceSet.map_nodes`)."""


class Backend(Component):
    """Consumes a trace set: a simulator, an exporter or an emulator (see ``kind``)."""

    kind: ClassVar[str] = ""  # a subclass must say: "simulator", "exporter" or "emulator"
    kind_label = "backend"

    @abstractmethod
    def run(self, traces: TraceSet, options: Mapping[str, Any], output: Path | None) -> Result:
        """Run on ``traces``; write files under ``output`` (a directory, may be None)."""

    def loads_compiled(self, traces: TraceSet, options: Mapping[str, Any]) -> bool:
        """Whether :meth:`run` on ``traces`` with ``options`` (checked) loads the core's compiled
        loops (numba) whatever comes before it: the validation before the run then takes them
        too, on a set a validation alone reads as Python (under 8 MiB of ``.et`` files,
        docs/validation.md), since loading numba is paid once.  Answer from the set's sizes, not
        by reading it; False (the default) when not sure."""
        return False

    def algorithms(self) -> tuple[str, ...]:
        """Names of the collective algorithms this backend models besides ASTRA-sim's
        (:data:`chakra_core.system.ALGORITHMS`): a system description given to it may name them
        in its ``*-implementation`` keys (pass them to ``system_from_options``).  None by default."""
        return ()


class Synthesizer(Component):
    """Learns the statistics of a corpus of ETs and generates new ones."""

    kind_label = "synthesizer"

    @abstractmethod
    def fit(self, corpus: Sequence[TraceSet], options: Mapping[str, Any]) -> dict[str, Any]:
        """Learn a JSON-serializable model from ``corpus``."""

    @abstractmethod
    def generate(self, model: Mapping[str, Any], options: Mapping[str, Any]) -> TraceSet:
        """Generate a new trace set from ``model`` (reproducible for a given ``seed`` option)."""

    def describe(self, model: Mapping[str, Any]) -> dict[str, Any]:
        """What ``model`` holds, as JSON-able data for ``chakra synth show`` (by default its
        top-level keys with the type and length of each value)."""
        return {"synthesizer": model.get("synthesizer", self.name),
                "keys": {k: {"type": type(v).__name__, **({"items": len(v)} if isinstance(v, (list, dict)) else {})}
                         for k, v in model.items()}}


class Generator(Component):
    """Builds a trace set from a description of a job (a model, its parallelism), not from files."""

    kind_label = "generator"

    @abstractmethod
    def generate(self, options: Mapping[str, Any]) -> TraceSet:
        """Return the generated set (preferably lazy: ranks produced while they are written);
        ``options`` went through :meth:`check_options`."""


class Executor(Component):
    """Runs the points of a sweep: a process pool, a Ray or a Dask cluster.

    Declare a ``workers`` option (how many points run at once; ``chakra sweep -j N`` sets it).
    Import the engine inside :meth:`map`, not at module level, so that listing plugins stays fast.
    """

    kind_label = "executor"

    @abstractmethod
    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any],
            options: Mapping[str, Any]) -> Iterator[tuple[int, Any]]:
        """Call ``fn(task)`` for every task, several at once, and yield ``(index, value)`` as each
        finishes (in any order), ``index`` being the task's position in ``tasks``.

        ``fn`` is a picklable module-level function that never raises for a failing point (it
        returns the point's record with the error, and enforces the point's timeout itself);
        ``tasks`` are picklable.  Yield an exception instance as the value for a task the engine
        lost (a worker died); raise only when the cluster itself cannot be used, as
        :class:`chakra_core.PluginError` or :class:`chakra_core.ConfigError` naming the option.  Stop the
        work in flight when the generator is closed (the sweep was interrupted).

        A task with a ``timeout_s`` attribute (seconds, or None) is interrupted by ``fn`` itself
        when it runs past it; an executor that can kill a worker should also kill one still
        running the task well after that (a call stuck in native code) and yield a
        :class:`TimeoutError` instance as its value.
        """

    @contextmanager
    def session(self, options: Mapping[str, Any]) -> Iterator[None]:
        """Keep the engine up for several :meth:`map` calls with the same ``options`` (a local
        cluster started once, a pool kept warm); by default nothing is kept."""
        yield


@dataclass
class Result:
    """What a backend returns: summary numbers, files written, and an optional timeline.

    ``summary`` states its units in key names (``finish_ns``, ``bytes``); ``ranks`` holds one
    dict per rank for simulators (``{"rank", "finish_ns", "exposed_comm_ns", ...}``).
    ``provenance`` is filled in by the runner, not by the backend: chakra-core's version, the
    implementations that took part (qualified name, distribution, version, options after
    defaults), the inputs as given and the command line or pipeline file (docs/pipelines.md).
    ``spans`` (a :class:`chakra_core.Spans`, or None) holds what a simulator or emulator timed,
    when asked to keep it (docs/report.md).
    """

    backend: str
    kind: str
    summary: dict[str, Any] = field(default_factory=dict)
    ranks: list[dict[str, Any]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    timeline: str | None = None
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    spans: Any = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-able data (``spans``, a :class:`chakra_core.Spans`, left out)."""
        spans, self.spans = self.spans, None
        try:
            out = asdict(self)
        finally:
            self.spans = spans
        out.pop("spans")
        return out

    def write_json(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` as JSON to ``path`` atomically."""
        from chakra_core.io._etio import atomic_output

        path = Path(path)
        with atomic_output(path) as tmp:
            tmp.write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        return path
