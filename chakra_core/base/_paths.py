"""PATH arguments as users type them: a file, a directory, a glob or a prefix."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence

from chakra_core.base._errors import TraceFormatError
from chakra_core.base._inputguard import note_inputs

__all__ = ["expand_paths", "is_glob"]

PathArg = str | os.PathLike[str]


def expand_paths(paths: PathArg | Sequence[PathArg], suffixes: tuple[str, ...] = (),
                 required: str | None = None) -> list[str]:
    """The files that ``paths`` name, in order; each argument is expanded on its own.

    A file is taken whatever its name.  A directory (not recursive), a glob (``*``, ``?``,
    ``[``) or a prefix (``out/job`` for ``out/job.*``) gives its files that end in one of
    ``suffixes`` (every file when empty), sorted.  With ``required`` (what the caller wants,
    e.g. ``".et files"``, a caller about to read them), an argument that gives no file, or a
    file that cannot be opened for reading, raises :class:`TraceFormatError` naming it; without,
    it gives nothing and opens nothing (a format's detection looks at what it can read).
    """
    args = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    out: list[str] = []
    for arg in args:
        found = _expand_one(os.fspath(arg), suffixes)
        if required:
            if not found:
                raise TraceFormatError(_nothing(os.fspath(arg), required), os.fspath(arg))
            for f in found:
                _refuse_unreadable(f)
        out += found
    note_inputs(out)
    return out


def _refuse_unreadable(path: str) -> None:
    """TraceFormatError naming ``path`` when it cannot be opened for reading (rather than a
    format that does not recognise what it could not read)."""
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError as e:
        raise TraceFormatError(f"cannot read ({e.strerror or e})", path) from None


def _expand_one(spec: str, suffixes: tuple[str, ...]) -> list[str]:
    if not spec:
        return []
    if os.path.isfile(spec):
        return [spec]
    if os.path.isdir(spec):
        try:
            listed = os.listdir(spec)
        except OSError as e:
            raise TraceFormatError(f"cannot read this directory ({e.strerror or e})", spec) from None
        names: Iterable[str] = (os.path.join(spec, n) for n in listed)
    elif is_glob(spec):
        names = glob.iglob(spec)
    else:
        names = glob.iglob(glob.escape(spec) + ".*")
    return sorted(f for f in names if (not suffixes or f.endswith(suffixes)) and os.path.isfile(f))


def is_glob(spec: str) -> bool:
    """True when ``spec`` is a glob pattern (has ``*``, ``?`` or ``[``)."""
    return any(c in spec for c in "*?[")


def _nothing(spec: str, required: str) -> str:
    if os.path.isdir(spec):
        if not os.access(spec, os.X_OK):  # names listed, but none of them can be opened
            return f"no {required} can be read in this directory (permission denied to enter it)"
        return f"no {required} in this directory"
    if is_glob(spec):
        return f"no {required} match this pattern"
    return f"no such file, directory or prefix of {required}"
