"""Fields of a newer schema than ours, kept through the JSON form.

protobuf keeps the fields of a message that our schema does not know (a newer attribute kind, a
new node field) as unknown fields and writes them back when the message is serialized, so
``.et -> .et`` keeps them by itself.  protobuf's JSON mapping has no place for them: the JSON
form carries them as ``"unknown_fields"``, their wire bytes (tag and payload, in the order
protobuf keeps them) in base64, on the object of the message that holds them (a node, its
``inputs``/``outputs``, the metadata, an attribute, an attribute's list value), and the reader
appends them to that message again.
"""

from __future__ import annotations

import base64
import binascii
from functools import cache
from typing import Any, NamedTuple

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from chakra_core.io._varint import encode_varint

__all__ = ["UNKNOWN_KEY", "unknown_fields", "merge_unknown", "add_unknown", "without_unknown", "merge_unknown_in"]

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


class _Plan(NamedTuple):
    """The message fields of a message type, by proto name with their JSON names."""

    repeated: dict[str, str]
    single: dict[str, str]  # singular, outside a oneof
    in_oneof: dict[str, str]  # singular, in one of ``oneofs``
    oneofs: tuple[str, ...]


@cache
def _plan(descriptor: Descriptor) -> _Plan | None:
    """The :class:`_Plan` of a message type; None when it has no message field."""
    fields = [fd for fd in descriptor.fields if fd.message_type is not None]
    if not fields:
        return None
    return _Plan({fd.name: fd.json_name for fd in fields if fd.is_repeated},
                 {fd.name: fd.json_name for fd in fields if not fd.is_repeated and fd.containing_oneof is None},
                 {fd.name: fd.json_name for fd in fields if fd.containing_oneof is not None},
                 tuple(dict.fromkeys(fd.containing_oneof.name for fd in fields if fd.containing_oneof is not None)))


def _sub_messages(msg: Message, d: dict) -> list[tuple[Message, object]]:
    """The set message fields of ``msg`` (each element of a repeated one) with their values in
    ``d``, ``msg``'s JSON object (keys: proto or JSON field names).  Presence is asked field by
    field: ``ListFields`` costs several microseconds a node."""
    plan = _plan(msg.DESCRIPTOR)
    if plan is None:
        return []
    out: list[tuple[Message, object]] = []
    for name, json_name in plan.repeated.items():
        items = d.get(name, d.get(json_name))
        if isinstance(items, list):
            out += zip(getattr(msg, name), items)
    for name, json_name in plan.single.items():
        if msg.HasField(name):
            out.append((getattr(msg, name), d.get(name, d.get(json_name))))
    for oneof in plan.oneofs:
        name = msg.WhichOneof(oneof)
        if name in plan.in_oneof:
            out.append((getattr(msg, name), d.get(name, d.get(plan.in_oneof[name]))))
    return out


def _holds_unknown(msg: Message) -> bool:
    """True when ``msg`` or a message inside it holds unknown fields (protobuf's C code walks
    the tree: a few microseconds a node, where walking it here took about 15)."""
    known = type(msg)()
    known.CopyFrom(msg)
    known.DiscardUnknownFields()
    return known.ByteSize() != msg.ByteSize()


def add_unknown(msg: Message, d: dict) -> dict:
    """``d`` (protobuf's JSON mapping of ``msg``) with ``unknown_fields`` added on its object and
    on the object of each sub-message that holds fields of a newer schema."""
    if _holds_unknown(msg):
        _add_unknown(msg, d)
    return d


def _add_unknown(msg: Message, d: dict) -> None:
    extra = unknown_fields(msg)
    if extra:
        d[UNKNOWN_KEY] = extra
    for sub, item in _sub_messages(msg, d):
        if isinstance(item, dict):
            _add_unknown(sub, item)


def without_unknown(obj: Any) -> Any:
    """``obj`` (decoded JSON) without its ``unknown_fields`` keys, at any depth."""
    if isinstance(obj, dict):
        return {k: without_unknown(v) for k, v in obj.items() if k != UNKNOWN_KEY}
    if isinstance(obj, list):
        return [without_unknown(v) for v in obj]
    return obj


def merge_unknown_in(msg: Message, d: dict) -> None:
    """Append each ``unknown_fields`` of ``d`` (the JSON object ``msg`` was parsed from, at any
    depth) to the message it is on; ValueError for one that is not base64 wire bytes."""
    if UNKNOWN_KEY in d:
        merge_unknown(msg, d[UNKNOWN_KEY])
    for sub, item in _sub_messages(msg, d):
        if isinstance(item, dict):
            merge_unknown_in(sub, item)
