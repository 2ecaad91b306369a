"""Numbers for people: durations with units, percentages, byte sizes in KiB/MiB/GiB, mappings as
readable lines.  Every command's text output and the HTML report use these; JSON stays raw with
the unit in the key (``finish_ns``, ``bytes``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["duration", "percent", "size", "count", "readable", "rate", "value", "label"]

_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "us"), (1.0, "ns"))
_SIZE_UNITS = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def _finite(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _sig(v: float) -> str:
    """``v`` with three significant digits (at most one decimal above 100)."""
    a = abs(v)
    return f"{v:,.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}"


def duration(ns: Any) -> str:
    """A duration given in ns, in the largest unit that keeps it >= 1: ``1.23 ms``, ``456 us``."""
    v = _finite(ns)
    if v is None:
        return "n/a"
    scale, unit = next(((s, u) for s, u in _TIME_UNITS if abs(v) >= s and u != "ns"), (1.0, "ns"))
    return f"{v:,.0f} ns" if unit == "ns" else f"{_sig(v / scale)} {unit}"


def percent(fraction: Any, digits: int = 1) -> str:
    """A fraction (0.205) as a percentage (``20.5%``)."""
    v = _finite(fraction)
    return "n/a" if v is None else f"{100 * v:.{digits}f}%"


def size(nbytes: Any) -> str:
    """A byte count in binary units: ``3.12 GiB``, ``512 B``."""
    v = _finite(nbytes)
    if v is None:
        return "n/a"
    for scale, unit in _SIZE_UNITS:
        if abs(v) >= scale:
            return f"{_sig(v / scale)} {unit}"
    return f"{v:,.0f} B"


def rate(bytes_per_ns: Any) -> str:
    """A bandwidth given in bytes per ns (= GB/s), as ``12.5 GB/s``."""
    v = _finite(bytes_per_ns)
    return "n/a" if v is None else f"{_sig(v)} GB/s"


def count(n: Any) -> str:
    """An integer with thousands separators (``2,240,000``)."""
    v = _finite(n)
    return "n/a" if v is None else f"{v:,.0f}"


def value(key: str, v: Any) -> str:
    """``v`` for a person, by the unit its ``key`` names: ``*_ns`` a duration, ``bytes`` /
    ``*_bytes`` a size, ``share`` a percentage, ``*error`` a signed percentage."""
    if isinstance(v, bool) or v is None:
        return str(v).lower() if isinstance(v, bool) else "none"
    if isinstance(v, (int, float)):
        if key.endswith("_ns"):
            return duration(v)
        if key == "bytes" or key.endswith("_bytes"):
            return size(v)
        if key in ("share", "fraction") or key.endswith("_share"):
            return percent(v)
        if key.endswith("error"):
            return ("+" if v > 0 else "") + percent(v, 2)
        return f"{v:,}" if isinstance(v, int) else f"{v:,.4g}"
    if isinstance(v, Mapping):
        return "; ".join(f"{label(k)} {value(str(k), x)}" for k, x in v.items())
    if isinstance(v, Sequence) and not isinstance(v, str):
        return ", ".join(value(key, x) for x in v)
    return str(v)


def label(key: Any) -> str:
    """A key for a person: ``exposed_comm_ns`` -> ``exposed comm``."""
    return str(key).removesuffix("_ns").removesuffix("_bytes").replace("_", " ")


def readable(data: Mapping[str, Any], indent: str = "") -> list[str]:
    """A mapping as lines ``label: value`` (keys ending ``_ns`` as durations, ``bytes`` as sizes,
    ``share`` as percentages); nested mappings indented below their key."""
    lines = []
    for k, v in data.items():
        if isinstance(v, Mapping) and v and any(isinstance(x, (Mapping, list)) for x in v.values()):
            lines.append(f"{indent}{label(k)}:")
            lines += readable(v, indent + "  ")
        else:
            lines.append(f"{indent}{label(k)}: {value(str(k), v)}")
    return lines
