"""Keeping what a sweep writes inside its output directory.

A point's backends write into ``OUT/points/KEY/<backend>/``; an option that names a file a backend
writes (``timeline``) is a name inside that directory: a relative name is placed there, and one
that leads out of it (absolute, or through ``..``) is refused when the sweep is planned.  The
directories the sweep writes into under ``OUT`` are never followed when they are symbolic links
(a ``points/`` link in an existing sweep's directory would send every point's files elsewhere).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chakra_core.analysis._timeline_options import TIMELINE_OPTIONS
from chakra_core.base._errors import ConfigError

__all__ = ["OUTPUT_FILE_OPTIONS", "real_directory", "confine_outputs", "output_names"]

#: backend options that name a file the backend writes
OUTPUT_FILE_OPTIONS = tuple(k for k, o in TIMELINE_OPTIONS.items() if o.type == "path")


def output_names(names: Sequence[str]) -> list[str]:
    """Each backend's directory inside a point's directory: its name, ``-2``, ``-3`` for repeats."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for name in names:
        bare = name.rsplit(":", 1)[-1]
        seen[bare] = seen.get(bare, 0) + 1
        out.append(bare if seen[bare] == 1 else f"{bare}-{seen[bare]}")
    return out


def real_directory(out: Path, *parts: str) -> Path:
    """``out/parts...``, refused (ConfigError) when one of its parts below ``out`` is a symbolic link."""
    path = Path(out)
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise ConfigError(f"{path} is a symbolic link: the sweep writes only into directories of its own "
                              "(remove the link or give another -o)", str(out))
    return path


def _inside(raw: str) -> str | None:
    """``raw`` normalised when it is a relative name that stays inside its directory, else None."""
    if not raw or os.path.isabs(raw) or "\0" in raw:
        return None
    norm = os.path.normpath(raw)
    return None if norm == "." or norm == ".." or norm.startswith(".." + os.sep) else norm


def confine_outputs(backends: Sequence[Any], document: Mapping[str, Any], point_dir: Path) -> None:
    """Give each backend stage of a point its directory under ``point_dir`` and put the files its
    options name (:data:`OUTPUT_FILE_OPTIONS`, as written in the point's ``document``) inside it;
    raises ConfigError for a name that leads outside."""
    entries = document.get("backends") or []
    for i, (stage, name) in enumerate(zip(backends, output_names([b.name for b in backends]))):
        stage.output = point_dir / name
        options = entries[i].get("options") or {} if i < len(entries) and isinstance(entries[i], dict) else {}
        for key in OUTPUT_FILE_OPTIONS:
            raw = options.get(key)
            if not isinstance(raw, str) or not raw:
                continue
            inside = _inside(raw)
            if inside is None:
                raise ConfigError(f"backends[{i}] ({stage.name}): option {key!r} names {raw!r}, outside the "
                                  f"point's output directory; give a file name, written in "
                                  f"points/KEY/{name}/ (e.g. {os.path.basename(raw) or 'timeline.json'!r})")
            stage.options[key] = str(stage.output / inside)
