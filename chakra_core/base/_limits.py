"""Resource limits on what an input may ask for, in one place.

Each limit bounds something a small, malformed or hostile input could otherwise turn into a huge
allocation or a long loop: a rank number in a file name, an NPU count, the dependencies of one
node, the nodes of one generated or unrolled rank, the nesting of a YAML/JSON document, the
expansion of a gzip stream.  Every limit is read from its environment variable on use, so a
user who needs more sets it (``CHAKRA_MAX_RANK=...``); the error that reports a limit names the
variable.  See docs/limits.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from chakra_core.base._errors import ChakraError, ConfigError, TraceFormatError

__all__ = ["Limit", "LIMITS", "get_limit", "check_limit", "check_depth", "limit_message"]

#: largest value any limit may be raised to where it guards an int32 field of the schema.
INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class Limit:
    """One resource limit: its environment variable, default and what it bounds."""

    env: str
    default: int
    what: str
    ceiling: int | None = None  # a hard bound the variable cannot raise (an int32 field)


LIMITS: dict[str, Limit] = {
    "rank": Limit("CHAKRA_MAX_RANK", (1 << 20) - 1, "highest rank number (file names, JSON headers)",
                  INT32_MAX - 1),
    "npus": Limit("CHAKRA_MAX_NPUS", 1 << 20, "number of NPUs (ranks) an option or file asks for",
                  INT32_MAX),
    "deps": Limit("CHAKRA_MAX_DEPS", 1 << 20, "dependencies (data + control) of one node"),
    "nodes": Limit("CHAKRA_MAX_NODES", 1 << 22,
                   "nodes of one rank that a generator's or a text workload's options ask for"),
    "depth": Limit("CHAKRA_MAX_DEPTH", 100, "nesting depth of a YAML or JSON document"),
    "inflation": Limit("CHAKRA_MAX_INFLATION", 200,
                       "decompressed / compressed size of a gzip input (checked past 64 MiB)"),
}


def get_limit(name: str) -> int:
    """The current value of limit ``name`` (its environment variable, else the default)."""
    lim = LIMITS.get(name) if isinstance(name, str) else None
    if lim is None:
        raise ValueError(f"no limit named {name!r}; the limits: {', '.join(LIMITS)}")
    text = os.environ.get(lim.env)
    if text is None or not text.strip():
        return lim.default
    value = text.strip()
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{lim.env} must be a positive whole number, got {text!r}")
    if lim.ceiling is not None and int(value) > lim.ceiling:
        raise ConfigError(f"{lim.env} can be at most {lim.ceiling} (an int32 field), got {value}")
    return int(value)


def limit_message(name: str, value: int, subject: str, shown: str | None = None) -> str:
    """``"<subject> <value> exceeds the limit of N (<what>; raise it with VAR=M)"``.

    ``shown`` is the value as written, for one too long to convert (a 30-digit rank).
    """
    lim = LIMITS[name]
    cur = get_limit(name)
    if shown is not None and len(shown) > 40:
        shown = f"{shown[:20]}...({len(shown)} digits)"
    if lim.ceiling is not None and (value > lim.ceiling or shown is not None and len(shown) > 18):
        hint = f"{lim.env} can raise it to {lim.ceiling} at most"
    else:
        hint = f"raise it with {lim.env}={max(value, cur * 2)}"
    return f"{subject} {shown or value} exceeds the limit of {cur} ({lim.what}; {hint})"


def check_limit(name: str, value: int, subject: str, where: str | None = None,
                location: str | None = None, error: type[ChakraError] = TraceFormatError) -> int:
    """Return ``value`` when it is within limit ``name``, else raise ``error``.

    ``subject`` words the value in the message (``"rank"``, ``"npus"``); ``where`` and
    ``location`` name the file and the place.  The message names the environment variable.
    """
    if not value >= 0:  # nan too
        raise error(f"{subject} {value!r} is not a count (0 or more)", where, location)
    if value > get_limit(name):
        raise error(limit_message(name, value, subject), where, location)
    return value


def check_depth(obj: Any, where: str | None = None, location: str | None = None,
                error: type[ChakraError] = ConfigError) -> Any:
    """Return ``obj`` (parsed YAML/JSON) when it nests no deeper than the ``depth`` limit.

    Walks the containers without recursion, visiting each shared one (a YAML alias) once.
    """
    limit = get_limit("depth")
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list)) or id(item) in seen:
            continue
        if depth > limit:
            raise error(limit_message("depth", depth, "nesting depth"), where, location)
        seen.add(id(item))
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return obj
