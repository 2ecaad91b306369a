"""The sweep's input cache: an input that many points share is converted once.

The points of a sweep that vary only the system or a backend's options read the same input
(format, paths, options and transforms): its converted ``.et`` set is written once under
``OUT/cache/<input key>/`` and every later point (in any worker that sees the directory) reads
it.  Workers that convert the same input at once each build it in a temporary sibling; the first
rename wins and the others use its copy.  Likewise a set that passed validation under some
assumptions (the process groups of a backend's comm-group file, its streams) is not validated
again for a later point with the same input and assumptions: ``OUT/cache/<input key>.valid-<hash>``
records the pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chakra_core.io._publish import remove_stale, temp_sibling
from chakra_core.pipeline._pipeline import Pipeline, _is_lazy, _validation_assumptions
from chakra_core.trace._traceset import TraceSet, open_traceset

__all__ = ["cached_traces", "validated", "input_key", "file_digest", "digests_of", "is_cached", "cache_stage",
           "publish_cached", "runs_conversion"]

_READY = "ready.json"


def file_digest(path: str, cache: dict[str, str] | None = None) -> str:
    """The SHA-256 of a file's bytes (remembered in ``cache`` by path)."""
    if cache is not None and path in cache:
        return cache[path]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    if cache is not None:
        cache[path] = digest
    return digest


def input_key(pipe: Pipeline, digests: Mapping[str, str]) -> str:
    """The hash of what a point's trace set is made of: the input format, paths, file contents
    (``digests``: path -> SHA-256), options and the transforms with theirs."""
    stages = [s for s in [pipe.input, *pipe.transforms] if s is not None]
    what = {"paths": pipe.input_paths, "files": dict(sorted(digests.items())),
            "stages": [[s.entry.qualified_name, s.entry.version, s.options] for s in stages]}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:20]


def cached_traces(pipe: Pipeline, cache: Path, key: str | None) -> TraceSet:
    """The pipeline's trace set: read from ``cache/key`` when a point converted it already,
    else converted there (when it is lazy and ``key`` is given) or returned as it opens."""
    traces = pipe.load()
    if key is None or not _is_lazy(traces):
        return traces
    final = cache / key
    if not is_cached(cache, key):
        _build(traces, final)
    opened = open_traceset(final)
    for lazy, rank in zip(traces, opened):
        rank.path = lazy.path  # messages name the input, not the cached copy
    return TraceSet(list(opened), traces.process_groups, traces.source)


@contextmanager
def validated(pipe: Pipeline, cache: Path, key: str | None) -> Iterator[None]:
    """Run the block (the pipeline) without validating what an earlier point with the same input
    validated under the same assumptions; record the passes of this run when the block succeeds."""
    if key is None:
        yield
        return
    marks = []
    for b in [b for b in pipe.backends if b.validate]:
        assumption = next(iter(_validation_assumptions([b])))
        digest = hashlib.sha256(json.dumps(assumption, default=str).encode()).hexdigest()[:16]
        mark = cache / f"{key}.valid-{digest}"
        b.validate = not mark.is_file()
        marks.append(mark)
    yield
    cache.mkdir(parents=True, exist_ok=True)
    for mark in marks:
        mark.touch()


def is_cached(cache: Path, key: str) -> bool:
    """Whether the input ``key`` is converted in ``cache`` already."""
    return (cache / key / _READY).is_file()


def cache_stage(cache: Path, key: str) -> Path:
    """A new staging directory for the input ``key`` (written as ``trace.{rank}.et``, then
    published by :func:`publish_cached`)."""
    final = cache / key
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(final, ("new",))  # what a killed sweep left
    stage = temp_sibling(final, "new")
    stage.mkdir()
    return stage


def publish_cached(stage: Path, cache: Path, key: str, ranks: list[int]) -> None:
    """Publish the complete set in ``stage`` as the input ``key`` (the first publisher wins)."""
    (stage / _READY).write_text(json.dumps({"ranks": ranks}) + "\n")
    try:
        os.rename(stage, cache / key)
    except OSError:  # another worker published it first
        if not is_cached(cache, key):
            raise


def runs_conversion(pipe: Pipeline) -> bool:
    """Whether loading the pipeline's input converts something (told without opening it): not
    for a plain ``.et`` set without transforms, which is read where it is."""
    return bool(pipe.transforms) or not (pipe.input is not None and pipe.input.impl.reads_in_place)


def _build(traces: TraceSet, final: Path) -> None:
    stage = cache_stage(final.parent, final.name)
    try:
        traces.write(stage / "trace")
        publish_cached(stage, final.parent, final.name, traces.ranks)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def digests_of(paths: Sequence[str], cache: dict[str, str]) -> dict[str, Any]:
    """SHA-256 of every file the ``paths`` name (directories, prefixes and globs expanded)."""
    from chakra_core.base._paths import expand_paths

    out = {}
    for p in paths:
        for f in expand_paths(p):
            out[str(f)] = file_digest(str(f), cache)
    return out
