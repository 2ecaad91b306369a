"""Loops written once as plain Python that numba compiles only when a caller chooses it.

A function marked :func:`kernel` stays the plain function: calling it runs Python (a small input
pays nothing to load numba: about 0.35 s of CPU and 85 MB a process, plus its first calls).
:func:`compiled` gives its numba form: a copy of the function compiled with ``njit`` and the
marked options, in whose globals every other kernel is replaced by its compiled form, and the
stand-in :data:`types` by ``numba.types``, so that kernels calling kernels compile as one (or,
for a kernel marked ``native``, the form that option makes: :mod:`._copyrun`).  The
copy keeps the function's code object, so numba's on-disk cache finds what it compiled before.
Which form runs is the caller's choice (:func:`chakra_core.compiled_worthwhile` is the core's
rule).  The core uses numba nowhere else; :func:`kernel`, :func:`compiled` and :func:`chosen`
are public (``chakra_core``), for plugins.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from types import FunctionType, SimpleNamespace
from typing import Any

__all__ = ["kernel", "compiled", "chosen", "INSTALLED", "types"]

#: whether numba is installed (the kernels can be compiled)
INSTALLED = importlib.util.find_spec("numba") is not None
_OPTIONS = "__kernel_options__"
_COMPILED: dict[Callable, Any] = {}
#: held while a kernel's compiled form is made (re-entered for the kernels it calls)
_LOCK = threading.RLock()


#: numba's type names for the Python form of a kernel
types = SimpleNamespace(int64=int, int32=int, uint64=int, float64=float, boolean=bool)


def kernel(**options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as a kernel: ``options`` are numba's ``njit`` options for its compiled
    form (``cache``, ``nogil``, ``inline``), or ``native`` alone: a function that returns the
    compiled form itself (for what numba reaches only through its extension API); the function
    itself is returned unchanged."""
    if "native" in options and len(options) > 1:
        raise TypeError("kernel: 'native' makes the compiled form; it takes no other option")

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        setattr(fn, _OPTIONS, options)
        return fn

    return mark


def compiled(fn: Callable) -> Any:
    """The numba-compiled form of kernel ``fn`` (numba is imported on the first call; each
    kernel is compiled, or loaded from numba's cache, once per process on its first call, also
    when threads ask for it at once)."""
    got = _COMPILED.get(fn)
    if got is None:
        with _LOCK:
            got = _COMPILED.get(fn) or _compile(fn)
    return got


def _compile(fn: Callable) -> Any:
    """:func:`compiled` of ``fn``, made (the caller holds :data:`_LOCK`, which the kernels it
    calls take again)."""
    numba = _numba()
    options = dict(getattr(fn, _OPTIONS))
    native = options.pop("native", None)
    if native is not None:
        got = _COMPILED[fn] = native()
        return got
    scope = dict(fn.__globals__)
    for name in fn.__code__.co_names:
        value = scope.get(name)
        if callable(value) and hasattr(value, _OPTIONS):
            scope[name] = compiled(value)
        elif value is types:
            scope[name] = numba.types
    copy = FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    got = _COMPILED[fn] = numba.njit(**options)(copy)
    return got


def chosen(fn: Callable[..., Any], compile_it: bool) -> Callable[..., Any]:
    """``fn``'s compiled form when ``compile_it``, else ``fn`` itself."""
    return compiled(fn) if compile_it else fn


def _numba() -> Any:
    """numba (a ConfigError naming the ``fast`` extra when it is not installed), its BLAS probe
    skipped (:mod:`._blasprobe`)."""
    from chakra_core.base._blasprobe import install
    from chakra_core.base._need import need

    install()
    return need("numba", "fast")
