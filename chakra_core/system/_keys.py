"""The keys each kind of system-description file may hold, and the check of every other key.

ASTRA-sim reads its files with exact key names and ignores any other key without a word, so a
misspelt or renamed key silently changes the machine.  Here every key of an ASTRA-sim file is
one that ASTRA-sim (current or older) reads, or it is reported with the closest known key:
a warning, or with ``strict`` a :class:`chakra_core.ConfigError`.  ``strict`` defaults to the
environment variable ``CHAKRA_STRICT_KEYS`` (``1``, ``true``, ``yes``, ``on``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from chakra_core.base._errors import ConfigError
from chakra_core.base._options import suggest
from chakra_core.system._model import COLLECTIVE_KINDS

__all__ = [
    "CUSTOM_SPELLINGS",
    "CUSTOM_KEYS",
    "SYSTEM_KEYS",
    "ASTRA_IGNORED_KEYS",
    "ASTRA_UNMODELLED_KEYS",
    "NETWORK_KEYS",
    "MEMORY_KEYS",
    "STRICT_ENV",
    "strict_default",
    "check_keys",
]

#: the suffixes of the custom-collective keys: ``custom`` (ASTRA-sim since June 2025), then
#: ``chakra`` (the spelling before).
CUSTOM_SPELLINGS = ("custom", "chakra")

#: system.json keys naming a custom collective: a Chakra ET per rank (ASTRA-sim's Collective API),
#: in both spellings.
CUSTOM_KEYS = tuple(f"{k}-implementation-{s}" for s in CUSTOM_SPELLINGS for k in COLLECTIVE_KINDS)

#: system.json keys that we read.
SYSTEM_KEYS = (
    "scheduling-policy", "collective-optimization", "endpoint-delay", "local-reduction-delay",
    "active-chunks-per-dimension", "preferred-dataset-splits", "local-mem-bw", "roofline-enabled",
    "peak-perf", "replay-only", "trace-enabled",
) + tuple(f"{k}-implementation" for k in COLLECTIVE_KINDS) + CUSTOM_KEYS

#: system.json keys ASTRA-sim knows (now or in older versions) that do not change the analytical
#: model's timing.
ASTRA_IGNORED_KEYS = (
    "L", "o", "g", "G", "model-shared-bus", "boost-mode", "intra-dimension-scheduling",
    "inter-dimension-scheduling", "track-local-mem", "local-mem-trace-filename", "local-mem-latency",
    "remote-mem-bw", "remote-mem-latency",
)

#: system.json keys ASTRA-sim reads that change its timing but that the description does not model
#: (each is reported when present).
ASTRA_UNMODELLED_KEYS = ("per-node-custom-implementation",)

#: the keys of ASTRA-sim's analytical network.yml (exact spelling, one list entry per dimension).
NETWORK_KEYS = ("topology", "npus_count", "bandwidth", "latency")

#: the keys of ASTRA-sim's memory.json.
MEMORY_KEYS = ("memory-type", "remote-mem-latency", "remote-mem-bw", "num-nodes", "num-npus-per-node")

#: the environment variable that makes unknown keys errors.
STRICT_ENV = "CHAKRA_STRICT_KEYS"


def strict_default() -> bool:
    """Whether ``CHAKRA_STRICT_KEYS`` asks for strict keys (``1``, ``true``, ``yes``, ``on``);
    any other value than those and ``0``, ``false``, ``no``, ``off`` or empty is a ConfigError."""
    text = os.environ.get(STRICT_ENV, "").strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise ConfigError(f"{STRICT_ENV} must be 1 or 0 (true/false), got {os.environ[STRICT_ENV]!r}")


def check_keys(data: Mapping[Any, Any], where: str, known: Iterable[str], what: str,
               strict: bool) -> list[str]:
    """Warnings for the keys of ``data`` that ASTRA-sim does not read, each naming the closest
    known key; with ``strict`` the first of them is a ConfigError instead.

    ``known``: the exact key names ASTRA-sim reads from this file (``what``: ``system``,
    ``network`` or ``memory``).  A known key spelt with ``_`` for ``-`` (or the reverse) is
    reported too: it is read here, but ASTRA-sim ignores it.
    """
    known = tuple(known)
    by_norm = {k.replace("_", "-"): k for k in known}
    out = []
    for key in data:
        k = str(key)
        if k in known:
            continue
        twin = by_norm.get(k.replace("_", "-"))
        if twin is not None:
            reason = f"ASTRA-sim reads only {twin!r}"
            warning = f"is read here as {twin!r}, but ASTRA-sim ignores it: it reads only {twin!r}"
        else:
            reason = f"not an ASTRA-sim {what} key{suggest(k, known)}"
            warning = f"is ignored: {reason}"
        if strict:
            raise ConfigError(f"{reason}; unknown keys are errors in strict mode ({STRICT_ENV})",
                              where, f"key {k!r}")
        out.append(f"{where}: key {k!r} {warning}")
    return out
