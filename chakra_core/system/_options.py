"""The options through which a backend takes its system description, declared once for all."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from chakra_core.base._options import Option
from chakra_core.system._load import load_system
from chakra_core.system._model import SystemDescription

__all__ = ["SYSTEM_OPTIONS", "system_from_options"]

#: a backend that runs on a system description declares these (``options = {**SYSTEM_OPTIONS, ...}``);
#: the CLI fills them from ``--system``, ``--network``, ``--memory``, ``--comm-groups``.
SYSTEM_OPTIONS: dict[str, Option] = {
    "system": Option("path", None, "system description: our YAML or ASTRA-sim's system.json", inline=True),
    "network": Option("path", None, "network: our YAML or ASTRA-sim's network.yml "
                                   "(default: a 1-D Ring of the set's ranks, 50 GB/s, 500 ns)"),
    "memory": Option("path", None, "remote memory: our YAML or ASTRA-sim's memory.json "
                                  "(default NO_MEMORY_EXPANSION)"),
    "comm_groups": Option("path", None, "communicator groups JSON {\"1\": [ranks]}, added to the trace's "
                                       "process groups"),
}


def system_from_options(options: Mapping[str, Any], algorithms: Collection[str] = ()) -> SystemDescription:
    """The description that the :data:`SYSTEM_OPTIONS` in a backend's checked ``options`` name;
    ``algorithms``: the collective algorithm names the backend models besides ASTRA-sim's
    (:func:`load_system`)."""
    return load_system(**{key: options.get(key) for key in SYSTEM_OPTIONS}, algorithms=algorithms)
