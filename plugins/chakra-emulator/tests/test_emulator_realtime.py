"""``-O realtime=true``: the workers' threads run SCHED_FIFO, as the workers themselves report;
where the OS refuses it the run stops before any worker starts, with a one-line error."""

from __future__ import annotations

import os

import pytest

import chakra_core
from chakra_core import ConfigError
from chakra_emulator.realtime import check_realtime


def _fifo_allowed() -> bool:
    try:
        check_realtime()
    except ConfigError:
        return False
    return True


@pytest.mark.skipif(not _fifo_allowed(), reason="this process may not use SCHED_FIFO")
def test_realtime_workers_run_fifo_and_replay_everything(recorded):
    r = chakra_core.emulate(str(recorded["ddp"]), options={"realtime": True, "compute": "duration",
                                                           "warmup": 0, "expected": False})
    assert r.summary["realtime"] == [True, True]
    assert r.summary["coverage"] == 1.0
    assert r.summary["collectives"]["ALL_REDUCE"] == {"count": 2, "bytes": 2 * 2704}
    # the supervisor got its own policy back after the check
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_without_realtime_workers_stay_on_the_fair_scheduler(recorded):
    r = chakra_core.emulate(str(recorded["ddp"]), options={"compute": "duration", "warmup": 0, "expected": False})
    assert r.summary["realtime"] == [False, False]


def test_a_refused_realtime_is_one_line_before_any_worker(recorded, monkeypatch):
    def refuse(*_args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    started = []
    monkeypatch.setattr("chakra_emulator.launch.run_workers", lambda *a: started.append(a))
    with pytest.raises(ConfigError) as e:
        chakra_core.emulate(str(recorded["ddp"]), options={"realtime": True})
    assert "realtime" in str(e.value) and "SCHED_FIFO" in str(e.value) and "\n" not in str(e.value)
    assert not started
