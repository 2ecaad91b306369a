"""A pipeline document: read from a YAML file (keeping where each value is) or taken as a mapping,
and checked against the pipeline's JSON Schema (:mod:`._schema`) before any semantic check.

The first violation becomes the one-line ConfigError of the rest of the loader: the file, the
line when the document came from one, the key path (``backends[0].output``) and what is wrong,
with "did you mean" for an unknown key.  ``jsonschema`` is imported only here, when a document is
checked, so that commands which load no pipeline do not pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chakra_core.base._docparse import decode_text
from chakra_core.base._errors import ConfigError
from chakra_core.base._inputguard import note_inputs
from chakra_core.base._options import suggest
from chakra_core.base._yamlparse import YamlLines, parse_yaml_lines
from chakra_core.pipeline._schema import pipeline_schema
from chakra_core.system._values import number_text_hint

__all__ = ["read_document", "check_pipeline"]

_TYPE_WORDS = {"object": "a mapping", "array": "a list", "string": "a string", "boolean": "true or false",
               "integer": "an integer", "number": "a number"}
#: at one place, an unknown key is reported before a missing one, and that before a wrong type
_RANK = {"additionalProperties": 0, "required": 1, "type": 2}


def read_document(spec: str | os.PathLike | Mapping[str, Any],
                  source: str | None = None) -> tuple[Any, str, YamlLines | None]:
    """The document of ``spec`` (a YAML file, or a mapping that messages call ``source``, default
    ``<pipeline>``), the name messages give it, and where its values are (None for a mapping)."""
    if isinstance(spec, Mapping):
        return dict(spec), source or "<pipeline>", None
    source = str(spec)
    note_inputs([source])
    try:
        raw = Path(spec).read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read ({e.strerror or e})", source) from None
    data, lines = parse_yaml_lines(decode_text(raw, source), source)
    return data, source, lines


def check_pipeline(data: Any, source: str, lines: YamlLines | None,
                   schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return ``data`` when it is a pipeline document by ``schema`` (default: the pipeline's,
    with any mapping as ``sweep:``); else raise ConfigError for its first violation."""
    _backends_listed(data, source, lines)
    _no_nul(data, source, lines)
    first = _first_violation(data, schema or pipeline_schema(), lines)
    if first is not None:
        raise ConfigError(first[0], source, _line(lines, first[1]))
    return data


def _backends_listed(data: Any, source: str, lines: YamlLines | None) -> None:
    """Refuse ``backends:`` when it is not a non-empty list, in one wording whatever is there
    (null, a name, a mapping, []); a missing one is the schema's."""
    if not isinstance(data, dict) or "backends" not in data:
        return
    backends = data["backends"]
    if not (isinstance(backends, list) and backends):
        raise ConfigError("'backends' must be a non-empty list", source, _line(lines, ("backends",)))


def _no_nul(data: Any, source: str, lines: YamlLines | None) -> None:
    """Refuse a NUL character in any key or string of the document (no path or name holds one)."""
    stack: list[tuple[Any, tuple]] = [(data, ())]
    seen: set[int] = set()
    while stack:
        item, place = stack.pop()
        if isinstance(item, str) and "\0" in item:
            raise ConfigError(f"{_key_path(place)}: a NUL character is not allowed in a string", source,
                              _line(lines, place))
        if isinstance(item, (dict, list)):
            if id(item) in seen:  # a YAML alias: its values were walked where it was first met
                continue
            seen.add(id(item))
        if isinstance(item, dict):
            stack.extend((k, (*place, k)) for k in item if isinstance(k, str))
            stack.extend((v, (*place, k)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, (*place, i)) for i, v in enumerate(item))


def _first_violation(data: Any, schema: Mapping[str, Any], lines: YamlLines | None) -> tuple[str, tuple] | None:
    """The message and place of the shallowest violation, the earliest in the file among equals."""
    from jsonschema import Draft202012Validator

    found = []
    for error in Draft202012Validator(schema).iter_errors(data):
        message, place = _explain(error)
        line = lines.line(place) if lines is not None else None
        rank = (len(error.absolute_path), line or 0, _RANK.get(str(error.validator), 3))
        found.append((rank, message, place))
    if not found:
        return None
    _, message, place = min(found, key=lambda f: f[0])
    return message, place


def _explain(error: Any) -> tuple[str, tuple]:
    """The message of one violation (a ``jsonschema`` ValidationError), and the place it is about:
    an unknown or misnamed key's own place, else the value's."""
    path, value, schema, keyword = tuple(error.absolute_path), error.instance, error.schema, error.validator
    where = _key_path(path)
    if "propertyNames" in error.schema_path:  # a swept path in sweep.grid, .derive or .random.params
        return f"{where}: {value!r} is not a path of dotted keys (e.g. system.network[0].bandwidth)", (*path, value)
    if keyword == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        key = next(k for k in value if k not in allowed)
        return (f"unknown key {key!r} in {where}{suggest(str(key), allowed)}; "
                f"allowed: {', '.join(allowed)}", (*path, key))
    if keyword == "required":
        return f"{where} needs {next(k for k in schema['required'] if k not in value)!r}", path
    if keyword in ("type", "minItems"):
        hint = number_text_hint(value) if "number" in _types(schema) else ""
        return f"{where} must be {_expected(schema)}, got {_shown(value)}{hint}", path
    if keyword in ("minimum", "exclusiveMinimum"):
        sign = ">=" if keyword == "minimum" else ">"
        return f"{where} must be {sign} {schema[keyword]}, got {value!r}", path
    return f"{where}: {error.message}", path


def _key_path(path: Sequence[str | int]) -> str:
    """``backends[0].output`` for ``("backends", 0, "output")``; ``the pipeline`` for ``()``."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else f".{key}" if text else str(key)
    return text or "the pipeline"


def _types(schema: Mapping[str, Any]) -> list[str]:
    return schema["type"] if isinstance(schema["type"], list) else [schema["type"]]


def _expected(schema: Mapping[str, Any]) -> str:
    words = [_TYPE_WORDS[t] for t in _types(schema) if t != "null"]
    if schema.get("minItems"):
        words = ["a non-empty list" if w == "a list" else w for w in words]
    return " or ".join(words)


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    return "null" if value is None else repr(value)


def _line(lines: YamlLines | None, place: tuple) -> str | None:
    line = lines.line(place) if lines is not None else None
    return f"line {line}" if line is not None else None
