"""Collective algorithms, one module each behind one interface (:class:`.base.Algorithm`), and
their registry: the one place that reads algorithm names.

======================  ===========================================================
module                  algorithm
======================  ===========================================================
``base``                the interface (cost, member phase, messages) and its shapes
``ring``                ``ring``, and the ring over a communicator group
``direct``              ``direct`` (its all-reduce packet by packet)
``halving_doubling``    ``halvingDoubling``
``double_binary_tree``  ``doubleBinaryTree`` (all-reduce, two alternating trees)
``custom``              a collective replaced by its own ET per rank
                        (``*-implementation-custom``; not a registered algorithm)
======================  ===========================================================

A new algorithm is one new module with an :class:`.base.Algorithm` subclass, registered with
:func:`register` (the built-in ones are registered below).
"""

from __future__ import annotations

from chakra_core import ConfigError
from chakra_core.system import algorithm_base

from .base import Algorithm, Implementation
from .direct import Direct
from .double_binary_tree import DoubleBinaryTree
from .halving_doubling import HalvingDoubling
from .ring import Ring

__all__ = ["REGISTRY", "register", "find", "lookup", "all_npus", "not_modelled"]

#: the registered algorithms by name
REGISTRY: dict[str, Algorithm] = {}


def register(algorithm: Algorithm) -> Algorithm:
    """Make ``algorithm`` available under its name (and its ``one*`` variant); returns it."""
    if not algorithm.name or algorithm.name in REGISTRY:
        raise ValueError(f"an algorithm needs a name of its own, got {algorithm.name!r}")
    REGISTRY[algorithm.name] = algorithm
    return algorithm


def not_modelled(name: str) -> ConfigError:
    """The error for an implementation name no registered algorithm models."""
    return ConfigError(f"implementation '{name}' is not modelled by the simpy backend "
                       f"(modelled: {', '.join(REGISTRY)} and their one* variants)")


#: implementations found so far by name, with the registry key they were found under (each
#: valid while the registry holds its algorithm under that key)
_found: dict[str, tuple[str, Implementation]] = {}


def find(name: str) -> Implementation | None:
    """The registered algorithm of an implementation name (``ring``, ``oneRing``, ``direct8``,
    ...); None when none models it."""
    kept = _found.get(name)
    if kept is not None and REGISTRY.get(kept[0]) is kept[1].algorithm:
        return kept[1]
    base, window = algorithm_base(name)
    algorithm = REGISTRY.get(base)
    if algorithm is None:
        return None
    got = Implementation(name, algorithm, window, all_npus(name))
    _found[name] = (base, got)
    return got


def lookup(name: str) -> Implementation:
    """:func:`find`, with a ConfigError when no registered algorithm models ``name``."""
    got = find(name)
    if got is None:
        raise not_modelled(name)
    return got


def all_npus(name: str) -> bool:
    """Whether an implementation name is a ``one*`` variant: one logical ring over every NPU."""
    return name.startswith("one")


for _builtin in (Ring(), Direct(), HalvingDoubling(), DoubleBinaryTree()):
    register(_builtin)
