"""Parse JSON documents from untrusted text: nesting bounded, every error located.

The parser recurses per nesting level, so a document nested thousands deep would end in a
RecursionError; the ``depth`` limit (:mod:`._limits`) stops it first with a message that names the
file, the line and the variable that raises the limit.  YAML is read by :mod:`._yamlparse`, which
shares these messages; it is a module of its own so that reading JSON does not import PyYAML.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from chakra_core.base._errors import ChakraError, ConfigError
from chakra_core.base._limits import check_depth, get_limit, limit_message

__all__ = ["parse_json", "parse_json_values", "decode_text", "too_deep_message", "PARSER_DEPTH_MESSAGE"]

#: past Python's recursion limit (only when CHAKRA_MAX_DEPTH is raised far above its default)
PARSER_DEPTH_MESSAGE = "nested deeper than the parser can read (CHAKRA_MAX_DEPTH is set above Python's recursion limit)"


#: below this nesting json's C parser never runs out of recursion (Python's default limit: 1000)
_JSON_PARSER_DEPTH = 500


def too_deep_message(depth: int) -> str:
    """The message for a document nested ``depth`` deep, past the ``depth`` limit."""
    return limit_message("depth", depth, "nesting depth")


def decode_text(data: bytes, where: str, error: type[ChakraError] = ConfigError) -> str:
    """``data`` as UTF-8 text; bytes that are not UTF-8 are an error naming line and byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise error(f"not UTF-8 text ({e.reason} at byte {e.start})", where, f"line {line}") from None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _DuplicateKey(ValueError):
    """An object of a JSON document that gives one key twice (json keeps the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object of ``pairs``; :class:`_DuplicateKey` when a key comes twice."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        key = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise _DuplicateKey(f"key {key!r} given twice in one object")
    return obj


def parse_json(text: str, where: str, error: type[ChakraError] = ConfigError,
               line: int | None = None) -> Any:
    """Parse JSON ``text`` strictly (no NaN/Infinity, no key twice in one object) and bound its nesting.

    ``line`` is the text's line in the file when it is one line of a larger file; otherwise the
    error names the line the parser stopped at.  A document that is plainly fine (:func:`_plain`)
    is read by json's C parser alone; any other goes the strict way, which words every refusal.
    """
    obj = _plain(text)
    if obj is not _NOT_PLAIN:
        return obj
    try:
        obj = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise error(str(e), where, f"line {line}" if line else None) from None
    except RecursionError:  # deeper than the limit, unless the limit is raised past the parser's
        limit = get_limit("depth")
        why = too_deep_message(limit + 1) if limit < _JSON_PARSER_DEPTH else PARSER_DEPTH_MESSAGE
        raise error(why, where, f"line {line}" if line else None) from None
    except ValueError as e:
        at = line if line else getattr(e, "lineno", None)
        raise error(f"malformed JSON ({getattr(e, 'msg', e)})", where, f"line {at}" if at else None) from None
    check_depth(obj, where, f"line {line}" if line else None, error)
    if _SURROGATE_ESCAPE.search(text):
        try:  # a pair of escapes is one character; a lone one cannot be encoded
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise error("a lone UTF-16 surrogate escape (\\ud800-\\udfff) is not text",
                        where, f"line {line}" if line else None) from None
    return obj


_STRICT_DECODER = json.JSONDecoder(parse_constant=_no_constant, object_pairs_hook=_unique_keys)
_PLAIN_DECODER = json.JSONDecoder(parse_constant=_no_constant)
#: what :func:`_plain` returns for a document it leaves to the strict way
_NOT_PLAIN = object()
#: the end of a key: a quote, then a colon (within a string a quote is escaped, so that a match
#: there only adds to the count)
_KEY_END = re.compile(r'"\s*:')


def _plain(text: str) -> Any:
    """``text`` parsed by json's C parser when that is plainly the strict parse: it parses, no
    surrogate escape, fewer opening brackets than the ``depth`` limit (so no deeper nesting),
    and as many key ends as keys parsed (so no key twice); else :data:`_NOT_PLAIN`."""
    if _SURROGATE_ESCAPE.search(text) or text.count("{") + text.count("[") > get_limit("depth"):
        return _NOT_PLAIN
    try:
        obj = _PLAIN_DECODER.decode(text)
    except (ValueError, RecursionError):
        return _NOT_PLAIN
    spaced = '" ' in text or '"\n' in text or '"\t' in text or '"\r' in text
    ends = len(_KEY_END.findall(text)) if spaced else text.count('":')
    return obj if ends == _keys(obj) else _NOT_PLAIN


def _keys(obj: Any) -> int:
    """The keys of every object in ``obj``, nested ones included."""
    count, stack = 0, [obj] if type(obj) is dict or type(obj) is list else []
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        values: Iterable[Any] = item
        if type(item) is dict:
            count += len(item)
            values = item.values()
        for v in values:
            if type(v) is dict or type(v) is list:
                push(v)
    return count


def parse_json_values(text: str, where: str, error: type[ChakraError] = ConfigError,
                      line: int = 1) -> list[tuple[Any, int]]:
    """Parse JSON values written one after another (``{...}{...}``), as strictly as
    :func:`parse_json`; returns ``(value, line of its start)`` pairs.

    ``line`` is the line of the file that ``text`` starts at; errors name the file's line.
    """
    out: list[tuple[Any, int]] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos == end:
            break
        at = line + text.count("\n", 0, pos)
        try:
            value, pos = _STRICT_DECODER.raw_decode(text, pos)
        except _DuplicateKey as e:
            raise error(str(e), where, f"line {at}") from None
        except RecursionError:
            limit = get_limit("depth")
            why = too_deep_message(limit + 1) if limit < _JSON_PARSER_DEPTH else PARSER_DEPTH_MESSAGE
            raise error(why, where, f"line {at}") from None
        except ValueError as e:
            stop = line + text.count("\n", 0, getattr(e, "pos", pos))
            raise error(f"malformed JSON ({getattr(e, 'msg', e)})", where, f"line {stop}") from None
        check_depth(value, where, f"line {at}", error)
        out.append((value, at))
    if out and _SURROGATE_ESCAPE.search(text):
        try:  # a pair of escapes is one character; a lone one cannot be encoded
            json.dumps([v for v, _ in out], ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise error("a lone UTF-16 surrogate escape (\\ud800-\\udfff) is not text",
                        where, f"line {line}") from None
    return out
