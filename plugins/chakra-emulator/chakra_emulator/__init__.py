"""chakra-emulator: the backend ``emulator`` (kind ``emulator``, see docs/emulator.md).

Public API: :class:`EmulatorBackend`.  Modules: ``plan`` (a rank's trace as a replay plan),
``select`` (gloo or NCCL, CPU or CUDA), ``launch`` (worker processes: start, supervise, stop),
``worker`` (one rank: rendezvous, process groups, the replay loop), ``schedule`` (dependency-exact
issue with the simulator's per-rank resources), ``compute`` (real operators, calibrated kernels,
host work, memory copies), ``calibrate`` (the kernel calibration cached per machine and device),
``collectives`` (every collective kind, composed where the backend lacks it, observed),
``measure`` (what the workers measured, across ranks), ``spans`` (the measured spans as the
core's Spans: per-rank rows, critical path, timeline), ``backend``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .backend import EmulatorBackend

__all__ = ["EmulatorBackend"]

__getattr__, __dir__ = lazy_exports(__name__, {"EmulatorBackend": "backend"})
