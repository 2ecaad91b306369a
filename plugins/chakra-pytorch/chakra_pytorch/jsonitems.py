"""Stream the elements of one top-level JSON array, one dict at a time.

Two ways, same result:

* fast: PyTorch writes both of its trace files pretty-printed, one array element per block of
  lines that ends with a line holding only the element's closing brace at the element's own
  indentation.  JSON strings cannot contain a raw newline, so ``"\\n" + indent + "}"`` can only
  be that line: the bytes are cut there after the last element that ends within 64 KiB and
  decoded by orjson as one list (C speed; the elements of those bytes in memory at a time);
* general: ijson's C backend, for every other layout (hand-written, one element per line,
  re-indented).  The fast way hands over to it whenever a cut does not decode as a list of objects,
  re-reading from the start and skipping the elements already yielded, so a file is never
  misread, only read twice; genuine errors are then reported by ijson.

A reader that uses a few keys of each element decodes the batches with msgspec into plain dicts
of those keys only (:func:`typed_decoder`): the others are skipped without building their
values, and a value it names as ``msgspec.Raw`` is kept as its JSON text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import repeat
from typing import Any, cast

import ijson
import orjson

from chakra_core import open_binary

__all__ = ["iter_items", "typed_decoder", "json_value", "keyed_type", "short_error", "broken_json"]

_CHUNK = 1 << 20
_MAX_ELEMENT = 64 << 20  # bytes searched for one element's end before handing over to ijson
#: bytes of consecutive elements decoded by one orjson call (as a list; at least one element)
_BATCH = 1 << 16
_WS = b" \t\r\n"
_NON_BLANK = re.compile(rb"[^ \t\r\n]")
#: the comma between two elements and the brace that opens the next, within the buffer
_NEXT = re.compile(rb"[ \t\r\n]*,[ \t\r\n]*\{")


class _NotThisLayout(Exception):
    """The fast way cannot read this file (from this point on)."""


def short_error(e: Exception) -> str:
    """The first line of an exception's message (at most 120 characters), or its class name."""
    text = str(e).strip().splitlines()
    return text[0][:120] if text else type(e).__name__


def broken_json(e: Exception) -> str:
    """What the JSON parser refused, in words: a whole number past 64 bits (valid JSON that no
    field of these traces holds), or truncated or malformed JSON."""
    text = short_error(e)
    if "integer overflow" in text:
        return f"a whole number too large for 64 bits ({text})"
    return f"truncated or malformed JSON ({text})"


def iter_items(path: str, key: str, decode: Callable[[bytes], list] | None = None) -> Iterator[object]:
    """Yield the elements of the array under top-level ``key`` of the JSON file ``path``.

    ``path`` may be gzip-compressed.  Numbers with a fraction come back as floats.  ``decode``
    decodes a batch of the fast way instead of orjson (:func:`typed_decoder`).  Errors are
    ijson's (``ijson.JSONError``/``IncompleteJSONError``) or I/O errors, for the caller to word.
    """
    done = 0
    try:
        for batch in _fast(path, key, decode or orjson.loads):
            yield from batch
            done += len(batch)  # the fast way gives up only between batches
        return
    except _NotThisLayout:
        pass
    with open_binary(path) as f:
        for i, item in enumerate(ijson.items(f, f"{key}.item", use_float=True)):
            if i >= done:
                yield item


def _fast(path: str, key: str, decode: Callable[[bytes], list]) -> Iterator[list]:
    """The elements, a batch (a list) at a time; :class:`_NotThisLayout` where the fast way
    cannot read on."""
    with open_binary(path) as f:
        buf = f.read(_CHUNK)
        m = re.search(b'"' + re.escape(key.encode()) + rb'"\s*:\s*\[', buf)
        if m is None:
            raise _NotThisLayout
        reader = _Buffer(f, buf, m.end())
        j = reader.skip_ws()
        if reader.byte(j) == b"]":
            reader.check_tail(j + 1)
            return
        if reader.byte(j) != b"{":
            raise _NotThisLayout
        nl = reader.buf.rfind(b"\n", 0, j)
        indent = reader.buf[nl + 1:j]
        if nl < 0 or indent.strip(_WS[:2]) or reader.byte(j + 1) not in (b"\n", b"\r"):
            raise _NotThisLayout  # not one element per block of lines
        end = b"\n" + indent + b"}"
        start = j
        while True:
            k = reader.find(end, start)
            start = reader.pos  # find may have moved the buffer
            stop = max(k, reader.buf.rfind(end, k, start + _BATCH)) + len(end)
            try:
                items = decode(b"".join((b"[", memoryview(reader.buf)[start:stop], b"]")))  # one copy
            except orjson.JSONDecodeError:
                raise _NotThisLayout from None
            if not all(map(isinstance, items, repeat(dict))):
                raise _NotThisLayout
            yield items
            m = _NEXT.match(reader.buf, stop)
            if m is not None:  # the common case, in one step
                start = reader.pos = m.end() - 1
                continue
            reader.pos = stop
            j = reader.skip_ws()
            c = reader.byte(j)
            if c == b"]":
                reader.check_tail(j + 1)
                return
            if c != b",":
                raise _NotThisLayout
            reader.pos = j + 1
            start = reader.skip_ws()
            if reader.byte(start) != b"{":
                raise _NotThisLayout


class _Buffer:
    """A sliding window over a binary stream: ``buf[pos:]`` is what is not consumed yet.

    The window is one bytearray that drops what was consumed from its front and grows at its
    end, so reading on does not build a new megabyte-sized string each time."""

    def __init__(self, f, buf: bytes, pos: int):
        self.f, self.buf, self.pos = f, bytearray(buf), pos
        self.eof = False

    def _more(self) -> None:
        if self.eof:
            raise _NotThisLayout  # cut short: let ijson say where
        more = self.f.read(_CHUNK)
        if not more:
            self.eof = True
        del self.buf[:self.pos]
        self.buf += more
        self.pos = 0

    def skip_ws(self) -> int:
        """Index of the first non-blank byte at or after ``pos`` (``pos`` moves there)."""
        while True:
            m = _NON_BLANK.search(self.buf, self.pos)
            if m is not None:
                self.pos = m.start()
                return self.pos
            self.pos = len(self.buf)
            self._more()

    def byte(self, i: int) -> bytearray:
        """The byte at ``i`` as a one-byte string (equal to the ``bytes`` of it)."""
        return self.buf[i:i + 1]

    def find(self, pattern: bytes, start: int) -> int:
        """Index of ``pattern`` at or after ``start``, reading on as needed (``pos`` = ``start``)."""
        self.pos = start
        while True:
            k = self.buf.find(pattern, self.pos)
            if k >= 0:
                return k
            if len(self.buf) - self.pos > _MAX_ELEMENT:
                raise _NotThisLayout  # no end line in sight: not this layout, or a giant element
            self._more()

    def check_tail(self, i: int) -> None:
        """After the array: the rest of the file must close the top-level object."""
        rest = self.buf[i:] + self.f.read()
        if not rest.rstrip(_WS).endswith(b"}"):
            raise _NotThisLayout


def typed_decoder(item: Any) -> Callable[[bytes], list]:
    """A batch decoder for :func:`iter_items` that reads each element as ``item`` (a msgspec
    type: a ``TypedDict`` keeps only the keys it names, so the others cost nothing, and a
    ``msgspec.Raw`` value is kept as its JSON text, unparsed).  A batch that is not of that shape
    (or nested deeper than msgspec reads) is decoded by orjson as plain JSON instead, and so is
    malformed JSON, which orjson then refuses, and text that is not UTF-8 anywhere in the batch:
    a reader must take both forms.  What msgspec skips is checked for its syntax only: a number
    past the float range in a key the reader does not name is not refused (orjson refuses it)."""
    import msgspec

    typed = msgspec.json.Decoder(list[item]).decode

    def decode(batch: bytes) -> list:
        try:
            if not batch.isascii():
                batch.decode()  # msgspec does not check the text of what it skips or keeps raw
            return typed(batch)
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):  # ValidationError included
            return orjson.loads(batch)
    return decode


def json_value() -> Any:
    """The msgspec type of a JSON value, for the fields of a :func:`typed_decoder`'s type: a
    scalar, or a list or object of scalars, where an integer outside the signed 64-bit range is
    not one (orjson reads one past 64 bits as a float; msgspec checks no wider range), nor is a
    deeper value; such a batch is read by orjson, so both read a file alike."""
    from typing import Annotated, Union

    import msgspec

    int64 = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
    scalar = Union[int64, float, str, bool, None]  # noqa: UP007 (built at run time)
    return Union[int64, float, str, bool, None, list[scalar], dict[str, scalar]]  # noqa: UP007


def keyed_type(name: str, fields: dict[str, Any]) -> Any:
    """A ``TypedDict`` type (made at run time) of JSON objects read as plain dicts holding only
    the keys ``fields`` names, each of its type; the keys are all optional."""
    from typing import TypedDict

    return cast(Any, TypedDict)(name, fields, total=False)
