"""Start one worker process per rank, supervise them, and stop every one of them.

Each worker is ``python -m chakra_emulator.worker JOB RANK`` in its own session (process group),
so that stopping it stops anything it started.  The supervisor polls every worker: a worker that
exits with an error or a signal, a node in flight longer than ``node_timeout_s``, or a start-up
(torch import, rendezvous, process groups, preparation) longer than ``startup_timeout_s`` ends the
run: every worker still running is terminated (then killed), and a ChakraError names the rank,
its last node and what happened, in one line.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chakra_core import ChakraError, Progress, progress

from .plan import Plan
from .worker import PHASES, STATUS_BYTES, StatusReader

__all__ = ["run_workers", "EmulationFailed"]

_POLL_S = 0.02


class EmulationFailed(ChakraError):
    """A rank died, hung or failed; the others were stopped."""


class _Worker:
    def __init__(self, rank: int, jobdir: Path, env: dict[str, str]):
        self.rank = rank
        self.status_path = jobdir / f"status.{rank}"
        self.status_path.write_bytes(bytes(STATUS_BYTES))
        self.reader = StatusReader(self.status_path)
        self.err = open(jobdir / f"stderr.{rank}", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "chakra_emulator.worker", str(jobdir), str(rank)],
                                     stdin=subprocess.DEVNULL, stdout=self.err, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)
        self.started = time.monotonic_ns()

    def status(self) -> tuple[int, int, int, int, int]:
        return self.reader.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            _signal(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        _signal(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self.err.close()


def _signal(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_workers(jobdir: Path, plans: list[Plan], job: dict[str, Any]) -> list[dict[str, Any]]:
    """Run the job in ``jobdir`` (``job.pkl`` and the plans are written here) and return each
    rank's result; raises :class:`EmulationFailed` on a failure, with every worker stopped."""
    (jobdir / "job.pkl").write_bytes(pickle.dumps(job))
    for plan in plans:
        (jobdir / f"plan.{plan.rank}.pkl").write_bytes(pickle.dumps(plan))
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(job["threads"]))
    env["PYTHONUNBUFFERED"] = "1"
    workers: list[_Worker] = []
    try:
        for plan in plans:
            workers.append(_Worker(plan.rank, jobdir, env))
        total = sum(len(p) for p in plans) * (job["warmup"] + job["repeats"])
        with progress("replaying", total=total, unit="node") as bar:
            _supervise(workers, plans, job, jobdir, bar)
    finally:
        for w in workers:
            w.stop()
    return [pickle.loads((jobdir / f"result.{p.rank}.pkl").read_bytes()) for p in plans]


def _supervise(workers: list[_Worker], plans: list[Plan], job: dict[str, Any], jobdir: Path,
               bar: Progress) -> None:
    node_ns = int(job["node_timeout_s"] * 1e9)
    startup_ns = int(job["startup_timeout_s"] * 1e9)
    while True:
        now = time.monotonic_ns()
        running = 0
        for w in workers:
            code = w.proc.poll()
            if code is None:
                running += 1
            elif code != 0:
                raise EmulationFailed(_died(w, code, plans, jobdir, workers))
        if not running:
            return
        late = []
        finished = 0
        for w in workers:
            phase, it, done, pos, since = w.status()
            finished += len(plans[w.rank]) * (it + (phase == 4)) + (done if phase == 3 else 0)
            if w.proc.poll() is not None:
                continue
            if phase < 3 and now - w.started > startup_ns:
                raise EmulationFailed(f"rank {w.rank} did not start within {job['startup_timeout_s']} s "
                                      f"(still {PHASES[phase]}); all ranks stopped")
            if phase == 3 and pos >= 0 and now - since > node_ns:
                late.append((plans[w.rank].kind[pos] in ("collective", "send", "recv"), since, w, pos))
        if late:
            _comm, _since, w, pos = min(late, key=lambda x: (x[0], x[1]))
            raise EmulationFailed(_hung(w, pos, plans, workers, job))
        bar(finished)
        time.sleep(_POLL_S)


def _node(plan: Plan, pos: int) -> str:
    if pos < 0 or pos >= len(plan):
        return "before its first node"
    name = plan.names[pos]
    return f"node {plan.ids[pos]} ({plan.kind[pos]}{', ' + name if name else ''})"


def _died(w: _Worker, code: int, plans: list[Plan], jobdir: Path, workers: list[_Worker]) -> str:
    """The one-line report of a worker that exited with ``code``, preferring the rank that
    died first by a signal (the others then fail in their communication)."""
    for other in workers:
        c = other.proc.poll()
        if c is not None and c < 0 and other is not w:
            w, code = other, c
            break
    phase, it, done, pos, since = w.status()
    err = jobdir / f"error.{w.rank}"
    if code < 0:
        what = f"died ({signal.Signals(-code).name})"
    elif err.exists():
        what = f"failed: {err.read_text().strip()}"
    else:
        tail = (jobdir / f"stderr.{w.rank}").read_bytes()[-300:].decode(errors="replace").strip().splitlines()
        what = f"exited with status {code}" + (f": {tail[-1]}" if tail else "")
    last = f" at {_node(plans[w.rank], pos)}" if phase == 3 else f" while {PHASES[phase]}"
    return f"rank {w.rank} {what}{last} (iteration {it}, {done} node(s) done); all ranks stopped"


def _all_done(w: _Worker, plan: Plan) -> bool:
    """Whether ``w`` ran every node of its last iteration (it may wait for the others)."""
    phase, _it, done, pos, _since = w.status()
    return phase == 4 or (phase == 3 and pos < 0 and done == len(plan))


def _hung(w: _Worker, pos: int, plans: list[Plan], workers: list[_Worker], job: dict[str, Any]) -> str:
    """The one-line report of a node past the per-node timeout, with where the others wait."""
    others = []
    for o in workers:
        if o is w or o.proc.poll() is not None:
            continue
        phase, _it, _done, opos, _since = o.status()
        if phase == 3 and opos >= 0:
            others.append(f"rank {o.rank} at {_node(plans[o.rank], opos)}")
    finished = [o.rank for o in workers if o.proc.poll() == 0 or _all_done(o, plans[o.rank])]
    tail = f"; waiting: {', '.join(others[:4])}" if others else ""
    tail += f"; done with their nodes: ranks {finished}" if finished else ""
    return (f"rank {w.rank} hangs at {_node(plans[w.rank], pos)}: in flight longer than the node timeout "
            f"of {job['node_timeout_s']} s{tail}; all ranks stopped")
