"""One rank of a replay: ``python -m chakra_emulator.worker JOB_DIR RANK``.

Reads ``JOB_DIR/job.pkl`` (world, backend, device, groups, options) and its
``plan.RANK.pkl``; joins the rendezvous on 127.0.0.1 (rank 0 opens a TCP store on a free port and
publishes it in ``JOB_DIR/port``); creates the process groups in name order on every rank;
calibrates when the plan has kernel nodes; builds the real operators; runs the warm-up and
measured iterations, each from one start time that rank 0 sets a few ms ahead after a barrier
(every rank starts its iteration at that instant of ``time.monotonic_ns``, which the processes
of a machine share); writes ``result.RANK.pkl``.  While it runs it keeps
``status.RANK`` (a sequence number, then five int64: phase, iteration, nodes done, the position
of its oldest node in flight or -1, when that node started in ``time.monotonic_ns``) up to date
for the supervisor, which reads it with :class:`StatusReader`.
An error is written to ``error.RANK`` in one line and the process exits with status 3.
"""

from __future__ import annotations

import mmap
import os
import pickle
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

__all__ = ["main", "STATUS_BYTES", "PHASES", "Status", "StatusReader", "read_status"]

#: the size of ``status.RANK``: six native int64 words (the sequence number, then the five fields)
STATUS_BYTES = 48
PHASES = ("starting", "rendezvous", "preparing", "running", "done")


class Status:
    """The worker's side of ``status.RANK`` (a file of :data:`STATUS_BYTES` bytes): its sequence
    number is odd while the five fields are being written (one aligned 8-byte store each, never
    ``struct.pack_into``, which clears its bytes before it writes them), so that a reader in
    another process never takes half of one update with half of another."""

    def __init__(self, path: Path):
        fd = os.open(path, os.O_RDWR)
        self.map = mmap.mmap(fd, STATUS_BYTES)
        os.close(fd)
        self.words = memoryview(self.map).cast("q")
        self.phase = 0
        self.iteration = 0
        self.seq = 0

    def set(self, phase: int, pos: int = -1, since: int = 0, done: int = 0) -> None:
        """Publish the phase and the oldest node in flight."""
        self.phase = phase
        words = self.words
        words[0] = self.seq + 1
        words[1], words[2], words[3], words[4], words[5] = (phase, self.iteration, done, pos,
                                                            since or time.monotonic_ns())
        self.seq += 2
        words[0] = self.seq


class StatusReader:
    """The supervisor's side of ``status.RANK``: :meth:`read` returns the five fields as one
    update left them (the sequence number even and unchanged around the read of the fields),
    else, after ``tries`` reads that overlapped a write, the last such update (zeros and
    position -1 before the first)."""

    def __init__(self, path: Path, tries: int = 1000):
        fd = os.open(path, os.O_RDONLY)
        self.map = mmap.mmap(fd, STATUS_BYTES, access=mmap.ACCESS_READ)
        os.close(fd)
        self.words = memoryview(self.map).cast("q")
        self.tries = tries
        self.last: tuple[int, int, int, int, int] = (0, 0, 0, -1, 0)

    def read(self) -> tuple[int, int, int, int, int]:
        """(phase, iteration, nodes done, position of the oldest node in flight or -1, since ns)."""
        for _ in range(self.tries):
            words = self.words
            before = words[0]
            fields = (words[1], words[2], words[3], words[4], words[5])
            if before % 2 == 0 and words[0] == before:
                self.last = fields
                break
        return self.last


def read_status(path: Path) -> tuple[int, int, int, int, int]:
    """One whole update of the status file at ``path`` (see :class:`StatusReader`)."""
    return StatusReader(path).read()


#: how far ahead of its own clock rank 0 sets an iteration's start (covers handing it to every rank)
_START_AHEAD_NS = 3_000_000
#: how long before an iteration's start a rank stops sleeping and spins, so that it begins on time
#: where a sleep can wake late (an idle virtual CPU is slow to wake)
_START_SPIN_NS = 1_000_000


def _precise_timers() -> None:
    """A timer slack of 1 ns for this thread and the threads it starts (Linux; elsewhere a
    no-op): sleeps then end within a few us instead of the default 50 us late."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK
    except (OSError, AttributeError):
        pass


def _iteration_start(store: Any, rank: int, it: int) -> int:
    """The common start (``time.monotonic_ns``) of iteration ``it``: rank 0 sets it a few ms
    ahead and publishes it in the store; the others read it."""
    key = f"start.{it}"
    if rank == 0:
        t0 = time.monotonic_ns() + _START_AHEAD_NS
        store.set(key, str(t0))
        return t0
    return int(store.get(key))


def _rendezvous(job: dict[str, Any], rank: int, jobdir: Path) -> Any:
    import torch.distributed as dist

    world = job["world"]
    timeout = timedelta(seconds=job["startup_timeout_s"])
    if rank == 0:
        store = dist.TCPStore("127.0.0.1", 0, world, is_master=True, timeout=timeout, wait_for_workers=False)
        tmp = jobdir / ".port.tmp"
        tmp.write_text(str(store.port))
        os.replace(tmp, jobdir / "port")
    else:
        deadline = time.monotonic() + job["startup_timeout_s"]
        port_file = jobdir / "port"
        while not port_file.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("rank 0 never opened the rendezvous")
            time.sleep(0.02)
        store = dist.TCPStore("127.0.0.1", int(port_file.read_text()), world, is_master=False, timeout=timeout)
    dist.init_process_group(job["backend"], store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=job["pg_timeout_s"]))
    return store


def _groups(job: dict[str, Any]) -> dict[str, tuple[Any, list[int]]]:
    """Every named group, created in name order on every rank (torch.distributed's rule)."""
    import torch.distributed as dist

    out = {}
    for name in sorted(job["groups"]):
        ranks = sorted(job["groups"][name])
        pg = dist.new_group(ranks)
        out[name] = (pg if job["rank"] in ranks else None, ranks)
    return out


def _realtime_now() -> bool:
    """Whether every thread of this worker runs SCHED_FIFO now (after its replay)."""
    from .realtime import is_realtime

    return sys.platform.startswith("linux") and is_realtime()


def _device(job: dict[str, Any], rank: int) -> Any:
    import torch

    if job["device"] == "cuda":
        torch.cuda.set_device(rank % torch.cuda.device_count())
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _run(jobdir: Path, rank: int, status: Status) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    from .calibrate import load_or_measure
    from .collectives import Comms
    from .compute import Runner
    from .nodes import NodeRunner
    from .schedule import Replay

    job = pickle.loads((jobdir / "job.pkl").read_bytes())
    job["rank"] = rank
    plan = pickle.loads((jobdir / f"plan.{rank}.pkl").read_bytes())
    torch.set_num_threads(job["threads"])
    torch.set_num_interop_threads(1)
    sys.setswitchinterval(5e-5)
    if job["backend"] == "nccl":
        os.environ.setdefault("TORCH_NCCL_BLOCKING_WAIT", "1")
    device = _device(job, rank)
    status.set(1)
    store = _rendezvous(job, rank, jobdir)
    groups = _groups(job)
    if job["realtime"]:
        from .realtime import make_realtime

        make_realtime()
    status.set(2)
    cal = None
    if job["calibrate"]:
        if rank == 0:
            cal = load_or_measure(str(device), job["recalibrate"])
        box = [cal]
        dist.broadcast_object_list(box, src=0)
        cal = box[0]
    seed = job["seed"] * 1_000_003 + rank
    torch.manual_seed(seed)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    runner = Runner(device, cal, job["kernel_sizing"])
    comms = Comms(device, rank, job["world"], groups, set(job["compose"]))
    nodes = NodeRunner(plan, runner, comms, job["compute"], gen, job["real_memory_mb"] << 20)
    on_thread = (lambda: torch.cuda.set_device(device)) if device.type == "cuda" else None
    replay = Replay(plan, job["streams"], nodes.run_sync, nodes.start_comm,
                    lambda pos, since, done: status.set(3, pos, since, done), on_thread,
                    futures=job["backend"] == "gloo",
                    wait_until=lambda ns: nodes.host.until(ns, spin_ns=_START_SPIN_NS),
                    deadline=nodes.deadline, hold=nodes.host.until)
    iterations = []
    try:
        for it in range(job["warmup"] + job["repeats"]):
            status.iteration = it
            dist.barrier()
            t0 = _iteration_start(store, rank, it)
            status.set(3, -1, t0, 0)
            start, end, order, late = replay.run(t0)
            runner.sync()
            if it >= job["warmup"]:
                iterations.append({"t0": t0, "late_ns": late, "start": start, "end": end, "order": order})
        dist.barrier()
    finally:
        replay.close()
    status.set(4)
    return {"rank": rank, "iterations": iterations, "how": nodes.how, "observed": nodes.observed,
            "calibration": cal, "torch": torch.__version__, "backend": job["backend"], "device": str(device),
            "unsupported": sorted(comms.unsupported), "over_budget": nodes.over_budget,
            "host_tail_ns": nodes.host.tail_ns, "realtime": _realtime_now()}


def main(argv: list[str] | None = None) -> int:
    """Run one rank; 0 on success, 3 on an error (written to ``error.RANK``)."""
    args = sys.argv[1:] if argv is None else argv
    jobdir, rank = Path(args[0]), int(args[1])
    status = Status(jobdir / f"status.{rank}")
    _precise_timers()
    try:
        result = _run(jobdir, rank, status)
        tmp = jobdir / f".result.{rank}.tmp"
        tmp.write_bytes(pickle.dumps(result))
        os.replace(tmp, jobdir / f"result.{rank}.pkl")
    except BaseException as e:  # noqa: BLE001 - reported to the supervisor in one line
        text = " ".join(f"{type(e).__name__}: {e}".split())
        (jobdir / f"error.{rank}").write_text(text[:2000])
        return 3
    try:
        import torch.distributed as dist

        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - the result is written; teardown noise does not matter
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
