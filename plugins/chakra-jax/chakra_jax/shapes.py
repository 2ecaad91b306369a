"""HLO shapes as printed in HLO text: ``f32[8,16]{1,0}``, tuples ``(f32[8], s32[])``, ``pred[]``.

Only what the converter needs: the arrays a shape holds (element type and dimensions, layouts
and tiling ignored) and their size in bytes. Dynamic dimensions (``<=8``) count at their bound.
A dimension that is not a whole number of at most :data:`MAX_ELEMENTS` is a :class:`ShapeError`.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["Array", "arrays", "array_bytes", "shape_bytes", "elements", "ELEMENT_BITS", "ShapeError", "MAX_ELEMENTS"]

#: bits per element of each XLA primitive type (``token`` and ``opaque`` hold no data).
ELEMENT_BITS = {
    "pred": 8, "s1": 1, "u1": 1, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "s8": 8, "u8": 8,
    "s16": 16, "u16": 16, "s32": 32, "u32": 32, "s64": 64, "u64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "c64": 64, "c128": 128,
    "f4e2m1fn": 4, "f8e8m0fnu": 8, "f8e3m4": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3b11fnuz": 8,
    "f8e4m3fnuz": 8, "f8e5m2": 8, "f8e5m2fnuz": 8, "token": 0, "opaque": 0,
}

_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_DIM = re.compile(r"(?:<=)?\d{1,16}")

#: the most elements one array may hold (2**40; far beyond any device's memory).
MAX_ELEMENTS = 1 << 40


class ShapeError(ValueError):
    """A shape whose dimensions are not whole numbers or hold more than MAX_ELEMENTS elements."""

Array = tuple[str, tuple[int, ...]]


@lru_cache(maxsize=65536)
def arrays(shape: str) -> tuple[Array, ...]:
    """The arrays of ``shape`` in order: ``(element type, dimensions)`` each (a tuple flattened)."""
    out = []
    for dtype, dims in _ARRAY.findall(shape):
        sizes = tuple(_dim(d.strip()) for d in dims.split(",") if d.strip() and d.strip() != "?")
        if elements(sizes) > MAX_ELEMENTS:
            raise ShapeError(f"shape {dtype}[{dims[:40]}] holds more than {MAX_ELEMENTS} elements")
        out.append((dtype, sizes))
    return tuple(out)


def _dim(text: str) -> int:
    if _DIM.fullmatch(text) is None:
        raise ShapeError(f"dimension {text[:40]!r} is not a whole number")
    return int(text.removeprefix("<="))


def elements(dims: tuple[int, ...]) -> int:
    """Number of elements of an array with ``dims``."""
    n = 1
    for d in dims:
        n *= d
    return n


def array_bytes(dtype: str, dims: tuple[int, ...]) -> int:
    """Bytes of one array (sub-byte types rounded up to whole bytes); unknown types as 4 bytes."""
    return (elements(dims) * ELEMENT_BITS.get(dtype, 32) + 7) // 8


@lru_cache(maxsize=65536)
def shape_bytes(shape: str) -> int:
    """Bytes of every array of ``shape`` together."""
    return sum(array_bytes(t, d) for t, d in arrays(shape))
