"""chakra-simpy: the built-in SimPy simulator backend ``simpy`` (see docs/simulator.md).

Public API: :class:`SimpyBackend` (registered as backend ``simpy``, kind ``simulator``).
Modules: ``timing`` (ASTRA-sim's analytical formulas, closed forms), ``plans`` (chunks and
phases per collective), ``stagger`` and ``perrank`` (per-member message chains when members do
not move in lockstep), ``dbt`` (the double binary tree all-reduce, per member), ``program``
(a rank's trace in flat arrays), ``engine`` / ``actor`` /
``collectives`` (the SimPy simulation), ``report`` (critical path, timeline), ``backend``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .backend import SimpyBackend

__all__ = ["SimpyBackend"]

__getattr__, __dir__ = lazy_exports(__name__, {"SimpyBackend": "backend"})
