"""The installed entry points of one group, kept between commands.

Asking ``importlib.metadata`` costs about 25 ms of CPU in every process: importing it pulls in
the ``email`` package and more, and it then reads every installed distribution. Its answer is
kept in ``$XDG_CACHE_HOME/chakra/`` (default ``~/.cache``; :func:`~chakra_core.cache_dir`), one
file per interpreter, group, distribution whose version is asked, and fingerprint of what the
answer depends on (the fingerprint is in the file too, and compared whole): for every
``sys.path`` entry that holds distributions, the names of its ``*.dist-info`` and
``*.egg-info`` (and ``EGG-INFO`` in an ``.egg`` folder) and, for each, a checksum of its
``entry_points.txt`` and of the head of its ``METADATA`` (or ``PKG-INFO``: name and version come
first) with that file's modification time; for an entry that is not a folder (a zip file), its
own time. Installing, removing, upgrading or re-installing a distribution (editable included)
changes one of these, and the next command asks ``importlib.metadata`` again. Folders without
distributions (the current folder, a source checkout on ``PYTHONPATH``) add nothing to the
answer and are left out, so files written there and a change of folder keep it. Contents are
compared, not only times, because a file's time moves in steps of a clock tick: a plugin
re-installed within the same few milliseconds (a test) keeps its time. Taking the fingerprint
lists the folders and reads two small files a distribution (about 2 ms for 100 distributions).

The answers of the :data:`_KEPT` latest fingerprints are kept side by side: commands run in a
source checkout whose ``*.egg-info`` is on ``sys.path`` (``python -m ...`` there) and commands
run from elsewhere (the ``chakra`` script) each find their own, where one file per interpreter
made each ask anew after the other (25-35 ms a command).

A cache file that cannot be read, or written, is passed over: the answer is then asked for
anew, the same as without a cache.  ``CHAKRA_NO_PLUGIN_CACHE=1`` turns the cache off.

An entry point's value is loaded as ``importlib.metadata`` loads it (``module`` or
``module:attr.attr``, then extras in brackets); a value that is neither fails to load with a
message that says so.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import sys
import zlib
from dataclasses import dataclass
from typing import Any

from chakra_core.base._cachedir import cache_dir

__all__ = ["FoundEntryPoint", "installed_entry_points", "env_flag"]

_FORMAT = 1
#: the most answers kept per interpreter, group and distribution (the latest written)
_KEPT = 4
#: an entry point's value: the packaging spec's object reference, optionally followed by extras
_REFERENCE = re.compile(r"(?P<module>[\w.]+)\s*(?::\s*(?P<attr>[\w.]+)\s*)?(?:\[.*\]\s*)?$")


@dataclass(frozen=True)
class FoundEntryPoint:
    """One entry point of the group, with its distribution's name and version (``"?"`` for an
    entry point that belongs to no distribution)."""

    name: str
    value: str
    distribution: str
    version: str
    has_distribution: bool = True

    def load(self) -> Any:
        """Import the object the entry point names, as ``importlib.metadata.EntryPoint.load``
        does: ``module`` or ``module:attr.attr``, extras in brackets after it ignored; ValueError
        for a value that is not an object reference."""
        m = _REFERENCE.match(self.value)
        if m is None:
            raise ValueError(f"{self.value!r} is not an object reference (module or module:attr)")
        obj = importlib.import_module(m["module"])
        return functools.reduce(getattr, filter(None, (m["attr"] or "").split(".")), obj)


def installed_entry_points(group: str, distribution: str) -> tuple[list[FoundEntryPoint], str | None]:
    """The entry points of ``group`` (in name order) and the version of ``distribution`` (None
    when it is not installed), from the cache when nothing installed has changed since it was
    written."""
    if env_flag("CHAKRA_NO_PLUGIN_CACHE"):
        return _ask(group, distribution)
    print_ = _fingerprint()
    path = _cache_path(group, distribution, print_)
    found = _read(path, print_)
    if found is None:
        found = _ask(group, distribution)
        _write(path, print_, *found)
    return found


def env_flag(name: str) -> bool:
    """Whether environment variable ``name`` is set to a true value (1, true, yes, on; any case)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _ask(group: str, distribution: str) -> tuple[list[FoundEntryPoint], str | None]:
    """The answer of ``importlib.metadata`` itself."""
    from importlib import metadata as md

    eps = []
    for ep in sorted(md.entry_points(group=group), key=lambda e: e.name):
        if ep.dist:
            meta = ep.dist.metadata  # parsed once: each .name or .version parses it anew
            eps.append(FoundEntryPoint(ep.name, ep.value, meta["Name"], meta["Version"]))
        else:
            eps.append(FoundEntryPoint(ep.name, ep.value, "?", "?", has_distribution=False))
    try:
        version: str | None = md.version(distribution)
    except md.PackageNotFoundError:
        version = None
    return eps, version


def _cache_path(group: str, distribution: str, print_: list) -> str:
    """The cache file of this interpreter, group and distribution (whose version it keeps), for
    the fingerprint ``print_``."""
    key = zlib.crc32(json.dumps([sys.executable, group, distribution]).encode())
    return os.path.join(cache_dir(), f"entry-points-{key:08x}-{zlib.crc32(json.dumps(print_).encode()):08x}.json")


def _fingerprint() -> list:
    """What the answer depends on (see the module docstring)."""
    out: list = []
    for entry in sys.path:
        try:
            folder = os.fsdecode(entry) or "."
        except TypeError:  # not a path: importlib.metadata passes over it too
            continue
        try:
            with os.scandir(folder) as it:
                dists = sorted(e.name for e in it if e.name.lower().endswith((".dist-info", ".egg-info")))
        except OSError:  # missing, a zip file, unreadable: its time (or None) alone
            out.append([folder, _mtime(folder)])
            continue
        if folder.lower().endswith(".egg"):
            dists.append("EGG-INFO")
        if dists:
            out.append([folder, [[d, *_dist_print(os.path.join(folder, d))] for d in dists]])
    return out


def _dist_print(info: str) -> list:
    """The fingerprint of one ``*.dist-info``/``*.egg-info`` (a folder, or an egg-info file that
    is the metadata itself): checksums of its entry points and metadata head, the metadata's time."""
    out = [_checksum(os.path.join(info, "entry_points.txt"))]
    for meta in (os.path.join(info, "METADATA"), os.path.join(info, "PKG-INFO"), info):
        try:
            with open(meta, "rb") as f:
                return [*out, zlib.crc32(f.read(1024)), os.fstat(f.fileno()).st_mtime_ns]
        except OSError:  # not there, or a folder (the last one tried)
            continue
    return [*out, None, None]


def _checksum(path: str) -> int | None:
    """CRC-32 of a file's bytes, None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return zlib.crc32(f.read())
    except OSError:
        return None


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _read(path: str, print_: list) -> tuple[list[FoundEntryPoint], str | None] | None:
    """The kept answer when its fingerprint is ``print_``, else None."""
    try:
        with open(path, encoding="utf-8") as f:
            kept = json.load(f)
        if kept["format"] != _FORMAT or kept["fingerprint"] != print_:
            return None
        return [FoundEntryPoint(*e) for e in kept["entry_points"]], kept["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: str, print_: list, eps: list[FoundEntryPoint], version: str | None) -> None:
    """Keep the answer (whole or not at all: written to a file of its own beside the cache file,
    then renamed into place)."""
    import tempfile  # only when the answer changed

    text = json.dumps({"format": _FORMAT, "fingerprint": print_, "version": version,
                       "entry_points": [[e.name, e.value, e.distribution, e.version, e.has_distribution]
                                        for e in eps]})
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".entry-points-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return
    _prune(path)


def _prune(path: str) -> None:
    """Delete the answers of the same interpreter, group and distribution beyond the
    :data:`_KEPT` latest (``path`` is the one just written); one that goes away meanwhile, or a
    folder that cannot be listed, ends the pruning."""
    folder, name = os.path.split(path)
    prefix = name.rsplit("-", 1)[0] + "-"
    try:
        with os.scandir(folder) as it:
            mine = [e for e in it if e.name.startswith(prefix) and e.name.endswith(".json")]
        mine.sort(key=lambda e: e.stat().st_mtime_ns, reverse=True)
        for e in mine[_KEPT:]:
            if e.path != path:
                os.unlink(e.path)
    except OSError:
        pass
