"""Checks made before a command starts its work: the inputs it names exist, its system files
parse, and the optional packages it needs are installed (naming the extra of ``chakra-core``
that brings them)."""

from __future__ import annotations

import glob
import importlib.util
from pathlib import Path
from typing import Any

from chakra_core.base._errors import ConfigError

__all__ = ["INPUTS", "NEEDS", "SYSTEM_FILES", "preflight"]

#: argument dest -> its name in messages: the arguments that name an existing file, directory,
#: trace-set prefix or glob
INPUTS = {"path": "PATH", "paths": "PATH", "inputs": "INPUT", "input": "PATH", "a": "A", "b": "B",
          "pipeline": "PIPELINE", "model": "MODEL", "result": "--result", "system": "--system",
          "network": "--network", "memory": "--memory", "comm_groups": "--comm-groups"}

#: argument dests that name a system-description file (JSON or YAML), parsed before the work starts
SYSTEM_FILES = ("system", "network", "memory", "comm_groups")

#: command -> ``(module, extra, the argument dest that makes it needed, or None: always)``
NEEDS: dict[str, tuple[tuple[str, str, str | None], ...]] = {
    "report": (("plotly", "analysis", "output"),),
    "compare": (("scipy", "analysis", None),),
    "sweep": (("pyarrow", "tables", None),),
}


def preflight(command: str, args: Any) -> None:
    """Raise ConfigError for the first input of ``args`` that does not exist, or the first
    optional package ``command`` needs that is not installed."""
    for dest, name in INPUTS.items():
        values = getattr(args, dest, None)
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str) and value and not _exists(value):
                raise ConfigError(f"no such file, directory or trace-set prefix ({name})", value)
    for dest in SYSTEM_FILES:
        value = getattr(args, dest, None)
        if isinstance(value, str) and value:
            from chakra_core.system._load import read_config  # YAML and the device table: only for these

            read_config(value)
    for module, extra, when in NEEDS.get(command, ()):
        if (when is None or getattr(args, when, None)) and importlib.util.find_spec(module) is None:
            raise ConfigError(f"chakra {command} needs {module}, which is not installed: "
                              f"pip install 'chakra-core[{extra}]'")


def _exists(value: str) -> bool:
    """A file or directory, a glob that matches, a prefix some file starts with, or ``@FILE`` (a
    list file of ``chakra synth fit``) whose file exists."""
    if value.startswith("@") and len(value) > 1:
        return Path(value[1:]).is_file()
    if Path(value).exists():
        return True
    if glob.has_magic(value):
        return bool(glob.glob(value))
    return bool(glob.glob(glob.escape(value) + "*"))
