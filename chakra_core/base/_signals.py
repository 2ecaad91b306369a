"""Holding a command's stop signals back while a library starts something it cannot stop half-way."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["signals_held", "HELD_SIGNALS"]

#: the signals :func:`signals_held` holds back: a stop request (``kill``, a scheduler) and Ctrl-C
HELD_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGTERM and SIGINT back while the block runs, then send the ones that came to this
    process's handlers as they were before the block (each once).  For a block that starts what
    an interrupt would leave half made (a cluster whose processes outlive a cut-short start);
    a handler the block installs for these signals is replaced by the one before it.  Off the
    main thread, where no handler can be installed, nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {signum: signal.getsignal(signum) for signum in HELD_SIGNALS}
    got: list[int] = []
    for signum in HELD_SIGNALS:
        signal.signal(signum, lambda received, _frame: got.append(received))
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for received in dict.fromkeys(got):
            signal.raise_signal(received)
