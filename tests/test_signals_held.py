"""``chakra_core.signals_held``: stop signals held back while a block starts what an interrupt
would leave half made (the Ray and Dask executors' cluster start), then delivered."""

from __future__ import annotations

import os
import signal
import threading

import chakra_core as chakra


def test_signals_wait_for_the_block_then_reach_the_handlers_of_before_once():
    got: list[int] = []
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for s in old:
            signal.signal(s, lambda received, _frame: got.append(received))
        with chakra.signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # what a library's start installs
            assert got == []
        assert got == [signal.SIGTERM, signal.SIGINT]
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def test_off_the_main_thread_nothing_is_held():
    seen = []

    def run() -> None:
        with chakra.signals_held():
            seen.append(signal.getsignal(signal.SIGTERM))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert seen == [signal.getsignal(signal.SIGTERM)]
