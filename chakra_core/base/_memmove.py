"""The compiled form of :func:`chakra_core.base._copyrun.copy_run` (imported with numba only).

For arrays whose items lie next to each other (numba's layout ``C``), one ``memmove`` emitted
through an intrinsic (numba's public extension API, for code its Python subset cannot say);
for any other layout, numba's slice assignment.  The choice is made when the caller compiles
(an overload): a branch between the two at run time made numba's code for the caller's whole
loop five times slower (measured on the reader's cut).
"""

from __future__ import annotations

from typing import Any

import numba
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

__all__ = ["compiled_copy_run"]


@intrinsic
def _memmove(typingctx: Any, dst: Any, at: Any, src: Any, start: Any, count: Any) -> Any:
    """Typing and code of ``_memmove(dst, at, src, start, count)``: the items
    ``src[start:start+count]`` moved to ``dst[at:at+count]`` (the caller checks the bounds)."""
    same = (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.ndim == src.ndim == 1
            and dst.dtype == src.dtype and dst.mutable)
    if not same or not all(isinstance(t, types.Integer) for t in (at, start, count)):
        return None
    sig = types.void(dst, at, src, start, count)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        d, a, s, st, c = args
        ty = signature.args
        d_at, s_at, n = (context.cast(builder, v, t, types.intp) for v, t in ((a, ty[1]), (st, ty[3]), (c, ty[4])))
        dptr = builder.gep(context.make_array(ty[0])(context, builder, d).data, [d_at])
        sptr = builder.gep(context.make_array(ty[2])(context, builder, s).data, [s_at])
        size = context.get_abi_sizeof(context.get_data_type(ty[0].dtype))
        cgutils.raw_memmove(builder, dptr, sptr, n, size)
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(nogil=True)
def _outside():  # pragma: no cover - compiled
    """The error of a run outside an array: raised here, a call away from the loop, since a
    ``raise`` inlined into a loop made numba's code for a loop of short copies fifteen times
    slower (23 against 1.6 ns a copy, ``benches/bench_copy.py``)."""
    raise IndexError("copy_run: the run lies outside an array")


def _copy_code(dst, at, src, start, count):
    """The compiled code of the Python ``copy_run`` (no annotations: numba compares them with the
    code's) for the arrays' layouts; none (numba's typing error) unless both are one-dimensional
    arrays of one item type, ``dst`` is writable and the positions and count are signed integers
    (the bounds check subtracts them)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.ndim == src.ndim == 1
            and dst.dtype == src.dtype and dst.mutable
            and all(isinstance(t, types.Integer) and getattr(t, "signed", False) for t in (at, start, count))):
        return None
    if dst.layout == "C" and src.layout == "C":
        def contiguous(dst, at, src, start, count):  # pragma: no cover - compiled
            if at < 0 or start < 0 or count < 0 or at > len(dst) - count or start > len(src) - count:
                _outside()
            else:
                _memmove(dst, at, src, start, count)  # type: ignore[call-arg]  # numba gives the typing context
        return contiguous

    def strided(dst, at, src, start, count):  # pragma: no cover - compiled
        if at < 0 or start < 0 or count < 0 or at > len(dst) - count or start > len(src) - count:
            _outside()
        else:
            dst[at:at + count] = src[start:start + count]
    return strided


def compiled_copy_run(plain: Any) -> Any:
    """The compiled form of :func:`chakra_core.base._copyrun.copy_run` (``plain``, its Python
    form, given by the caller: this module does not import it): numba's overload of ``plain``,
    called by one inlined function."""
    overload(plain, inline="always")(_copy_code)

    @numba.njit(nogil=True, inline="always")
    def copy_run(dst, at, src, start, count):  # pragma: no cover - compiled
        plain(dst, at, src, start, count)

    return copy_run
