"""The point deadline (``base/_deadline``): it interrupts the block, and leaves a timer the caller
had set running with what was left of it."""

from __future__ import annotations

import signal
import time

import pytest

from chakra_core.base._deadline import PointTimeout, deadline


def test_the_block_is_interrupted_after_its_seconds():
    started = time.monotonic()
    with pytest.raises(PointTimeout), deadline(0.2):
        while time.monotonic() - started < 10:
            pass
    assert 0.2 <= time.monotonic() - started < 5
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_an_outer_timer_is_re_armed_with_what_is_left():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(time.monotonic()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        with deadline(5):
            time.sleep(0.2)
        left, interval = signal.getitimer(signal.ITIMER_REAL)
        assert 25.0 < left < 29.9 and interval == 0.0
        assert signal.getsignal(signal.SIGALRM) is not None and not fired
        # an outer timer that fell due inside the block fires as soon as the block ends
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with deadline(5):
            time.sleep(0.3)
        time.sleep(0.1)
        assert len(fired) == 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
