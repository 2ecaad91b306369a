"""chakra-simpy: the built-in SimPy simulator backend ``simpy`` (see docs/simulator.md).

Public API: :class:`SimpyBackend` (registered as backend ``simpy``, kind ``simulator``).
Modules: ``timing`` (ASTRA-sim's analytical formulas, closed forms), ``plans`` (chunks and
phases per collective), ``stagger`` and ``perrank`` (per-member message chains when members do
not move in lockstep), ``dbt`` (the double binary tree all-reduce, per member), ``program``
(a rank's trace in flat arrays), ``engine`` / ``actor`` /
``collectives`` (the SimPy simulation), ``report`` (critical path, timeline), ``backend``.
"""

__all__ = ["SimpyBackend"]


def __getattr__(name):
    if name == "SimpyBackend":
        from .backend import SimpyBackend

        return SimpyBackend
    raise AttributeError(name)
