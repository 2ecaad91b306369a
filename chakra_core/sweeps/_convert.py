"""A sweep's inputs converted before its points run: each in parts, all at once, on the executor.

Every input of the points to run whose format (and transforms) convert ranks independently and
that the cache does not hold yet is split into as many parts as the executor has workers
(:mod:`chakra_core.pipeline._rankparts`); the parts of every input go to the executor together, each
writes its ranks into the input's staging directory under ``OUT/cache/``, and an input is
published in the cache once all its parts succeeded, exactly as one point would have written
it.  A part that fails or runs past the sweep's ``timeout_s`` fails the input: its staging
directory is removed and every point that reads it is recorded with the error, without running.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chakra_core.base._progress import progress
from chakra_core.pipeline._inputcache import cache_stage, is_cached, publish_cached
from chakra_core.pipeline._rankparts import RankPart, part_error, parts_for, rank_parts, succeeded
from chakra_core.sweeps._run import PointTask

__all__ = ["convert_inputs"]


class _Input:
    """One input being converted: its staging directory, parts left, ranks written, error."""

    def __init__(self, key: str, stage: Path, parts: int):
        self.key, self.stage, self.left = key, stage, parts
        self.ranks: list[int] = []
        self.failure: dict[str, Any] | None = None

    def add(self, value: Any) -> None:
        self.left -= 1
        if succeeded(value):
            self.ranks += value["ranks"]
        elif self.failure is None:
            timed_out = isinstance(value, TimeoutError) or (isinstance(value, dict) and value["status"] == "timeout")
            self.failure = {"status": "timeout" if timed_out else "failed",
                            "error": f"converting the input: {part_error(value)}",
                            "seconds": value.get("seconds") if isinstance(value, dict) else None}


def convert_inputs(plan: Any, impl: Any, options: Mapping[str, Any], pending: Sequence[PointTask]
                   ) -> dict[str, dict[str, Any]]:
    """Convert the inputs of ``pending`` that ``plan.inputs`` lists and the cache lacks; return
    ``{input key: {"status", "error"}}`` for those that failed."""
    cache = Path(plan.output) / "cache"
    keys = sorted({t.input_key for t in pending
                   if t.input_key is not None and t.input_key in plan.inputs and not is_cached(cache, t.input_key)})
    if not keys:
        return {}
    parts = parts_for(options)
    inputs: dict[str, _Input] = {}
    tasks: list[RankPart] = []
    owner: list[str] = []
    try:
        for key in keys:
            inputs[key] = _Input(key, cache_stage(cache, key), parts)
            tasks += rank_parts(plan.inputs[key], parts, inputs[key].stage, timeout_s=plan.spec.timeout_s)
            owner += [key] * parts
        _run_parts(impl, options, tasks, owner, inputs, cache)
    finally:
        for item in inputs.values():
            shutil.rmtree(item.stage, ignore_errors=True)
    return {k: item.failure for k, item in inputs.items() if item.failure is not None}


def _run_parts(impl: Any, options: Mapping[str, Any], tasks: list[RankPart], owner: list[str],
               inputs: dict[str, _Input], cache: Path) -> None:
    from chakra_core.pipeline._rankparts import convert_part

    with progress("converting inputs", total=len(tasks), unit="part") as bar:
        results = impl.map(convert_part, tasks, options)
        try:
            for i, value in results:
                item = inputs[owner[i]]
                item.add(value)
                bar.advance()
                if item.left == 0 and item.failure is None:
                    publish_cached(item.stage, cache, item.key, sorted(item.ranks))
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()
