"""The varint codec against the byte strings of protobuf's encoding spec, and protobuf's own
encoder over the range of widths."""

from __future__ import annotations

import pytest
from google.protobuf.internal.encoder import _VarintBytes

from chakra_core import decode_varint, encode_varint

#: protobuf.dev/programming-guides/encoding: 1 is 01, 150 is 96 01, 300 is ac 02; each 7 bits
#: more take a byte more, up to 10 for 2**63 and over
SPEC = [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (150, b"\x96\x01"), (300, b"\xac\x02"),
    (16383, b"\xff\x7f"), (16384, b"\x80\x80\x01"), (2**28 - 1, b"\xff\xff\xff\x7f"),
    (2**63, b"\x80" * 9 + b"\x01"), (2**64 - 1, b"\xff" * 9 + b"\x01"),
]


@pytest.mark.parametrize(("value", "encoded"), SPEC)
def test_spec_values(value, encoded):
    assert encode_varint(value) == encoded
    assert decode_varint(encoded) == (value, len(encoded))


def test_same_bytes_as_protobufs_encoder():
    for bits in range(65):
        for value in {max(0, (1 << bits) - 1), 1 << bits >> 1, 5 << bits >> 3}:
            if value < 1 << 64:
                assert encode_varint(value) == _VarintBytes(value), value


def test_decode_from_a_position_and_up_to_an_end():
    data = b"\x08" + b"\xac\x02" + b"\x96\x01"
    assert decode_varint(data, 1) == (300, 3)
    assert decode_varint(data, 3) == (150, 5)
    assert decode_varint(memoryview(data), 1, 3) == (300, 3)


def test_a_tenth_byte_keeps_the_low_64_bits():
    # ten bytes with the tenth holding 2**1 in the 64-bit place: protobuf reads 0
    assert decode_varint(b"\x80" * 9 + b"\x02") == (0, 10)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xac", b"\xff" * 9])
def test_truncated_input_is_an_eof_error(data):
    with pytest.raises(EOFError, match="end inside the varint at byte 0"):
        decode_varint(data)


def test_end_cuts_the_bytes_short():
    with pytest.raises(EOFError, match="at byte 1"):
        decode_varint(b"\x08\xac\x02", 1, 2)


def test_over_ten_bytes_is_a_value_error():
    with pytest.raises(ValueError, match="past 10 bytes"):
        decode_varint(b"\xff" * 10 + b"\x01")


@pytest.mark.parametrize("value", [-1, 2**64])
def test_values_outside_64_bits_are_refused(value):
    with pytest.raises(ValueError, match="0 to 2\\*\\*64-1"):
        encode_varint(value)
