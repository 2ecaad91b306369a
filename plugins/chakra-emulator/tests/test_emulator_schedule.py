"""The replay loop of one rank, in this process (no workers, no process group): the recorded
``ddp_buckets`` fixture's rank 0, its durations scaled by 100 so that the check does not depend
on this machine's wake-up latency, communications that complete at once.

The rule is the simulator's: a node starts when its dependencies are done and its resource has a
free slot.  In this trace a bucket's all-reduce becomes ready while the main thread holds the CPU
slot with a long host node (an ``[idle]`` gap of 819 us, 82 ms scaled); the all-reduce must
start then, not when that node ends."""

from __future__ import annotations

import time

import torch

import chakra_core
from chakra_emulator.compute import Runner
from chakra_emulator.nodes import NodeRunner
from chakra_emulator.plan import COLL, R_CPU, load_plan
from chakra_emulator.schedule import Replay

SCALE = 100
SLACK_NS = 20_000_000


def _plan(path):
    plan = load_plan(next(iter(chakra_core.open_traceset(str(path)))))
    plan.dur_ns = [d * SCALE for d in plan.dur_ns]
    return plan


def test_a_collective_starts_while_the_cpu_slot_holds_host_work(recorded):
    plan = _plan(recorded["ddp_buckets"])
    nodes = NodeRunner(plan, Runner(torch.device("cpu"), None, "duration"), None, "duration",
                       torch.Generator(), 0)
    replay = Replay(plan, 1, nodes.run_sync, lambda i: (time.monotonic_ns(), None), lambda *a: None,
                    wait_until=nodes.host.until, deadline=nodes.deadline, hold=nodes.host.until)
    try:
        start, end, _, _ = replay.run(time.monotonic_ns())
    finally:
        replay.close()
    colls = [i for i in range(len(plan)) if plan.kind[i] == COLL]
    assert len(colls) == 4
    for i in colls:
        deps = plan.deps[plan.dep_ptr[i]:plan.dep_ptr[i + 1]]
        ready = max((end[d] for d in deps), default=start[i])
        assert start[i] - ready < SLACK_NS, (plan.ids[i], (start[i] - ready) / 1e6)
    # the case the trace holds: an all-reduce that started inside a longer CPU host node
    inside = [i for i in colls for c in range(len(plan))
              if plan.res[c] == R_CPU and start[c] < start[i] and end[i] < end[c] - SLACK_NS]
    assert inside
