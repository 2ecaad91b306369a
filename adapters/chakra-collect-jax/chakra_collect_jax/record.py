"""One call from a jitted JAX step to its per-device Chakra ET set: HLO, profile, conversion.

``collect(step, args, "out/")`` compiles ``step`` for ``args`` exactly as it will run, writes the
optimised HLO text, runs ``warmup`` unprofiled executions, profiles ``steps`` executions with
``jax.profiler`` (each inside a ``StepTraceAnnotation``), keeps the xplane, and converts program
and profile with the ``jax`` input format. On a multi-host job call it on every host with its own
``out_dir``: each profile holds that host's devices.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Collected", "collect"]


@dataclass
class Collected:
    """What :func:`collect` wrote: the program, the profile, and the ET files (one per device)."""

    program: Path
    profile: Path
    traces: list[Path] = field(default_factory=list)


def _compile(step: Callable[..., Any], args: Sequence[Any]) -> Any:
    lower = getattr(step, "lower", None)
    if lower is None:
        raise TypeError("collect() needs a jitted function (jax.jit(step)), which has .lower()")
    return lower(*args).compile()


def _check_options(options: Mapping[str, Any] | None, convert: bool) -> dict[str, Any]:
    """``options`` checked against the jax format's before anything runs (a ConfigError for an
    unknown name or value, for ``device``, which a profiled conversion refuses, and for options
    without ``convert``)."""
    from chakra_core import ConfigError, get_host

    given = dict(options or {})
    if given and not convert:
        raise ConfigError(f"collect(): options {', '.join(sorted(given))} apply to the conversion, "
                          "and convert=False converts nothing")
    if "device" in given:
        raise ConfigError("collect(): option device times compute without a profile; collect() converts "
                          "with the profile it records, so the durations are measured")
    get_host().registry.get("format", "jax").check_options(given)
    return given


def collect(step: Callable[..., Any], args: Sequence[Any], out_dir: str | os.PathLike, steps: int = 3,
            warmup: int = 2, prefix: str = "trace", convert: bool = True,
            options: Mapping[str, Any] | None = None) -> Collected:
    """Compile, profile ``steps`` runs of ``step(*args)`` (after ``warmup`` runs) and convert.

    Writes ``out_dir/program.hlo.txt``, ``out_dir/profile.xplane.pb`` and, with ``convert``, the
    ET set ``out_dir/et/PREFIX.DEVICE.et`` (``options`` are the jax format's options, e.g.
    ``{"step": -1}``; checked before anything runs, ConfigError). Returns the paths written.
    """
    import jax

    if steps < 1 or warmup < 0:
        raise ValueError("steps must be >= 1 and warmup >= 0")
    checked = _check_options(options, convert)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    compiled = _compile(step, args)
    program = out / "program.hlo.txt"
    program.write_text(compiled.as_text())
    for _ in range(warmup):
        jax.block_until_ready(compiled(*args))
    profile = out / "profile.xplane.pb"
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        jax.profiler.start_trace(tmp)
        try:
            for number in range(steps):
                with jax.profiler.StepTraceAnnotation("step", step_num=number):
                    jax.block_until_ready(compiled(*args))
        finally:
            jax.profiler.stop_trace()
        found = sorted(glob.glob(os.path.join(tmp, "plugins", "profile", "*", "*.xplane.pb")))
        if not found:
            raise RuntimeError(f"jax.profiler wrote no .xplane.pb under {tmp}")
        shutil.copyfile(found[-1], profile)
    result = Collected(program, profile)
    if convert:
        from chakra_core import load_traces

        traces = load_traces([str(program), str(profile)], format="jax", options=checked)
        result.traces = traces.write(out / "et" / prefix, replace_stale=True)
    return result
