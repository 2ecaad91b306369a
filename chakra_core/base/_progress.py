"""Progress on stderr: a bar only when stderr is a terminal and progress is not turned off.

The core's loops (per rank in convert, validate, stats and jsonize, per backend in a pipeline)
and any plugin report progress the same way::

    with chakra_core.progress("simulating", total=len(traces)) as bar:
        for rt in traces:
            ...
            bar.advance()

When nothing is shown (stderr is a file or a pipe, ``chakra -q``, or
:func:`set_progress_enabled` turned it off) the bar costs nothing and tqdm is not imported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Progress", "progress", "set_progress_enabled", "counted_then"]

_ENABLED = [True]


def set_progress_enabled(enabled: bool) -> None:
    """Turn progress bars on (the default: shown when stderr is a terminal) or off everywhere."""
    _ENABLED[0] = bool(enabled)


class Progress:
    """A running bar: :meth:`advance` by steps, or :meth:`__call__` with ``(done, total)``."""

    def __init__(self, bar: Any = None):
        self._bar = bar

    @property
    def shown(self) -> bool:
        """Whether this bar is drawn on stderr."""
        return self._bar is not None

    def advance(self, steps: int = 1) -> None:
        """Count ``steps`` more units done."""
        if self._bar is not None:
            self._bar.update(steps)

    def status(self, text: str) -> None:
        """Show ``text`` after the count (e.g. ``running=2 failed=1``)."""
        if self._bar is not None:
            self._bar.set_postfix_str(text)

    def __call__(self, done: int, total: int | None = None) -> None:
        """Set the count to ``done`` (of ``total`` when given): the ``progress(done, total)``
        callback that :meth:`TraceSet.write` and :func:`validate` accept."""
        if self._bar is None:
            return
        if total is not None and total != self._bar.total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)


def counted_then(bar: Progress, text: str) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback that sets ``bar`` and, once ``done`` reaches
    ``total``, shows ``text``: what runs after the counted steps (the cross-rank checks after
    the ranks, for example)."""

    def step(done: int, total: int) -> None:
        bar(done, total)
        if done >= total:
            bar.status(text)

    return step


@contextmanager
def progress(description: str, total: int | None = None, unit: str = "rank") -> Iterator[Progress]:
    """A progress bar labelled ``description`` counting ``total`` ``unit``s (None: unknown).

    Drawn on stderr only when stderr is a terminal and progress is enabled; the bar is removed
    when the block ends.
    """
    if not (_ENABLED[0] and _isatty()):
        yield Progress()
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=description, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)
    try:
        yield Progress(bar)
    finally:
        bar.close()


def _isatty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
