"""numba for the core's compiled loops when the ``fast`` extra is installed, else plain-Python
stand-ins, so that the same loops run interpreted (same steps and results, slower).

Loops that must be compiled to be worth running (the wire walk of ``node_columns``) ask for numba
with :func:`chakra_core.base._need.need` instead; loops that a command cannot do without (the
deadlock search of ``chakra validate``, which ``convert`` runs too) import ``njit``, ``Dict`` and
``types`` from here.
"""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace
from typing import Any

__all__ = ["COMPILED", "njit", "Dict", "types"]

#: whether numba is installed (the loops are compiled)
COMPILED = importlib.util.find_spec("numba") is not None

njit: Any
Dict: Any
types: Any


def _plain_njit(*args: Any, **_options: Any) -> Any:
    """``@njit`` and ``@njit(...)`` as no-ops: the function runs as Python."""
    if len(args) == 1 and callable(args[0]):
        return args[0]
    return lambda f: f


class _PlainDict(dict):
    """numba's typed ``Dict`` as a plain dict."""

    @staticmethod
    def empty(key_type: Any = None, value_type: Any = None) -> dict:
        """An empty dict (the types are numba's business)."""
        return {}


if COMPILED:
    import numba
    import numba.typed

    njit, Dict, types = numba.njit, numba.typed.Dict, numba.types
else:
    njit, Dict, types = _plain_njit, _PlainDict, SimpleNamespace(int64=int, int32=int, float64=float, boolean=bool)
