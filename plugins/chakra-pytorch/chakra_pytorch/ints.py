"""Integer fields of PyTorch traces: the signed 64-bit slots they are written to, and ranks."""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_RANKS", "INT64_END", "int64", "int64_from_number", "event_int", "is_rank", "node_ref"]

#: the most ranks a job may have here (the process-group node lists every rank of the world)
MAX_RANKS = 1 << 20

#: the successor of the largest signed 64-bit integer (the slots of trace ids and integers)
INT64_END = 1 << 63


def int64(v: Any) -> int | None:
    """``v`` when it is an integer (not a bool) that fits a signed 64-bit slot, else None."""
    if type(v) is int:  # the common case: a plain int (not a bool)
        return v if -INT64_END <= v < INT64_END else None
    return v if isinstance(v, int) and not isinstance(v, bool) and -INT64_END <= v < INT64_END else None


def node_ref(v: Any) -> int:
    """An id a node refers to (its ``rf_id``) as a non-negative signed 64-bit int, -1 for none."""
    if type(v) is int and 0 <= v < INT64_END:  # the common case, without a call
        return v
    found = int64(v)
    return found if found is not None and found >= 0 else -1


def int64_from_number(v: Any, default: int = -1) -> int:
    """An id or number of a trace (an integer, or a float with an integral value) as a signed
    64-bit int, else ``default``."""
    if type(v) is int and -INT64_END <= v < INT64_END:  # the common case, without a call
        return v
    if v is None:  # an absent key (a Kineto op outside autograd has no sequence number)
        return default
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    found = int64(v)
    return default if found is None else found


def event_int(v: Any, key: str, default: int = -1) -> int:
    """An integer field of a trace event (an id, a thread, a stream, a device): ``default`` when
    absent (None); ValueError naming ``key`` when present but not an integer (a string, a
    fraction, a list), which :func:`int64_from_number` would take for absent."""
    if type(v) is int and -INT64_END <= v < INT64_END:  # the common case, without a call
        return v
    if v is None:
        return default
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    found = int64(v)
    if found is None:
        raise ValueError(f"{key} {str(v)[:40]!r} is not an integer")
    return found


def is_rank(v: Any, low: int = 0) -> bool:
    """True when ``v`` is an integer rank (or world size) in ``low`` .. MAX_RANKS."""
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= MAX_RANKS
