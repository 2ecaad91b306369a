"""A kept op's inputs and outputs, held as text until its node is written.

An op's six lists (input values, shapes and types, then output values, shapes and types) are
kept as one ``bytes``: each list as compact JSON (orjson's, which holds no raw newline), one
list a line.  A written node's ``inputs``/``outputs`` hold each list as Python prints it
(``repr``, as the reference converter writes them).  Shapes and types repeat from op to op (164
distinct lines among the 6,123 kept ops of the 24-layer recording), so their printed form is
kept in a table while a rank is written; the values, which hold tensor ids, are printed each
time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import orjson

__all__ = ["dump_io", "io_values", "io_texts"]

#: the most printed shapes and types a table keeps; others are printed each time
_MAX_PRINTED = 4096


def dump_io(parts: Sequence[list]) -> bytes:
    """The six lists as kept (an exact-size ``bytes``); ``orjson.JSONEncodeError`` for a value
    orjson cannot write (a list nested deeper than 254 levels, an integer past 64 bits)."""
    return b"\n".join(map(orjson.dumps, parts))


def io_values(io: bytes) -> tuple[list, list]:
    """The input values and the output values of kept inputs/outputs ``io``."""
    iv, _ish, _ity, ov, _osh, _oty = io.split(b"\n")
    return orjson.loads(iv), orjson.loads(ov)


def io_texts(io: bytes, printed: dict[bytes, str]) -> tuple[str, str, str, str, str, str]:
    """The six lists of ``io`` as a node holds them, each ``repr`` of its value; the shapes and
    types are taken from ``printed`` (one table for the nodes written together) or printed and
    kept there while it has room."""
    iv, ish, ity, ov, osh, oty = io.split(b"\n")
    get = printed.get
    return (_printed(iv), get(ish) or _print(printed, ish), get(ity) or _print(printed, ity),
            _printed(ov), get(osh) or _print(printed, osh), get(oty) or _print(printed, oty))


def _print(printed: dict[bytes, str], line: bytes) -> str:
    text = _printed(line)
    if len(printed) < _MAX_PRINTED:
        printed[line] = text
    return text


#: the JSON text of a plain list: integers, lists, and strings of letters, digits and ``_.:``
_PLAIN = re.compile(rb'[-0-9,\[\]]*+(?:"[A-Za-z0-9_.:]*+"[-0-9,\[\]]*+)*+')


def _printed(line: bytes) -> str:
    """``repr`` of the value of a list as :func:`dump_io` keeps it; that of a plain list
    (:data:`_PLAIN`: most values lists, of tensors, sizes and devices) is its JSON text spaced
    and quoted as Python prints it."""
    if _PLAIN.fullmatch(line):
        return line.replace(b",", b", ").replace(b'"', b"'").decode()
    return repr(orjson.loads(line))
