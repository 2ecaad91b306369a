"""Fields of a newer schema than ours, kept through the JSON form.

protobuf keeps the fields of a message that our schema does not know (a newer attribute kind, a
new node field) as unknown fields and writes them back when the message is serialized, so
``.et -> .et`` keeps them by itself.  protobuf's JSON mapping has no place for them: the JSON
form carries them as ``"unknown_fields"``, their wire bytes (tag and payload, in the order
protobuf keeps them) in base64, and the reader appends them to the message again.
"""

from __future__ import annotations

import base64
import binascii

from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from chakra_core.io._varint import encode_varint

__all__ = ["UNKNOWN_KEY", "unknown_fields", "merge_unknown"]

UNKNOWN_KEY = "unknown_fields"

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


def _encode(fields: UnknownFieldSet) -> bytes:
    out = bytearray()
    for i in range(len(fields)):
        f = fields[i]
        out += encode_varint(f.field_number << 3 | f.wire_type)
        if f.wire_type == _VARINT:
            out += encode_varint(f.data & 0xFFFFFFFFFFFFFFFF)
        elif f.wire_type == _FIXED64:
            out += int(f.data).to_bytes(8, "little")
        elif f.wire_type == _FIXED32:
            out += int(f.data).to_bytes(4, "little")
        elif f.wire_type == _LENGTH:
            out += encode_varint(len(f.data)) + f.data
        else:  # a group (wire types 3/4): its fields, then the end tag
            out += _encode(f.data) + encode_varint(f.field_number << 3 | 4)
    return bytes(out)


def unknown_fields(msg: Message) -> str | None:
    """The unknown fields of ``msg`` (not of its sub-messages) as base64 wire bytes, or None."""
    fields = UnknownFieldSet(msg)
    return base64.b64encode(_encode(fields)).decode("ascii") if len(fields) else None


def merge_unknown(msg: Message, text: object) -> None:
    """Append the fields in ``text`` (base64 wire bytes, as :func:`unknown_fields` writes them)
    to ``msg``; ValueError when ``text`` is not such bytes."""
    if not isinstance(text, str):
        raise ValueError(f"{UNKNOWN_KEY} must be a base64 string")
    try:
        msg.MergeFromString(base64.b64decode(text, validate=True))
    except (binascii.Error, DecodeError) as e:
        raise ValueError(f"{UNKNOWN_KEY} is not protobuf wire bytes in base64 ({e})") from None
