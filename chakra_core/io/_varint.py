"""Protobuf base-128 varints: the codec of every length prefix, key and integer field written or
read in Python (the compiled walk over node messages has its own, :mod:`._wirekernels`).

A varint holds an unsigned 64-bit integer, 7 bits a byte, least significant group first, the
high bit of every byte but the last set: 1 is ``b"\\x01"``, 300 is ``b"\\xac\\x02"``, and
2**64-1 takes the most bytes, 10.  A negative int32 or int64 field is written as its 64-bit two's
complement (``value & (2**64 - 1)``), so 10 bytes too.
"""

from __future__ import annotations

__all__ = ["encode_varint", "decode_varint"]

#: the longest varint: 64 bits, 7 a byte
_MAX_BYTES = 10
_LIMIT = 1 << 64
_MASK = _LIMIT - 1
#: the one-byte varints, by value
_SMALL = tuple(bytes((v,)) for v in range(0x80))


def encode_varint(value: int) -> bytes:
    """The varint of ``value`` (0 <= value < 2**64; a ValueError otherwise): 1 to 10 bytes."""
    if 0 <= value < 0x80:
        return _SMALL[value]
    if 0 < value < 0x4000:  # two bytes: most lengths and keys past one byte
        return bytes((value & 0x7F | 0x80, value >> 7))
    if not 0 <= value < _LIMIT:
        raise ValueError(f"a varint holds 0 to 2**64-1, not {value}")
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> tuple[int, int]:
    """The varint at byte ``pos`` of ``data[:end]`` (``end``: ``len(data)`` by default):
    ``(value, position after it)``, the value kept to its low 64 bits as protobuf reads it.

    Raises EOFError when the bytes end inside the varint (a reader of a stream reads on and tries
    again) and ValueError for a varint that does not end within 10 bytes.
    """
    stop = len(data) if end is None else min(end, len(data))
    if pos < 0:
        raise ValueError(f"a varint at byte {pos}: positions start at 0")
    value = shift = 0
    p = pos
    while p < stop:
        byte = data[p]
        value |= (byte & 0x7F) << shift
        p += 1
        if byte < 0x80:
            return value & _MASK, p
        shift += 7
        if shift == 7 * _MAX_BYTES:
            raise ValueError(f"a varint at byte {pos} runs past {_MAX_BYTES} bytes")
    raise EOFError(f"the bytes end inside the varint at byte {pos}")
