"""The boundary of the profile readers: one schema per file kind, checked on every event.

An event that passes becomes an :data:`Event` (device, module, op, run, start us, duration us);
one that carries no HLO op is skipped (None); one with a value of the wrong type or out of range
is a :class:`TraceFormatError` naming the file and the event's index. The Chrome-trace JSON
schema is :func:`chrome_event`, the xplane schema :func:`xplane_event`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from chakra_core import TraceFormatError

__all__ = ["Event", "chrome_event", "xplane_event", "MAX_DEVICE"]

Event = tuple[int, str, str, str, float, float]  # device, module, op, run, start us, duration us

#: the largest device ordinal a profile event may name.
MAX_DEVICE = 1 << 20
#: the largest time or duration an event may give, in us (2^53 us, about 285 years: exact in a
#: float, and a step built from such times still fits an ET's uint64 durations)
MAX_US = float(1 << 53)


def _fail(path: str, index: int, message: str) -> TraceFormatError:
    return TraceFormatError(message, path, f"event {index}")


def _number(value: Any, key: str, path: str, index: int, minimum: float | None = None,
            maximum: float = MAX_US) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(path, index, f"{key} must be a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or (minimum is not None and number < minimum) or abs(number) > maximum:
        raise _fail(path, index, f"{key}={value!r} is out of range")
    return number


def _device(value: Any, path: str, index: int) -> int:
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_DEVICE:
        raise _fail(path, index, f"device_ordinal must be an integer in 0..{MAX_DEVICE}, got {str(value)[:40]!r}")
    return value


def _text(value: Any, key: str, path: str, index: int) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _fail(path, index, f"{key} must be a string or an integer, got {type(value).__name__}")
    return str(value)


def chrome_event(ev: Any, path: str, index: int, pid_device: Mapping[Any, int]) -> Event | None:
    """The op event of one ``traceEvents`` item (None for metadata and non-op events)."""
    if not isinstance(ev, Mapping):
        raise _fail(path, index, f"a trace event must be an object, got {type(ev).__name__}")
    args = ev.get("args", {})
    if not isinstance(args, Mapping):
        raise _fail(path, index, f"args must be an object, got {type(args).__name__}")
    if ev.get("ph") != "X" or "hlo_op" not in args:
        return None
    op = args["hlo_op"]
    if op == "":
        return None
    device = args.get("device_ordinal", pid_device.get(ev.get("pid")) if _hashable(ev.get("pid")) else None)
    if device is None:
        return None
    return (_device(device, path, index), _text(args.get("hlo_module", ""), "hlo_module", path, index),
            _text(op, "hlo_op", path, index), _text(args.get("run_id", ""), "run_id", path, index),
            _number(ev.get("ts", 0.0), "ts", path, index), _number(ev.get("dur", 0.0), "dur", path, index, 0.0))


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float, type(None)))


def xplane_event(stats: Mapping[str, Any], name: str, xla_ops_line: bool, plane_device: int | None,
                 start_ns: float, duration_ns: float, path: str, index: int) -> Event | None:
    """The op event of one xplane event (None when it names no HLO op or no device)."""
    op = stats.get("hlo_op") or (name if xla_ops_line else None)
    if not op:
        return None
    device = stats.get("device_ordinal", plane_device)
    if device is None:
        return None
    return (_device(device, path, index), _text(stats.get("hlo_module", ""), "hlo_module", path, index),
            _text(op, "hlo_op", path, index), _text(stats.get("run_id", ""), "run_id", path, index),
            _number(start_ns, "start_ns", path, index, maximum=MAX_US * 1000) / 1000.0,
            _number(duration_ns, "duration_ns", path, index, 0.0, MAX_US * 1000) / 1000.0)
