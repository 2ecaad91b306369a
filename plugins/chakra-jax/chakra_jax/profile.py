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
import zlib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from chakra_core import ConfigError, TraceFormatError, open_binary

from .native import quiet_native_stderr
from .profile_schema import Event, chrome_event, xplane_event

__all__ = ["Profile", "read_profile"]

_DEVICE = re.compile(r"/device:[A-Za-z_]+:(\d+)")

Timeline = list[tuple[float, float, str]]  # (start us, duration us, hlo_op) in start order


@dataclass
class Profile:
    """Op events of one module: ``runs[run][device]`` = that device's timeline in the run
    (``(start us, duration us, hlo_op)`` by start) and each run's span (first start, last end)."""

    source: str
    kind: str
    module: str
    runs: dict[str, dict[int, Timeline]] = field(default_factory=dict)
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
            for device, events in self.runs[run].items():
                for _, dur, op in events:
                    acc[device][op].append(dur)
        return {d: {op: sum(v) / len(v) for op, v in ops.items()} for d, ops in acc.items()}

    def starts(self, step: int | None = None) -> dict[int, dict[str, list[float]]]:
        """``{device: {hlo_op: [start of its k-th occurrence]}}``: us after the start of the run
        (the first op of any device), the mean over the selected runs that have that occurrence."""
        acc: dict[int, dict[str, list[list[float]]]] = defaultdict(lambda: defaultdict(list))
        for run in self.selected(step):
            origin = self.spans[run][0]
            for device, events in self.runs[run].items():
                seen: dict[str, int] = defaultdict(int)
                for start, _, op in events:
                    k = seen[op]
                    seen[op] += 1
                    per_k = acc[device][op]
                    if k == len(per_k):
                        per_k.append([])
                    per_k[k].append(start - origin)
        return {d: {op: [sum(v) / len(v) for v in per_k] for op, per_k in ops.items()} for d, ops in acc.items()}

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
        prof.runs.setdefault(run, {}).setdefault(device, []).append((start, dur, op))
        lo, hi = prof.spans.get(run, (start, start + dur))
        prof.spans[run] = (min(lo, start), max(hi, start + dur))
    if not prof.runs:
        seen = ", ".join(sorted(others)[:8]) or "none"
        raise TraceFormatError(f"the profile has no op events of module {module!r} (modules seen: {seen})",
                               source)
    for devices in prof.runs.values():
        for timeline in devices.values():
            timeline.sort()
    return prof


def _xplane_events(path: str) -> Iterator[Event]:
    try:
        from jax.profiler import ProfileData
    except ImportError:
        raise ConfigError(f"{path}: reading .xplane.pb needs jax/jaxlib (pip install jax); "
                          "or give the Chrome-trace JSON of the profile instead") from None
    try:
        with quiet_native_stderr():
            data = ProfileData.from_file(path)
    except Exception as e:  # jaxlib raises its own status errors on a bad file
        raise TraceFormatError(f"not an xplane profile ({type(e).__name__}: {str(e)[:200]})", path) from None
    index = 0
    for plane in data.planes:
        m = _DEVICE.search(plane.name)
        plane_device = int(m.group(1)) if m else None
        for line in plane.lines:
            xla_ops_line = line.name == "XLA Ops"
            for ev in line.events:
                index += 1
                got = xplane_event(dict(ev.stats), ev.name, xla_ops_line, plane_device, ev.start_ns,
                                   ev.duration_ns, path, index - 1)
                if got is not None:
                    yield got


def _json_events(path: str) -> Iterator[Event]:
    import ijson

    pid_device: dict[object, int] = {}
    try:
        with open_binary(path) as f:
            for index, ev in enumerate(ijson.items(f, "traceEvents.item", use_float=True)):
                if isinstance(ev, dict) and ev.get("ph") == "M":
                    _process_name(ev, pid_device)
                    continue
                got = chrome_event(ev, path, index, pid_device)
                if got is not None:
                    yield got
    except (ijson.JSONError, ValueError, EOFError, OSError, zlib.error) as e:
        raise TraceFormatError(f"not a Chrome-trace JSON profile ({str(e)[:200]})", path) from None


def _process_name(ev: dict, pid_device: dict[object, int]) -> None:
    """Record the device of a ``process_name`` metadata event (``/device:GPU:N``)."""
    args = ev.get("args")
    if ev.get("name") != "process_name" or not isinstance(args, dict):
        return
    m = _DEVICE.search(str(args.get("name", "")))
    pid = ev.get("pid")
    if m and isinstance(pid, (str, int)):
        pid_device[pid] = int(m.group(1))


def read_profile(path: str, module: str) -> Profile:
    """The op events of ``module`` in the profile at ``path`` (xplane or Chrome-trace JSON)."""
    if path.endswith(".xplane.pb"):
        return _collect(_xplane_events(path), path, "xplane", module)
    return _collect(_json_events(path), path, "chrome-trace", module)
