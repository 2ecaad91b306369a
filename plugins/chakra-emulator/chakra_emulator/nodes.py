"""What each node of a rank's plan runs as, decided once before the replay (workers only).

A compute node runs its real operator (``compute=real``, the node carries an operator that
:func:`compute.build_real_op` can build, and the tensors built so far stay within the rank's
budget), else a calibrated kernel (an accelerator op) or host
work (a CPU op) of its duration; an ``[idle]`` node waits its duration as host work does, on
its resource (it is time without work, not a kernel); host work's end is its :meth:`NodeRunner.deadline`,
which the replay loop holds; a memory node copies its bytes; collectives and messages go to
:class:`collectives.Comms`.  ``how`` names the choice per node and ``observed`` holds what the
communication calls handed to torch.distributed (first measured iteration).
"""

from __future__ import annotations

import time
from typing import Any

from chakra_core import IDLE_NAME

from .collectives import Comms
from .compute import COPY, HOST, KERNEL, NONE, REAL, HostWork, Runner, build_real_op
from .plan import COLL, COMP, MEM, SEND, Plan

__all__ = ["NodeRunner"]



class NodeRunner:
    """The actions of ``plan``'s nodes (see the module docstring)."""

    def __init__(self, plan: Plan, runner: Runner, comms: Comms, compute: str, gen: Any, budget_bytes: int):
        self.plan = plan
        self.host = HostWork()
        self.budget = budget_bytes
        self.real_bytes = 0
        self.over_budget = 0
        self.runner = runner
        self.comms = comms
        n = len(plan)
        self.how = [NONE] * n
        self.real: dict[int, Any] = {}
        self.iterations = [0] * n
        self.observed: dict[int, dict[str, Any]] = {}
        for i in range(n):
            self.how[i] = self._choose(i, compute, gen)

    def _choose(self, i: int, compute: str, gen: Any) -> str:
        plan = self.plan
        kind, spec = plan.kind[i], plan.spec[i] or {}
        if kind == MEM:
            return COPY
        if kind != COMP:
            return kind
        if plan.names[i] == IDLE_NAME:  # a wait of its duration on its resource, never a kernel
            return HOST
        if compute == "real" and "op" in spec:
            call, nbytes = build_real_op(spec["op"], self.runner.device, gen, self.budget - self.real_bytes)
            if call is not None:
                self.real[i] = call
                self.real_bytes += nbytes
                return REAL
            if nbytes:  # refused for its size: more than the budget has left
                self.over_budget += 1
        if plan.cpu[i]:
            return HOST
        self.iterations[i] = self.runner.kernel_iterations(plan.dur_ns[i], spec)
        return KERNEL

    def deadline(self, i: int, logical_ns: int) -> int | None:
        """When host node ``i`` (host work, an idle gap), able to start at ``logical_ns`` (its
        dependencies done and its resource free), ends: its duration later; None for a node
        that does work."""
        return logical_ns + self.plan.dur_ns[i] if self.how[i] == HOST else None

    def run_sync(self, i: int, logical_ns: int) -> tuple[int, int]:
        """Run compute/memory node ``i`` that does work (host work has a :meth:`deadline`
        instead, which the replay loop holds)."""
        how = self.how[i]
        t0 = time.monotonic_ns()
        if how == REAL:
            self.real[i]()
            self.runner.sync()
        elif how == KERNEL:
            self.runner.kernel(self.iterations[i])
            spec = self.plan.spec[i] or {}
            if self.runner.sizing == "work" and spec.get("tensor_size"):
                self.runner.copy(int(spec["tensor_size"]))
        elif how == COPY:
            self.runner.copy(int((self.plan.spec[i] or {}).get("bytes", 0)))
        return t0, time.monotonic_ns()

    def start_comm(self, i: int) -> tuple[int, Any]:
        """Start communication node ``i``; returns (start ns, work)."""
        kind, spec = self.plan.kind[i], self.plan.spec[i] or {}
        observe = i not in self.observed
        t0 = time.monotonic_ns()
        if kind == COLL:
            work, seen = self.comms.collective(spec, observe)
        else:
            work, seen = self.comms.p2p(kind == SEND, spec, observe)
        if seen is not None:
            self.observed[i] = seen
        return t0, work
