"""numba's ``njit`` for the core's loops that run only compiled, imported when their module is:
the transcoder of ``jsonize`` (:mod:`chakra_core.io._jsonkernel`) and the longest-path pass of
``stats`` (:mod:`chakra_core.trace._pathkernel`), whose callers import them only once they chose
the compiled path.  Without numba installed ``njit`` is a no-op, so that the same loops run as
Python.  Loops that also run as Python by choice (validation's, the role key's) are kernels of
:mod:`chakra_core.base._kernels` instead, which load numba only when one is compiled.
"""

from __future__ import annotations

from typing import Any

from chakra_core.base._kernels import INSTALLED

__all__ = ["COMPILED", "njit"]

#: whether numba is installed (the loops are compiled)
COMPILED = INSTALLED

njit: Any


def _plain_njit(*args: Any, **_options: Any) -> Any:
    """``@njit`` and ``@njit(...)`` as no-ops: the function runs as Python."""
    if len(args) == 1 and callable(args[0]):
        return args[0]
    return lambda f: f


if COMPILED:
    import numba

    njit = numba.njit
else:
    njit = _plain_njit
