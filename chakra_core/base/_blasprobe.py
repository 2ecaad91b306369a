"""numba's BLAS probe skipped: 0.13-0.21 s off the first compiled kernel of a process.

When numba compiles or loads its first function, it imports ``numba.np.arraymath``, whose module
code asks once whether a BLAS is there by importing ``scipy.linalg.cython_blas``. With scipy
installed (the ``analysis`` extra) that import runs the whole ``scipy`` and ``scipy.linalg``
packages' start-up: 0.13-0.21 s of CPU on this project's machine, against 0.13 s for the rest of
numba's first load. The answer changes one thing, for the whole process (the user's own numba
code too, once a kernel here loaded numba first): whether ``np.correlate`` and ``np.convolve``
compiled by numba use BLAS for float arrays or a loop of their own (the same values up to the
rounding of a sum in another order: 5.7e-13 at most on a 4,000 x 3,000 correlation). Every other
use of BLAS in numba (``np.dot``, ``np.linalg``) imports scipy itself when it is compiled, which
this does not touch. (numba's own import still imports the ``scipy`` package, for a version
check: about 10 ms.)

:func:`install` puts a finder first on ``sys.meta_path`` that fails the import of ``scipy`` and
``scipy.linalg`` only while that probe runs (a frame of ``numba.np.arraymath._check_blas`` on the
stack), and only when they are not imported yet. Should numba rename its probe, the finder
matches nothing and numba starts as it did.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

__all__ = ["install"]

_NAMES = frozenset(("scipy", "scipy.linalg", "scipy.linalg.cython_blas"))
_PROBE = ("_check_blas", "numba.np.arraymath")


class _SkipProbe:
    """The finder: ImportError for scipy inside numba's BLAS probe, else no opinion (None)."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        """Refuse ``name`` when it is scipy's and numba's probe asks for it."""
        if name not in _NAMES:
            return None
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            if (frame.f_code.co_name, frame.f_globals.get("__name__")) == _PROBE:
                raise ImportError(f"{name}: numba's BLAS probe is skipped (chakra_core.base._blasprobe)")
            frame = frame.f_back
        return None


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once), unless numba's probe has run already."""
    if "numba.np.arraymath" in sys.modules or any(isinstance(f, _SkipProbe) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _SkipProbe())
