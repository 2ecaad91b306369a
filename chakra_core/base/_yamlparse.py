"""Parse YAML documents from untrusted text: nesting bounded, every error located.

PyYAML's loaders recurse per nesting level, so a document nested thousands deep would end in a
RecursionError; the ``depth`` limit (:mod:`._limits`) stops it first with a message that names the
file, the line and the variable that raises the limit.  A YAML tag on a value it cannot convert
(``!!int abc``) is reported at the value's line.  :func:`parse_yaml_lines` also keeps where each
key and list item is, for messages about the values (a pipeline's schema errors).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from chakra_core.base._docparse import PARSER_DEPTH_MESSAGE, too_deep_message
from chakra_core.base._errors import ChakraError, ConfigError
from chakra_core.base._limits import get_limit

__all__ = ["parse_yaml", "parse_yaml_lines", "YamlLines"]


class _TooDeep(yaml.MarkedYAMLError):
    """A YAML collection nested deeper than the ``depth`` limit."""


class _BadValue(yaml.MarkedYAMLError):
    """A tagged YAML value that the tag's constructor cannot convert."""


class _DuplicateKey(yaml.MarkedYAMLError):
    """A mapping that gives one key twice (PyYAML keeps the last silently)."""


_MERGE_TAG = "tag:yaml.org,2002:merge"


if TYPE_CHECKING:  # what the mixin below is mixed into, as the type checker sees it
    _Loader = yaml.SafeLoader
else:
    _Loader = object


class _Bounds(_Loader):
    """A bound on nesting and located conversion errors, over a PyYAML loader."""

    depth_limit: int
    depth: int

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Compose one node, counting collections on the way down."""
        event = self.peek_event()
        nested = isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent))
        if not nested:
            return super().compose_node(parent, index)
        self.depth += 1
        try:
            if self.depth > self.depth_limit:
                raise _TooDeep(problem=too_deep_message(self.depth), problem_mark=event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """Construct a mapping whose own keys are unique (a ``<<`` merge may still be overridden)."""
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], Any] = {}
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != _MERGE_TAG:
                    first = seen.setdefault((key.tag, key.value), key)
                    if first is not key:
                        raise _DuplicateKey(problem=f"key {key.value!r} given twice (first at line "
                                            f"{first.start_mark.line + 1})", problem_mark=key.start_mark)
        return super().construct_mapping(node, deep)

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        """Construct one value; a tag that cannot convert it becomes a located YAML error."""
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as e:
            raise _BadValue(problem=f"{node.tag.rsplit(':', 1)[-1]}: {e}",
                            problem_mark=node.start_mark) from None


class _BoundedLoader(_Bounds, yaml.SafeLoader):
    """PyYAML's safe loader (pure Python), bounded; its errors are the ones reported."""

    def __init__(self, stream: str, limit: int):
        yaml.SafeLoader.__init__(self, stream)
        self.depth_limit, self.depth = limit, 0


def _fast_loader() -> type | None:
    """The bounded safe loader with libyaml's scanner and parser (about 7x faster) under PyYAML's
    own composer, so that nesting is counted on the way down; None when PyYAML lacks libyaml."""
    if not yaml.__with_libyaml__:
        return None
    from yaml._yaml import CParser

    class _FastLoader(_Bounds, Composer, CParser, SafeConstructor, Resolver):
        def __init__(self, stream: str, limit: int):
            yaml.reader.Reader(stream)  # the characters YAML does not allow, as the Python loader sees them
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            Composer.__init__(self)
            self.depth_limit, self.depth = limit, 0

    return _FastLoader


_FAST_LOADER = _fast_loader()


def _c_loader() -> type | None:
    """The safe loader with libyaml's composer too (its nodes keep their lines), for a text whose
    nesting cannot pass the ``depth`` limit (:func:`_nesting_bound`), as the composer does not
    count it; None when PyYAML lacks libyaml."""
    if not yaml.__with_libyaml__:
        return None
    from yaml._yaml import CParser

    class _CLoader(_Bounds, CParser, SafeConstructor, Resolver):
        def __init__(self, stream: str, limit: int):
            yaml.reader.Reader(stream)  # the characters YAML does not allow, as the Python loader sees them
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self.depth_limit, self.depth = limit, 0

    return _CLoader


_C_LOADER = _c_loader()
#: libyaml's composer recurses in C, unchecked, a level of nesting at a time: a text that might nest
#: deeper than this (even under a raised ``depth`` limit) is read by the bounded loaders
_C_NESTING = 100


def _nesting_bound(text: str) -> int:
    """An upper bound on how deep the collections of YAML ``text`` nest: every collection starts
    at one of ``[``, ``{``, ``-``, ``?`` or a key's ``:``."""
    return sum(map(text.count, "[{-?:"))


def parse_yaml(text: str, where: str, error: type[ChakraError] = ConfigError) -> Any:
    """Parse YAML ``text`` from file ``where`` (safe tags only); errors name the line."""
    return parse_yaml_lines(text, where, error)[0]


class YamlLines:
    """Where the keys and list items of a parsed YAML document are (1-based lines)."""

    def __init__(self, root: yaml.Node | None):
        self._root = root

    def line(self, path: Sequence[str | int]) -> int | None:
        """The line of the value at ``path`` (mapping keys and list indices): the line of its key
        in a mapping, of the item in a list; the nearest enclosing one's when the path leaves the
        document; None for an empty document."""
        node = self._root
        if node is None:
            return None
        line = node.start_mark.line + 1
        for key in path:
            entry = _entry(node, key)
            if entry is None:
                break
            line, node = entry
        return line


def _entry(node: yaml.Node, key: str | int) -> tuple[int, yaml.Node] | None:
    """The line of ``key``'s entry in a mapping or list node, and the value node there."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == str(key):
                return k.start_mark.line + 1, v
    elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key].start_mark.line + 1, node.value[key]
    return None


def parse_yaml_lines(text: str, where: str, error: type[ChakraError] = ConfigError) -> tuple[Any, YamlLines]:
    """:func:`parse_yaml`, and where each value of the document is.  A text of under
    :data:`_KEPT_BELOW` characters parsed before (under the same ``depth`` limit) is not parsed
    again: the caller gets a copy of its data (its own to change), as the same text parses the
    same (a system file read by each of many small simulations; a text that failed is never kept)."""
    depth = get_limit("depth")
    small = len(text) < _KEPT_BELOW
    hit = _KEPT.get((text, depth)) if small else None
    if hit is not None:
        return copy.deepcopy(hit[0]), hit[1]
    data, lines = _parsed(text, where, error, depth)
    if small:
        if len(_KEPT) >= _KEEP:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[(text, depth)] = (copy.deepcopy(data), lines)
    return data, lines


#: YAML texts parsed, the oldest dropped past _KEEP: (text, depth limit) -> (data, where its values are)
_KEPT: dict[tuple[str, int], tuple[Any, YamlLines]] = {}
_KEEP = 16
#: texts of at least this many characters are parsed each time
_KEPT_BELOW = 64 << 10


def _parsed(text: str, where: str, error: type[ChakraError], depth: int) -> tuple[Any, YamlLines]:
    """The data of YAML ``text`` and where its values are; errors name ``where`` and the line."""
    if _C_LOADER is not None and _nesting_bound(text) <= min(depth, _C_NESTING):
        try:
            return _document(_C_LOADER(text, depth))
        except (yaml.YAMLError, RecursionError, UnicodeError):
            pass  # the bounded loaders below read it again and name the error
    if _FAST_LOADER is not None:
        try:
            return _document(_FAST_LOADER(text, depth))
        except (yaml.YAMLError, RecursionError, UnicodeError):
            pass  # the pure-Python loader below reads it again and names the error
    try:
        loader = _BoundedLoader(text, depth)
    except yaml.reader.ReaderError as e:  # a character YAML does not allow, found up front
        line = text.count("\n", 0, e.position) + 1
        raise error(f"malformed YAML ({e.reason} #x{e.character:04x})", where, f"line {line}") from None
    try:
        return _document(loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or e
        forms: dict[type, str] = {_BadValue: "bad YAML value ({})", _TooDeep: "{}", _DuplicateKey: "{}"}
        what = forms.get(type(e), "malformed YAML ({})")
        raise error(what.format(problem), where, f"line {mark.line + 1}" if mark else None) from None
    except RecursionError:
        raise error(PARSER_DEPTH_MESSAGE, where) from None


def _document(loader: Any) -> tuple[Any, YamlLines]:
    """The one document ``loader`` reads, and where its values are."""
    try:
        node = loader.get_single_node()
        return (None if node is None else loader.construct_document(node)), YamlLines(node)
    finally:
        loader.dispose()
