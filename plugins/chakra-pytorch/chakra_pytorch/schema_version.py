"""Host-ET schema strings: what is known, and the warning for newer ones.

Conversion works by feature detection on each node (``attrs`` list or flat keys, ``ctrl_deps`` or
``parent``, ``inputs`` as an object or as a list with ``input_shapes``); the schema string is only
checked to warn about versions newer than the newest one known.
"""

from __future__ import annotations

import re
import warnings

__all__ = ["KNOWN_SCHEMAS", "NEWEST_KNOWN", "parse_schema", "check_schema", "PyTorchTraceWarning"]

#: schema strings seen in the wild, oldest first.
KNOWN_SCHEMAS = (
    "1.0.1",
    "1.0.2-chakra.0.0.4",
    "1.0.3-chakra.0.0.4",
    "1.0.4-chakra.0.0.4",
    "1.1.0-chakra.0.0.4",
    "1.1.1-chakra.0.0.4",
    "1.1.1-chakra.1.0.0",
)
_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-chakra\.(\d+)\.(\d+)\.(\d+))?$")


class PyTorchTraceWarning(UserWarning):
    """Something in a PyTorch trace was converted with a caveat (newer schema, no durations)."""


def parse_schema(text: str) -> tuple[int, ...] | None:
    """``"1.1.1-chakra.0.0.4"`` -> ``(1, 1, 1, 0, 0, 4)``; None for an unparseable string."""
    m = _RE.match(text.strip())
    if not m:
        return None
    return tuple(int(g) if g is not None else 0 for g in m.groups())


NEWEST_KNOWN = parse_schema(KNOWN_SCHEMAS[-1])


def check_schema(text: str, where: str) -> None:
    """Warn when ``text`` is newer than every known schema or cannot be parsed."""
    v = parse_schema(text)
    if v is None:
        warnings.warn(f"{where}: unrecognised execution-trace schema {text!r}; converting by feature "
                      "detection", PyTorchTraceWarning, stacklevel=2)
    elif NEWEST_KNOWN is not None and v > NEWEST_KNOWN:
        warnings.warn(f"{where}: execution-trace schema {text!r} is newer than the newest known "
                      f"({KNOWN_SCHEMAS[-1]}); converting by feature detection", PyTorchTraceWarning,
                      stacklevel=2)
