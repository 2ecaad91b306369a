"""Provenance of a result: what ran, from which distributions, on which inputs, how invoked.

The layout (``Result.provenance``, ``result.json``, every command's ``--json``)::

    {"chakra_core": "0.1.0",
     "command": "chakra simulate job/ --backend simpy" | null,   # shell-quoted (shlex.join)
     "pipeline": "/abs/p.yaml" | "<pipeline>" | null,
     "inputs": ["job/"],                                         # as given
     "implementations": [{"stage": "input", "kind": "format", "name": "et",
                          "qualified_name": "chakra-core:et", "distribution": "chakra-core",
                          "version": "0.1.0", "options": {...}}, ...]}

``options`` are each implementation's options after defaults were filled in.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["command_line", "implementation", "provenance"]

_COMMAND: ContextVar[str | None] = ContextVar("chakra_command", default=None)


@contextmanager
def command_line(argv: Sequence[str]) -> Iterator[str]:
    """Record ``chakra ARGV...`` (shell-quoted) as the command of the results made inside."""
    text = shlex.join(["chakra", *map(str, argv)])
    token = _COMMAND.set(text)
    try:
        yield text
    finally:
        _COMMAND.reset(token)


def implementation(stage: str, entry: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """One implementation that took part: its names, distribution, version and options."""
    return {"stage": stage, "kind": entry.kind, "name": entry.name, "qualified_name": entry.qualified_name,
            "distribution": entry.distribution, "version": entry.version, "options": dict(options)}


def provenance(inputs: Sequence[str], implementations: Sequence[dict[str, Any]],
               pipeline: str | None = None) -> dict[str, Any]:
    """The provenance record of one result (see the module docstring for the layout)."""
    from chakra_core.base._version import __version__

    return {"chakra_core": __version__, "command": _COMMAND.get(), "pipeline": pipeline,
            "inputs": [str(p) for p in inputs], "implementations": list(implementations)}

