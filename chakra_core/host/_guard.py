"""Guarding the host against plugin code: failures, exits, interrupts, prints and slow imports.

Plugin code runs inside :func:`guarded`: its prints go to stderr (so ``--json`` output stays
clean), ``SystemExit`` becomes an ordinary failure, and ``KeyboardInterrupt`` becomes a
:class:`PluginInterrupt` naming the plugin (still a ``KeyboardInterrupt``: the CLI ends with 130).
:func:`slow_watch` warns on stderr while an import has not returned after a few seconds
(``CHAKRA_PLUGIN_SLOW_SECONDS``, default 3); an import cannot be interrupted, so loading waits.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

__all__ = ["PluginInterrupt", "PluginExit", "guarded", "slow_watch", "describe", "SLOW_ENV"]

SLOW_ENV = "CHAKRA_PLUGIN_SLOW_SECONDS"
_SLOW_DEFAULT = 3.0


class PluginInterrupt(KeyboardInterrupt):
    """A ``KeyboardInterrupt`` raised while plugin code ran; its message names the plugin."""


class PluginExit(Exception):
    """Plugin code called ``sys.exit``; a plugin must never end the process."""

    def __init__(self, code: object):
        self.code = code
        super().__init__(f"plugin code called sys.exit({code!r})")


def describe(exc: BaseException) -> str:
    """``Type: message`` of a plugin's failure, for one-line warnings and errors."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


@contextlib.contextmanager
def guarded(who: str, stage: str) -> Iterator[None]:
    """Run plugin code: stdout to stderr, ``sys.exit`` as :class:`PluginExit`, interrupts named.

    ``who`` names the plugin (``plugin 'x' (dist 1.0)``) and ``stage`` what it was doing.
    """
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    except SystemExit as e:
        raise PluginExit(e.code) from None
    except PluginInterrupt:
        raise
    except KeyboardInterrupt:
        raise PluginInterrupt(f"in {who} during {stage}") from None


def _slow_seconds() -> float:
    try:
        return float(os.environ.get(SLOW_ENV, _SLOW_DEFAULT))
    except ValueError:
        return _SLOW_DEFAULT


@contextlib.contextmanager
def slow_watch(who: str) -> Iterator[None]:
    """Warn on stderr, at once, when loading ``who`` takes longer than the slow limit."""
    seconds = _slow_seconds()
    err = sys.stderr

    def warn() -> None:
        err.write(f"chakra: warning: {who} is still loading after {seconds:g} s "
                  f"(a slow import; {SLOW_ENV} sets the limit)\n")
        err.flush()

    timer = threading.Timer(seconds, warn)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
