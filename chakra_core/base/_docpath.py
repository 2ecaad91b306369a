"""Paths of dotted keys into a pipeline document: ``system.network[0].bandwidth``.

A path is keys separated by dots, with ``[i]`` for list items.  In a list of named entries
(``backends``, ``transforms``), a key that is not an index picks the entry with that ``name``:
``backends.simpy.options.streams`` is the ``options.streams`` of the backend named ``simpy``.
Setting a value creates the mappings on the way that are missing (``options`` of a backend that
has none), never list items.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from chakra_core.base._errors import ConfigError
from chakra_core.base._options import suggest

__all__ = ["parse_path", "get_path", "set_path", "child"]

_PART = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")

Key = str | int


def parse_path(text: str) -> tuple[Key, ...]:
    """The keys of ``text`` (``"a.b[2].c"`` -> ``("a", "b", 2, "c")``); raises ConfigError."""
    if not isinstance(text, str) or not text or text.startswith((".", "[")):
        raise ConfigError(f"{text!r} is not a path of dotted keys (e.g. system.network[0].bandwidth)")
    keys: list[Key] = []
    pos = 0
    while pos < len(text):
        if keys and text[pos] == ".":
            pos += 1
        m = _PART.match(text, pos)
        if m is None:
            raise ConfigError(f"{text!r} is not a path of dotted keys (e.g. system.network[0].bandwidth)")
        keys.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    return tuple(keys)


def child(node: Any, key: Key, path: str) -> Any:
    """The child of ``node`` at ``key`` (an index, a mapping key, or a list entry's name)."""
    if isinstance(key, int):
        if not isinstance(node, list) or not -len(node) <= key < len(node):
            size = f"a list of {len(node)}" if isinstance(node, list) else type(node).__name__
            raise ConfigError(f"{path}: no item [{key}] ({size})")
        return node[key]
    if isinstance(node, Mapping):
        if key not in node:
            raise ConfigError(f"{path}: no key {key!r}{suggest(key, [str(k) for k in node])}; "
                              f"there are: {', '.join(map(str, node)) or 'none'}")
        return node[key]
    if isinstance(node, list):
        return node[_named(node, key, path)]
    raise ConfigError(f"{path}: {key!r} is inside a {type(node).__name__}, not a mapping or a list")


def _named(items: list, name: str, path: str) -> int:
    """The index of the entry named ``name`` in a list of ``{name: ...}`` mappings."""
    found = [i for i, it in enumerate(items) if isinstance(it, Mapping) and it.get("name") == name]
    if len(found) == 1:
        return found[0]
    names = [str(it.get("name")) for it in items if isinstance(it, Mapping)]
    if found:
        raise ConfigError(f"{path}: {len(found)} entries are named {name!r}; address them as [i]")
    raise ConfigError(f"{path}: no entry named {name!r}{suggest(name, names)}; "
                      f"there are: {', '.join(names) or 'none'}")


def get_path(doc: Any, path: str) -> Any:
    """The value at ``path`` in ``doc``; raises ConfigError naming the path and what is there."""
    node = doc
    for key in parse_path(path):
        node = child(node, key, path)
    return node


def set_path(doc: Any, path: str, value: Any) -> None:
    """Set the value at ``path`` in ``doc`` (in place), creating missing mappings on the way."""
    keys = parse_path(path)
    node = doc
    for key, nxt in zip(keys, keys[1:]):
        if isinstance(node, dict) and isinstance(key, str) and node.get(key) is None:
            node[key] = [] if isinstance(nxt, int) else {}
        node = child(node, key, path)
    last = keys[-1]
    if isinstance(last, int) or isinstance(node, list):
        index = last if isinstance(last, int) else _named(node, last, path)
        child(node, index, path)
        node[index] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ConfigError(f"{path}: {last!r} is inside a {type(node).__name__}, not a mapping or a list")
