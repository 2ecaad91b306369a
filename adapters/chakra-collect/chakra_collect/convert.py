"""Turn the raw files a :class:`~chakra_collect.record.Recorder` wrote into Chakra ETs."""

from __future__ import annotations

import os
from pathlib import Path

from .record import raw_paths

__all__ = ["write_chakra"]


def write_chakra(out_dir: str | os.PathLike, rank: int, prefix: str = "trace") -> Path:
    """Convert rank ``rank``'s host ET + Kineto trace in ``out_dir`` to ``out_dir/prefix.RANK.et``.

    Each rank converts its own files, so every process of a job can call this after recording.
    Returns the path written.
    """
    from chakra_pytorch import open_pytorch

    et, kineto = raw_paths(out_dir, rank)
    files = [str(et)] + ([str(kineto)] if kineto.exists() else [])
    traces = open_pytorch(files)
    (path,) = traces.write(Path(out_dir) / prefix)
    return path
