"""Measured op durations from a JAX profile: the ``.xplane.pb`` or its Chrome-trace JSON export.

The xplane is read with jaxlib's own reader (``jax.profiler.ProfileData``), so neither
TensorFlow nor xprof is needed; the Chrome-trace JSON (``*.trace.json.gz``,
``perfetto_trace.json.gz``) is streamed with ijson. Both carry, per executed HLO instruction, an
event with the stats ``hlo_op``, ``hlo_module``, ``run_id`` and (on the CPU) ``device_ordinal``;
on GPU/TPU the device comes from the plane (process) name ``/device:GPU:N``. Events of other
modules are ignored. A *step* is one execution of the module (one ``run_id``), ordered by
start time; without ``run_id`` the whole profile is one step.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from chakra_core import ConfigError, TraceFormatError, open_binary

__all__ = ["Profile", "read_profile", "PROFILE_SUFFIXES"]

#: file names taken as profiles.
PROFILE_SUFFIXES = (".xplane.pb", ".trace.json.gz", ".trace.json", "perfetto_trace.json.gz")
_DEVICE = re.compile(r"/device:[A-Za-z_]+:(\d+)")

Event = tuple[int, str, str, str, float, float]  # device, module, op, run, start us, duration us


@dataclass
class Profile:
    """Op events of one module: ``runs[run][device][op] = [durations in us]`` and each run's span."""

    source: str
    kind: str
    module: str
    runs: dict[str, dict[int, dict[str, list[float]]]] = field(default_factory=dict)
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def steps(self) -> list[str]:
        """Run ids in execution order."""
        return sorted(self.spans, key=lambda r: self.spans[r][0])

    def selected(self, step: int | None) -> list[str]:
        """The runs that ``step`` picks: all for None, else the one at that index (negative from the end)."""
        steps = self.steps
        if step is None:
            return steps
        if not -len(steps) <= step < len(steps):
            raise ConfigError(f"{self.source}: option step={step}, but the profile has {len(steps)} "
                              f"executions of {self.module} (0..{len(steps) - 1})")
        return [steps[step]]

    def durations(self, step: int | None = None) -> dict[int, dict[str, float]]:
        """``{device: {hlo_op: mean duration in us}}`` over the selected steps' occurrences."""
        acc: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for run in self.selected(step):
            for device, ops in self.runs[run].items():
                for op, values in ops.items():
                    acc[device][op].extend(values)
        return {d: {op: sum(v) / len(v) for op, v in ops.items()} for d, ops in acc.items()}

    def step_time_us(self, step: int | None = None) -> float:
        """Mean wall time of the selected executions: first op start to last op end, all devices."""
        runs = self.selected(step)
        return sum(self.spans[r][1] - self.spans[r][0] for r in runs) / len(runs)


def _collect(events: Iterable[Event], source: str, kind: str, module: str) -> Profile:
    prof = Profile(source, kind, module)
    others: set[str] = set()
    for device, mod, op, run, start, dur in events:
        if mod and mod != module:
            others.add(mod)
            continue
        ops = prof.runs.setdefault(run, {}).setdefault(device, {})
        ops.setdefault(op, []).append(dur)
        lo, hi = prof.spans.get(run, (start, start + dur))
        prof.spans[run] = (min(lo, start), max(hi, start + dur))
    if not prof.runs:
        seen = ", ".join(sorted(others)[:8]) or "none"
        raise TraceFormatError(f"the profile has no op events of module {module!r} (modules seen: {seen})",
                               source)
    return prof


def _xplane_events(path: str) -> Iterator[Event]:
    try:
        from jax.profiler import ProfileData
    except ImportError:
        raise ConfigError(f"{path}: reading .xplane.pb needs jax/jaxlib (pip install jax); "
                          "or give the Chrome-trace JSON of the profile instead") from None
    try:
        data = ProfileData.from_file(path)
    except Exception as e:  # jaxlib raises its own status errors on a bad file
        raise TraceFormatError(f"not an xplane profile ({type(e).__name__}: {e})", path) from None
    for plane in data.planes:
        m = _DEVICE.search(plane.name)
        plane_device = int(m.group(1)) if m else None
        for line in plane.lines:
            xla_ops_line = line.name == "XLA Ops"
            for ev in line.events:
                stats = dict(ev.stats)
                op = stats.get("hlo_op") or (ev.name if xla_ops_line else None)
                if not op:
                    continue
                device = stats.get("device_ordinal", plane_device)
                if device is None:
                    continue
                yield (int(device), str(stats.get("hlo_module", "")), str(op), str(stats.get("run_id", "")),
                       ev.start_ns / 1000.0, ev.duration_ns / 1000.0)


def _json_events(path: str) -> Iterator[Event]:
    import ijson

    pid_device: dict[object, int] = {}
    try:
        with open_binary(path) as f:
            for ev in ijson.items(f, "traceEvents.item", use_float=True):
                args = ev.get("args") or {}
                if ev.get("ph") == "M":
                    if ev.get("name") == "process_name":
                        m = _DEVICE.search(str(args.get("name", "")))
                        if m:
                            pid_device[ev.get("pid")] = int(m.group(1))
                    continue
                op = args.get("hlo_op")
                if not op or ev.get("ph") != "X":
                    continue
                device = args.get("device_ordinal", pid_device.get(ev.get("pid")))
                if device is None:
                    continue
                yield (int(device), str(args.get("hlo_module", "")), str(op), str(args.get("run_id", "")),
                       float(ev.get("ts", 0.0)), float(ev.get("dur", 0.0)))
    except (ijson.JSONError, ValueError, EOFError, OSError) as e:
        raise TraceFormatError(f"not a Chrome-trace JSON profile ({e})", path) from None


def read_profile(path: str, module: str) -> Profile:
    """The op events of ``module`` in the profile at ``path`` (xplane or Chrome-trace JSON)."""
    if path.endswith(".xplane.pb"):
        return _collect(_xplane_events(path), path, "xplane", module)
    return _collect(_json_events(path), path, "chrome-trace", module)
