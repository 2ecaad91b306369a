"""chakra-simpy: the built-in SimPy simulator backend ``simpy``.

Public API: :class:`SimpyBackend` (registered as backend ``simpy``); the timing model in
:mod:`chakra_simpy.timing` (closed-form ASTRA-sim analytical formulas).  See docs/simulator.md.
"""

__all__ = ["SimpyBackend"]


def __getattr__(name):
    if name == "SimpyBackend":
        from .backend import SimpyBackend

        return SimpyBackend
    raise AttributeError(name)
