"""Publishing outputs so that they are never half replaced.

Every output is built beside its target under a temporary name, then put in place by renames:

- one file: ``.NAME.chakra-file-PID-RANDOM.tmp``, renamed over ``NAME``
  (:class:`chakra_core.io._etio.atomic_output`);
- a directory: built whole in ``.NAME.chakra-new-PID-RANDOM.tmp`` and swapped with ``NAME`` in one
  step (Linux ``renameat2(RENAME_EXCHANGE)``); elsewhere the old directory is renamed aside
  (``.NAME.chakra-old-...``), the new one renamed in and the old one removed, and a run killed
  between the two renames gets the old directory back on the next run (:func:`output_directory`);
- several files in a directory shared with other files (a trace set at a prefix): staged in
  ``.NAME.chakra-set-...``, a journal written, then renamed one by one; a run killed during the
  renames is completed by the next run that reads or writes the set (:func:`publish_files`).

Temporaries carry the writing process's id: the next run of the same output removes those of
processes that no longer run, and nothing else.  Errors name the target, never a temporary.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path

from chakra_core.base._errors import ConfigError
from chakra_core.base._inputguard import refuse_replacing_input, refuse_replacing_inputs_in

__all__ = ["output_directory", "inside_output", "staged_output", "StagedOutput", "temp_sibling", "new_directories",
           "refuse_directory_in_the_way",
           "remove_stale", "is_temporary", "in_staging", "renamed_error", "publish_files", "commit_files",
           "finish_interrupted", "MARKER"]

#: the file that marks a directory as a chakra output, which the next run may replace whole.
MARKER = ".chakra-output"
_MARKER_TEXT = "Written by chakra. The next run with this output directory replaces it whole.\n"
_TEMP_RE = re.compile(r"^\.(?P<name>.+)\.chakra-(?P<kind>file|new|old|set)-(?P<pid>\d+)-[A-Za-z0-9_]+\.tmp$")
_JOURNAL = ".publish.json"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def temp_sibling(target: Path, kind: str) -> Path:
    """A fresh temporary name beside ``target`` (``kind``: file, new, old or set)."""
    return target.parent / f".{target.name}.chakra-{kind}-{os.getpid()}-{os.urandom(4).hex()}.tmp"


def is_temporary(name: str) -> bool:
    """True when ``name`` is one of the temporary names above."""
    return _TEMP_RE.match(name) is not None


def in_staging(path: Path) -> bool:
    """True when ``path`` lies inside a directory that is being built (nothing there is stale)."""
    return any(is_temporary(part) for part in Path(path).parts[:-1])


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def _stale(target: Path, kinds: Sequence[str], any_name: bool = False) -> Iterator[tuple[Path, str]]:
    """Temporaries of ``target`` (of any name in its directory with ``any_name``) of the given
    kinds whose writing process no longer runs."""
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    for entry in entries:
        m = _TEMP_RE.match(entry.name)
        if (m and (any_name or m["name"] == target.name) and m["kind"] in kinds
                and not _alive(int(m["pid"]))):
            yield Path(entry.path), m["kind"]


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def remove_stale(target: Path, kinds: Sequence[str] = ("file",)) -> None:
    """Remove what killed runs left beside ``target``: temporaries of dead processes, only ours."""
    for path, _kind in _stale(target, kinds):
        _remove(path)


def renamed_error(e: OSError, temp: Path, target: Path) -> OSError:
    """``e`` with the temporary path ``temp`` (or a path under it) replaced by ``target``."""
    name = e.filename
    if name is None or str(name) == str(temp):
        where = str(target)
    elif str(name).startswith(str(temp) + os.sep):
        where = str(target) + str(name)[len(str(temp)):]
    else:
        return e
    return OSError(e.errno, e.strerror or str(e), where)


def inside_output(output: str | os.PathLike, name: str, option: str) -> Path:
    """``output / name`` for a backend option ``option`` that names a file in its output directory.

    Raises ConfigError, naming the option, when ``name`` is empty, absolute, or leaves ``output``
    through ``..``.
    """
    if not name or os.path.isabs(name) or Path(name).is_absolute():
        raise ConfigError(f"option {option!r}: {name!r} must be a relative name inside the output directory")
    norm = os.path.normpath(name)
    if norm == os.curdir or norm == os.pardir or norm.startswith(os.pardir + os.sep):
        raise ConfigError(f"option {option!r}: {name!r} leaves the output directory")
    return Path(output) / norm


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` atomically; False where the system or file system cannot."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _swap_in(stage: Path, final: Path) -> None:
    """Put the complete directory ``stage`` at ``final``; the old ``final`` is removed."""
    if not os.path.lexists(final):
        os.rename(stage, final)
        return
    if _exchange(stage, final):
        shutil.rmtree(stage, ignore_errors=True)  # it now holds the old directory
        return
    old = temp_sibling(final, "old")
    os.rename(final, old)
    try:
        os.rename(stage, final)  # killed before this: the next run renames ``old`` back
    except BaseException:
        os.rename(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _recover(final: Path) -> None:
    """Undo a fallback swap killed between its renames, then remove what killed runs left."""
    for path, kind in list(_stale(final, ("old",))):
        if kind == "old" and not os.path.lexists(final):
            os.rename(path, final)
    remove_stale(final, ("new", "old", "file"))


def _missing_parents(directory: Path) -> list[Path]:
    """``directory`` and its parents that do not exist, deepest first; a file where the nearest
    one that exists should be a directory is a ConfigError naming it."""
    d, missing = directory, []
    while not os.path.lexists(d) and d != d.parent:
        missing.append(d)
        d = d.parent
    _refuse_file_in_the_way(d)
    return missing


def make_parents(path: Path) -> None:
    """Make the directories an output file ``path`` goes in; a file in the way of one is a
    ConfigError naming that file (``mkdir`` said only "File exists")."""
    _missing_parents(path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)


def _refuse_file_in_the_way(directory: Path) -> None:
    """A ConfigError naming ``directory`` (an output directory) when it exists and is not one."""
    if os.path.lexists(directory) and not directory.is_dir():
        raise ConfigError("a file is in the way of the output directory", str(directory))


def refuse_directory_in_the_way(path: Path) -> None:
    """A ConfigError naming ``path`` (an output file) when a directory is there."""
    if path.is_dir() and not path.is_symlink():
        raise ConfigError("a directory is in the way of an output file", str(path))


@contextlib.contextmanager
def new_directories(directory: str | os.PathLike) -> Iterator[None]:
    """Run the block that writes an output in ``directory``.  A file in the way (``directory``
    or its nearest parent that exists) is a ConfigError naming it.  When the block fails,
    ``directory`` and the parents of it that did not exist before are removed where empty
    (deepest first): a failed write leaves no empty directory of its own behind, and never
    removes one that was there."""
    missing = _missing_parents(Path(directory))
    try:
        yield
    except BaseException:
        for made in missing:
            with contextlib.suppress(OSError):
                made.rmdir()
        raise


def _check_target(final: Path, marker: bool) -> None:
    if not os.path.lexists(final):
        return
    _refuse_file_in_the_way(final)
    refuse_replacing_inputs_in(final)
    if not marker or (final / MARKER).is_file():
        return
    with os.scandir(final) as it:
        if any(True for _ in it):
            raise ConfigError(f"the output directory is not empty and has no {MARKER} file (it was not "
                              "written by chakra, which replaces its output directory whole): give a new "
                              "or empty directory", str(final))


class StagedOutput:
    """A directory output being built: ``stage`` (created on first :meth:`open`) becomes ``final``."""

    def __init__(self, final: Path, marker: bool = True):
        self.final = final
        self.marker = marker
        self.stage: Path | None = None

    def open(self) -> Path:
        """The staging directory (created, with the output marker, on the first call)."""
        if self.stage is None:
            _recover(self.final)
            _check_target(self.final, self.marker)
            stage = temp_sibling(self.final, "new")
            try:
                self.final.parent.mkdir(parents=True, exist_ok=True)
                stage.mkdir()
                self.stage = stage
                if self.final.is_dir():
                    stage.chmod(self.final.stat().st_mode & 0o7777)
                if self.marker:
                    (stage / MARKER).write_text(_MARKER_TEXT)
            except OSError as e:
                self.discard()
                raise renamed_error(e, stage, self.final) from None
        return self.stage

    def file(self, name: str) -> Path:
        """Where to write ``name``: in the staging directory when one is open, else in ``final``."""
        return (self.stage if self.stage is not None else self.final) / name

    def publish(self) -> None:
        """Swap the staging directory into place (nothing happens when none was opened)."""
        if self.stage is not None:
            try:
                _swap_in(self.stage, self.final)
            except OSError as e:  # nothing was swapped: ``final`` is as it was
                stage = self.stage
                self.discard()
                raise renamed_error(e, stage, self.final) from None
            self.stage = None

    def discard(self) -> None:
        """Remove the staging directory; ``final`` stays as it was."""
        if self.stage is not None:
            shutil.rmtree(self.stage, ignore_errors=True)
            self.stage = None


_ACTIVE: ContextVar[dict[str, StagedOutput] | None] = ContextVar("chakra_staged_outputs", default=None)


@contextlib.contextmanager
def staged_output(path: str | os.PathLike, marker: bool = True) -> Iterator[StagedOutput]:
    """Stage the directory output ``path``; it is published when the block ends without error.

    Code inside the block that calls :func:`output_directory` with the same path builds into the
    same staging directory, so files written next to a backend's (``result.json``) are published
    in the same swap.  On an error or interruption the staging directory is removed and ``path``
    keeps its earlier content; OSErrors name ``path``, not the temporary directory.
    """
    final = Path(os.path.abspath(path))
    if final.is_symlink():
        final = Path(os.path.realpath(final))
    outer = _ACTIVE.get() or {}
    if str(final) in outer:  # an enclosing block publishes
        yield outer[str(final)]
        return
    staged = StagedOutput(final, marker)
    token = _ACTIVE.set({**outer, str(final): staged})
    try:
        yield staged
    except OSError as e:
        temp = staged.stage
        staged.discard()
        raise (renamed_error(e, temp, final) if temp is not None else e) from None
    except BaseException:
        staged.discard()
        raise
    finally:
        _ACTIVE.reset(token)
    staged.publish()


@contextlib.contextmanager
def output_directory(path: str | os.PathLike, marker: bool = True) -> Iterator[Path]:
    """Build the directory ``path`` anew: yields a temporary sibling, swapped into place at the end.

    For a backend that writes several files: write them under the yielded directory, and name
    them in the Result under ``path``.  A failure, SIGINT or SIGKILL at any moment leaves ``path``
    with either its complete old content or the complete new one.  The whole directory is
    replaced (files the new run does not write are gone), so a non-empty ``path`` without the
    :data:`MARKER` file that every such directory gets is refused; with ``marker=False`` no
    marker is written or asked for (the caller checked that all of ``path`` is its own).
    """
    with staged_output(path, marker) as staged:
        yield staged.open()


def _write_journal(stage: Path, names: Sequence[str], remove: Sequence[str]) -> None:
    tmp = stage / (_JOURNAL + ".tmp")
    tmp.write_text(json.dumps({"publish": list(names), "remove": list(remove)}))
    os.replace(tmp, stage / _JOURNAL)


def _roll_forward(stage: Path, directory: Path) -> None:
    """Finish the renames listed in ``stage``'s journal (those not done yet), then remove it."""
    plan = json.loads((stage / _JOURNAL).read_text())
    for name in plan["publish"]:
        with contextlib.suppress(FileNotFoundError):
            os.replace(stage / name, directory / name)
    for name in plan["remove"]:
        with contextlib.suppress(FileNotFoundError):
            (directory / name).unlink()
    shutil.rmtree(stage, ignore_errors=True)


def finish_interrupted(target: Path, any_name: bool = False) -> None:
    """Complete or remove what killed runs publishing files at ``target`` (a set prefix; with
    ``any_name``, every prefix in its directory) left: a staging directory with a journal is
    rolled forward, one without is removed."""
    for path, _kind in _stale(target, ("set",), any_name):
        try:
            done = (path / _JOURNAL).is_file()
            if done:
                _roll_forward(path, target.parent)
            else:
                shutil.rmtree(path, ignore_errors=True)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a journal we cannot read is left for a person to look at


@contextlib.contextmanager
def publish_files(target: Path) -> Iterator[Path]:
    """Stage files to be published together in ``target.parent`` (``target``: a set prefix).

    Yields a staging directory: write the files there under their final names, then call
    :func:`commit_files` inside the block.  An error or interruption before the commit leaves the
    directory as it was; one during the commit's renames is completed by the next reader or
    writer of the same prefix (:func:`finish_interrupted`).
    """
    finish_interrupted(target)
    stage = temp_sibling(target, "set")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        stage.mkdir()
    except OSError as e:
        raise renamed_error(e, stage, target.parent) from None
    try:
        yield stage
    except BaseException as e:
        if not (stage / _JOURNAL).is_file():
            shutil.rmtree(stage, ignore_errors=True)
        if isinstance(e, OSError):
            raise renamed_error(e, stage, target.parent) from None
        raise


def commit_files(stage: Path, names: Sequence[str], remove: Sequence[str] = ()) -> None:
    """Publish ``names`` from ``stage`` into its directory, then delete ``remove`` there.

    A journal written first lets a run killed during the renames be completed later.
    """
    directory = stage.parent
    for name in names:
        refuse_directory_in_the_way(directory / name)
        refuse_replacing_input(directory / name)
    for name in remove:  # a file of the earlier set that this command reads is not deleted either
        refuse_replacing_input(directory / name)
    _write_journal(stage, names, remove)
    _roll_forward(stage, directory)
