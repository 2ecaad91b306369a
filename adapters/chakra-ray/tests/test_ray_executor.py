"""The ``ray`` executor on a real local cluster (loopback only), run as ``chakra sweep`` does.

The sweeps use the backend ``fault`` of a small distribution written into the test's folder and
put on ``PYTHONPATH`` (the cluster's workers inherit it): ``mode`` ``ok`` returns at once,
``die`` kills its worker with SIGKILL, ``sleep`` sleeps 60 s.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chakra_core import ConfigError
from chakra_ray import RayExecutor

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "text" / "resnet50_like.txt"

PLUGIN = '''
import os, signal, time
from chakra_core import Backend, Option, Result, hookimpl

class Fault(Backend):
    kind = "simulator"
    description = "misbehaves on request"
    options = {"mode": Option("str", "ok", "ok, die or sleep")}

    def run(self, traces, options, output):
        if options["mode"] == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if options["mode"] == "sleep":
            time.sleep(60)
        return Result("fault", self.kind, {"ranks": len(traces)})

@hookimpl
def chakra_register_backends(register):
    register("fault", Fault, description=Fault.description)
'''


@pytest.fixture
def fault_env(chakra_fake_dist) -> dict[str, str]:
    """The environment of a ``chakra`` subprocess that finds the ``fault`` distribution."""
    return chakra_fake_dist("chakra-fault", "1.0", {"fault": "fault_plugin"}, {"fault_plugin": PLUGIN})


def _sweep(tmp_path: Path, modes: list[str]) -> Path:
    """A sweep file of one point per mode of the ``fault`` backend."""
    path = tmp_path / "faults.yaml"
    options = {"npus": 2, "cycle_ns": 1.0}  # the clock given: the workers warn of no default
    path.write_text(json.dumps({"input": {"format": "text", "paths": [str(EXAMPLE)], "options": options},
                                "backends": [{"name": "fault"}],
                                "sweep": {"grid": {"backends.fault.options.mode": modes}, "timeout_s": 120}}))
    return path


def _chakra(env: dict[str, str], *args: object, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "chakra_core.cli.main", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)


def _left(processes: list) -> list[str]:
    """The ``psutil`` processes still running (zombies aside)."""
    alive = []
    for p in processes:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{p.pid} {p.name()}")
        except psutil.NoSuchProcess:
            pass
    return alive


def _kill(processes: list) -> None:
    """SIGKILL to what is left of ``processes`` (started by a failed test's sweep; psutil checks
    that each pid is still that process)."""
    for p in processes:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


def test_workers_are_bounded_as_the_local_executor_s():
    impl = RayExecutor()
    with pytest.raises(ConfigError, match="option 'workers' must be <= 1024, got 100000"):
        impl.check_options({"workers": 100000})
    assert impl.check_options({"workers": 1024})["workers"] == 1024


def test_an_address_that_takes_no_connection_is_a_one_line_error(tmp_path, fault_env):
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    proc = _chakra(fault_env, "sweep", _sweep(tmp_path, ["ok"]), "-o", tmp_path / "out", "--executor", "ray",
                   "-O", f"address=127.0.0.1:{port}")
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert time.monotonic() - t0 < 30
    assert proc.returncode == 2, err
    assert err.splitlines() == [f"chakra sweep: error: executor 'ray': cannot use the cluster (cannot reach "
                                f"127.0.0.1:{port}: Connection refused); option 'address': 127.0.0.1:{port}"]


def test_signals_are_held_while_ray_init_runs():
    """A SIGTERM during ``ray.init`` reaches this process's handler once ``init`` has returned, and
    Ray's handler (``sys.exit``) is never installed."""
    from chakra_ray.executor import _signals_held

    got = []
    before = signal.signal(signal.SIGTERM, lambda signum, _frame: got.append(signum))
    try:
        with _signals_held(ray):
            ray._private.utils.set_sigterm_handler(lambda *_: sys.exit(15))  # what ray.init does
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)
            assert got == []
        assert got == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM).__name__ == "<lambda>"
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_dead_worker_is_one_line_and_stdout_stays_json(tmp_path, fault_env):
    """Ray prints a block per worker death on stdout (it broke ``--json``); the sweep's own line stays."""
    proc = _chakra(fault_env, "sweep", _sweep(tmp_path, ["die", "ok", "ok"]), "-o", tmp_path / "out", "-j", "1",
                   "--executor", "ray", "--json")
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    assert [r["status"] for r in json.loads(out)["rows"]] == ["failed", "ok", "ok"]
    assert err.splitlines() == ["point 0: failed: the executor lost the point: WorkerCrashedError: The worker died "
                                "unexpectedly while executing this task. Check python-core-worker-*.log files "
                                "for more information."]


def test_sigterm_ends_the_sweep_as_an_interrupt_and_stops_the_cluster(tmp_path, fault_env):
    out = tmp_path / "out"
    proc = _chakra(fault_env, "sweep", _sweep(tmp_path, ["ok", "sleep", "sleep"]), "-o", out, "-j", "2",
                   "--executor", "ray")
    cluster: list = []
    try:
        deadline = time.monotonic() + 90
        while not list(out.glob("points/*/point.json")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        time.sleep(1)  # the sleeping points are running
        cluster = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        deadline = time.monotonic() + 10
        while _left(cluster) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = _left(cluster)
    finally:
        proc.kill()
        _kill(cluster)
    assert (proc.returncode, err) == (143, "chakra: terminated by SIGTERM\n")
    assert len(cluster) > 3 and left == []  # GCS, raylet, agents, workers: all stopped
    assert all((out / f"results.{ext}").exists() for ext in ("csv", "parquet", "json"))
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert [r["status"] for r in rows] == ["ok"]
