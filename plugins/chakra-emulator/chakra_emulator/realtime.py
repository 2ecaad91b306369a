"""Real-time scheduling of a replay's workers (``-O realtime=true``; Linux).

On a machine where other jobs run, or where the kernel's fair scheduler lets a running thread
finish its slice before a woken one gets the core (EEVDF's default slice here is 1.4 ms), a
gloo thread woken by a message can wait milliseconds for a core: a collective of 160 us then
takes several ms. Under SCHED_FIFO a woken thread preempts every thread of the fair scheduler
at once. The kernel keeps 5% of each second for the fair scheduler (``sched_rt_runtime_us``),
so a worker that spins cannot take the machine.
"""

from __future__ import annotations

import os

from chakra_core import ConfigError

__all__ = ["check_realtime", "make_realtime", "is_realtime"]

_REFUSED = ("backend 'emulator': option 'realtime': this process may not use SCHED_FIFO "
            "(Linux only; needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of 1 or more)")


def check_realtime() -> None:
    """Raise :class:`ConfigError` unless this process may set SCHED_FIFO (tried on the calling
    thread, which gets its own policy back at once)."""
    if not hasattr(os, "sched_setscheduler"):
        raise ConfigError(_REFUSED)
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except OSError as e:
        raise ConfigError(f"{_REFUSED}: {e.strerror}") from None
    os.sched_setscheduler(0, policy, param)


def make_realtime() -> None:
    """Every thread of this process SCHED_FIFO priority 1 (threads it starts later inherit it)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(1))
        except ProcessLookupError:
            continue


def is_realtime() -> bool:
    """Whether every thread of this process runs SCHED_FIFO."""
    policies = []
    for tid in os.listdir("/proc/self/task"):
        try:
            policies.append(os.sched_getscheduler(int(tid)))
        except ProcessLookupError:
            continue
    return all(p == os.SCHED_FIFO for p in policies)
