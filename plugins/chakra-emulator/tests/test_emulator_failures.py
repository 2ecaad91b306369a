"""A rank that dies or hangs is reported with its last node, the others are stopped, and no
worker is left running.

The traces are built here (hand-made on purpose: a failing job is what no recording gives):
two ranks of host work and one all-reduce each."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

import chakra_core
from chakra_core import ChakraError, CommType, GlobalMetadata, MemoryRank, Node, NodeType, TraceSet, set_attr
from chakra_emulator.worker import read_status


def _host(i, us, deps=()):
    n = Node(id=i, name=f"host{i}", type=NodeType.COMP_NODE, duration_micros=us)
    set_attr(n, "is_cpu_op", True)
    n.data_deps.extend(deps)
    return n


def _all_reduce(i, size, deps=()):
    n = Node(id=i, name=f"all_reduce{i}", type=NodeType.COMM_COLL_NODE)
    set_attr(n, "comm_type", int(CommType.ALL_REDUCE))
    set_attr(n, "comm_size", size)
    n.data_deps.extend(deps)
    return n


def _set(per_rank):
    return TraceSet([MemoryRank(r, GlobalMetadata(), nodes) for r, nodes in enumerate(per_rank)], {})


def _workers() -> dict[int, list[str]]:
    """pid -> argv of this process's emulator workers that are alive."""
    me = os.getpid()
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            argv = [a for a in (d / "cmdline").read_bytes().decode(errors="replace").split("\0") if a]
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        state = stat.rsplit(")", 1)[1].split()[0]
        if ppid == me and "chakra_emulator.worker" in argv and state != "Z":
            out[int(d.name)] = argv
    return out


def _kill_when_running(rank: int, killed: list[float]) -> None:
    """Kill the worker of ``rank`` with SIGKILL once a node of it is in flight (phase 3 and a
    node position in its status; before that it may still wait for the iteration's start)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        for pid, argv in _workers().items():
            if argv[-1] != str(rank):
                continue
            status = Path(argv[-2]) / f"status.{rank}"
            try:
                phase, _it, _done, pos, _since = read_status(status)
            except OSError:
                continue
            if phase == 3 and pos >= 0:
                os.kill(pid, signal.SIGKILL)
                killed.append(time.monotonic())
                return
        time.sleep(0.05)


def test_a_dead_rank_is_reported_with_its_node_and_the_others_are_stopped():
    ts = _set([[_host(1, 30_000_000), _all_reduce(2, 64, [1])], [_host(1, 30_000_000), _all_reduce(2, 64, [1])]])
    killed: list[float] = []
    killer = threading.Thread(target=_kill_when_running, args=(1, killed), daemon=True)
    killer.start()
    with pytest.raises(ChakraError) as err:
        chakra_core.emulate(ts, options={"warmup": 0, "expected": False}, validate=False)
    stopped = time.monotonic()
    killer.join(5)
    assert killed, "the worker of rank 1 was never seen replaying"
    msg = str(err.value)
    assert msg.startswith("rank 1 died (SIGKILL) at node 1 (compute, host1)"), msg
    assert "all ranks stopped" in msg and "\n" not in msg
    assert stopped - killed[0] < 15, "the survivor was not stopped: it ran its 30 s of host work"
    assert _workers() == {}


def test_a_hung_rank_is_reported_after_the_node_timeout(chakra_cli, tmp_path):
    # rank 0 waits in an all-reduce that rank 1 never issues
    ts = _set([[_host(1, 1000), _all_reduce(2, 64, [1])], [_host(1, 1000)]])
    ts.write(f"{tmp_path}/")
    status, out, err = chakra_cli("-q", "simulate", tmp_path, "--backend", "emulator", "--no-validate",
                                  "-O", "node_timeout=1.5", "-O", "warmup=0", "-O", "expected=false")
    assert status == 2 and out == ""
    line = err.strip()
    assert "\n" not in line
    assert line.startswith("chakra simulate: error: rank 0 hangs at node 2 (collective, all_reduce2): "
                           "in flight longer than the node timeout of 1.5 s"), line
    assert "done with their nodes: ranks [1]" in line and line.endswith("all ranks stopped")
    assert _workers() == {}


def test_threads_past_the_bound_are_refused_before_any_worker_starts(chakra_cli, tmp_path):
    # 100,000 intra-op threads used to start the workers, which died in torch's pools (SIGSEGV)
    _set([[_host(1, 1000)], [_host(1, 1000)]]).write(f"{tmp_path}/")
    status, out, err = chakra_cli("emulate", tmp_path, "-O", "threads=100000")
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert "option 'threads' must be <= 1024, got 100000" in err
    assert _workers() == {}


@pytest.mark.parametrize("option,said", [
    ("startup_timeout=1e300", "option 'startup_timeout' must be <= 604800.0, got 1e+300"),  # was an internal error
    ("node_timeout=1e20", "option 'node_timeout' must be <= 604800.0, got 1e+20"),  # gloo's OverflowError
    ("repeats=1000000000", "option 'repeats' must be <= 1000000, got 1000000000"),  # ran until killed
    ("warmup=1000000000", "option 'warmup' must be <= 1000000, got 1000000000"),
])
def test_timeouts_and_iterations_past_their_bounds_are_refused(chakra_cli, tmp_path, option, said):
    _set([[_host(1, 1000)], [_host(1, 1000)]]).write(f"{tmp_path}/")
    status, out, err = chakra_cli("emulate", tmp_path, "-O", option)
    assert status == 2 and len(err.strip().splitlines()) == 1 and said in err, err
    assert _workers() == {}


def test_a_dependency_cycle_is_refused_before_any_worker_starts(chakra_cli, tmp_path):
    # with --no-validate, its nodes never became ready and the workers waited for ever
    cycle = [[_host(1, 1000, [2]), _host(2, 1000, [1])] for _ in range(2)]
    _set(cycle).write(f"{tmp_path}/")
    status, out, err = chakra_cli("emulate", tmp_path, "--no-validate", "-O", "expected=false")
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert err.strip().endswith("trace.0.et:node 2: dependency cycle: 2 -> 1 -> 2"), err
    assert _workers() == {}


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(d.name))
    return out


def test_sigterm_stops_the_workers_and_removes_the_job(tmp_path):
    # SIGTERM (kill, a scheduler, a container stop) used to end the supervisor at once: its
    # workers ran on (re-parented to init) and its job folder stayed
    import subprocess
    import sys

    _set([[_host(1, 60_000_000)], [_host(1, 60_000_000)]]).write(f"{tmp_path}/t")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "chakra_core.cli.main", "-q", "emulate", str(tmp_path / "t"),
                             "-O", "expected=false", "-O", "warmup=0"], stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 240
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        workers = _children(proc.pid)
        time.sleep(0.1)
    assert len(workers) == 2, "the workers never started"
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and err.strip() == "chakra: terminated by SIGTERM", err
    assert not [p for p in workers if Path(f"/proc/{p}").exists() and "Z" not in
                (Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0])]
    assert not list(tmp_path.glob("chakra-emulate-*"))


def _broadcast(i, root=None):
    n = Node(id=i, name=f"broadcast{i}", type=NodeType.COMM_COLL_NODE)
    set_attr(n, "comm_type", int(CommType.BROADCAST))
    set_attr(n, "comm_size", 4096)
    if root is not None:
        set_attr(n, "root", root)
    return n


def test_a_root_outside_the_group_is_refused_and_a_missing_one_is_said(chakra_cli, tmp_path):
    # a root of 5 on two ranks was replayed from rank 0 without a word: another broadcast
    _set([[_broadcast(1, 5)], [_broadcast(1, 5)]]).write(f"{tmp_path}/bad/")
    status, _out, err = chakra_cli("emulate", tmp_path / "bad", "-O", "expected=false")
    assert status == 2 and err.strip().endswith(
        "trace.0.et:node 1: BROADCAST root 5 is not a member of the world ([0, 1])"), err
    _set([[_broadcast(1)], [_broadcast(1)]]).write(f"{tmp_path}/none/")
    result = chakra_core.emulate(str(tmp_path / "none"), options={"warmup": 0, "expected": False})
    assert "2 rooted collective(s) without a root attribute ran with their group's first rank as root" in result.notes


def _aten_add(i, numel):
    # hand-made: an operator the emulator builds from its recorded inputs (2 float tensors)
    n = Node(id=i, name="aten::add", type=NodeType.COMP_NODE, duration_micros=100)
    set_attr(n, "is_cpu_op", True)
    n.inputs.types = "['Tensor(float)', 'Tensor(float)', 'Int']"
    n.inputs.values = f"[[1, 2, 0, {numel}, 4, 'cpu'], [3, 4, 0, {numel}, 4, 'cpu'], 1]"
    n.inputs.shapes = f"[[{numel}], [{numel}], []]"
    return n


def test_an_operator_past_what_the_budget_has_left_is_counted():
    # 4 MiB of tensors against a budget of 1 MiB: it runs as host work, and the note says so
    # even though the small operator after it still fits (the count needed the budget used up)
    ts = _set([[_aten_add(1, 1 << 19), _aten_add(2, 16)]])
    result = chakra_core.emulate(ts, options={"warmup": 0, "expected": False, "real_memory_mb": 1})
    how = {n["id"]: n["how"] for n in result.summary["nodes"]}
    assert how == {1: "host", 2: "real"}
    assert "1 compute node(s) with an operator ran as kernels or host work: their tensors would pass " \
           "real_memory_mb" in result.notes
