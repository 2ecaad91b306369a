"""Converting one input's ranks in parallel, on a sweep executor.

An input format (and every transform after it) that declares ``per_rank`` converts each rank
independently, so its conversion splits into ``parts`` tasks: task ``j`` opens the input in a
worker, applies the transforms and writes the ranks at positions ``j, j + parts, ...`` into the
staging directory of the output, byte for byte as a serial :meth:`TraceSet.write` would.  The
caller publishes the staging directory once every part has succeeded; a part that fails (a bad
file of one rank) or runs past its timeout fails the whole conversion, and nothing of it is
published.  Nothing is opened in the calling process: the workers find the ranks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chakra_core.base import _errors
from chakra_core.base._errors import ChakraError
from chakra_core.base._progress import progress
from chakra_core.pipeline._pipeline import Pipeline
from chakra_core.pipeline._validated import refuse_staged
from chakra_core.trace._traceset import publish_set

__all__ = ["RankPart", "can_fan_out", "rank_parts", "convert_part", "part_error", "succeeded", "parts_for",
           "write_parts"]


@dataclass(frozen=True)
class RankPart:
    """What a worker needs to write one part of a conversion (picklable): the input stage
    (qualified format name, paths, checked options), the transforms (qualified name, checked
    options), which part of how many, where and under which names to write, and a timeout."""

    format: str
    paths: tuple[str, ...]
    options: dict[str, Any]
    transforms: tuple[tuple[str, dict[str, Any]], ...]
    part: int
    parts: int
    directory: str
    name: str = "trace"
    suffix: str = ".et"
    timeout_s: float | None = None


def can_fan_out(pipe: Pipeline) -> bool:
    """True when the pipeline's input is a ``per_rank`` input format read from paths and every
    transform is ``per_rank``."""
    inp = pipe.input
    return (pipe.traces is None and inp is not None and inp.kind == "format" and bool(pipe.input_paths)
            and bool(getattr(inp.impl, "per_rank", False))
            and all(getattr(t.impl, "per_rank", False) for t in pipe.transforms))


def rank_parts(pipe: Pipeline, parts: int, directory: str | Path, name: str = "trace", suffix: str = ".et",
               timeout_s: float | None = None) -> list[RankPart]:
    """The ``parts`` tasks that write the pipeline's converted ranks into ``directory``."""
    assert pipe.input is not None and pipe.input.entry is not None
    transforms = tuple((t.entry.qualified_name, dict(t.options)) for t in pipe.transforms)
    return [RankPart(pipe.input.entry.qualified_name, tuple(pipe.input_paths),
                     dict(pipe.input.options), transforms, j, parts, str(directory), name, suffix, timeout_s)
            for j in range(parts)]


def convert_part(task: RankPart) -> dict[str, Any]:
    """Write one part (run in a worker); never raises for bad input: returns ``{"status": "ok",
    "names", "ranks", "seconds"}`` or ``{"status": "failed" | "timeout", "error", "seconds"}``
    with the error as :func:`part_error` rebuilds it."""
    from chakra_core.base._deadline import PointTimeout, deadline
    from chakra_core.base._progress import set_progress_enabled
    from chakra_core.host._plugins import get_host
    from chakra_core.pipeline._pipeline import resolve_stage

    set_progress_enabled(False)
    host = get_host()
    t0 = time.perf_counter()
    out: dict[str, Any]
    try:
        with deadline(task.timeout_s):
            pipe = Pipeline(None, list(task.paths), resolve_stage(host, "format", task.format, task.options),
                            host=host)
            pipe.transforms = [resolve_stage(host, "transform", n, o) for n, o in task.transforms]
            traces = pipe.load()
            mine = traces.ranks[task.part::task.parts]
            names = traces.write_ranks(task.directory, mine, task.name, task.suffix)
        out = {"status": "ok", "names": names, "ranks": mine}
    except PointTimeout:
        out = {"status": "timeout", "error": ("ChakraError", f"did not finish within {task.timeout_s:g} s",
                                              None, None)}
    except ChakraError as e:
        out = {"status": "failed", "error": (type(e).__name__, e.message, e.where, e.location)}
    except Exception as e:  # noqa: BLE001 - a bug in a plugin fails the conversion, not the worker
        out = {"status": "failed", "error": ("ChakraError", f"internal error: {type(e).__name__}: {e}", None, None)}
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def part_error(value: Any) -> ChakraError:
    """The error of a part that did not succeed: the worker's ChakraError rebuilt, or one saying
    what the executor reported (a lost worker, a killed one)."""
    if isinstance(value, TimeoutError):
        return ChakraError(f"did not finish within its timeout ({value})")
    if isinstance(value, BaseException):
        return ChakraError(f"the executor lost a part of the conversion: {type(value).__name__}: {value}")
    kind, message, where, location = value["error"]
    cls = getattr(_errors, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, ChakraError)):
        cls = ChakraError
    return cls(message, where, location)


def succeeded(value: Any) -> bool:
    """Whether a part's value (what the executor yielded for it) is a success."""
    return isinstance(value, dict) and value.get("status") == "ok"


def parts_for(options: Mapping[str, Any]) -> int:
    """How many parts to split one input into: the executor's ``workers`` (else the cores)."""
    return max(1, int(options.get("workers") or os.cpu_count() or 1))


def write_parts(pipe: Pipeline, output: str | os.PathLike, impl: Any, options: Mapping[str, Any],
                compress: bool = False, replace_stale: bool = False, validate: bool = False) -> list[Path]:
    """Convert the pipeline's input (and transforms) to a ``.et`` set at ``output`` on the
    executor ``impl`` (its checked ``options``), as :meth:`TraceSet.write` would write it;
    raises the first part's error, or with ``validate`` the set's first validation error
    (nothing is published then)."""
    parts = parts_for(options)

    def write(stage: Path, name: str, suffix: str) -> list[str]:
        tasks = rank_parts(pipe, parts, stage, name, suffix)
        names: list[str] = []
        with progress("converting", total=parts, unit="part") as bar, impl.session(options):
            results = impl.map(convert_part, tasks, options)
            try:
                for _i, value in results:
                    if not succeeded(value):
                        raise part_error(value)
                    names += value["names"]
                    bar.advance()
            finally:
                results.close()
        if validate:
            refuse_staged(stage, names, names, output)
        return names

    return publish_set(output, write, compress, replace_stale)
