"""The files a command reads, kept from being replaced by what it writes.

While :func:`guarding_inputs` is active (the ``chakra`` command line, for the length of one
command), every file that :func:`chakra_core.expand_paths` names (the inputs of every format) is
noted by its device and inode, and :class:`chakra_core.atomic_output` refuses to replace one of
them: ``chakra jsonize set/trace.0.et -o set/trace.0.et`` or a timeline written over a rank of
the set it simulates would destroy the input.  Outside it (a program using the library) nothing
is noted or refused.  The note lives in a context variable, so threads a command starts do not
see it (they read what the command's own thread opened first).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from chakra_core.base._errors import ChakraError

__all__ = ["guarding_inputs", "note_inputs", "refuse_replacing_input", "refuse_replacing_inputs_in"]

_READ: ContextVar[set[tuple[int, int]] | None] = ContextVar("chakra_inputs_read", default=None)


@contextmanager
def guarding_inputs() -> Iterator[None]:
    """Note the inputs read and refuse outputs over them until the block ends."""
    token = _READ.set(set())
    try:
        yield
    finally:
        _READ.reset(token)


def note_inputs(paths: Iterable[str]) -> None:
    """Note ``paths`` as files being read (nothing outside :func:`guarding_inputs`)."""
    read = _READ.get()
    if read is None:
        return
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        read.add((st.st_dev, st.st_ino))


def refuse_replacing_input(path: str | os.PathLike) -> None:
    """Raise ChakraError naming ``path`` when it is a file noted as read."""
    read = _READ.get()
    if not read:
        return
    try:
        st = os.stat(path)
    except OSError:
        return
    if (st.st_dev, st.st_ino) in read:
        raise ChakraError("is an input of this command: not replaced (write the output elsewhere)", os.fspath(path))


def refuse_replacing_inputs_in(directory: str | os.PathLike) -> None:
    """Raise ChakraError naming the first file of ``directory`` noted as read (a directory output
    is replaced whole)."""
    if not _READ.get() or not os.path.isdir(directory):
        return
    with os.scandir(os.fspath(directory)) as it:
        for entry in it:
            refuse_replacing_input(entry.path)
