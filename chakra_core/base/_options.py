"""Declared plugin options: type checking, defaults, and "did you mean" for unknown keys."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chakra_core.base._errors import ConfigError, PluginError

__all__ = ["Option", "check_options", "check_flags", "check_whole", "check_amount", "options_dict", "suggest",
           "parse_kv"]

_TYPES = {
    "int": int, "float": float, "str": str, "path": str, "bool": bool, "list": list, "dict": dict,
    "any": object,
}


@dataclass(frozen=True)
class Option:
    """One option a plugin accepts.

    ``type`` is one of int, float, str, path, bool, list, dict, any (a ``path`` is a string that
    a YAML pipeline resolves relative to the pipeline file); ``choices`` restricts the values;
    ``unit`` documents the value's unit (e.g. "us", "bytes", "GB/s"); ``minimum`` and ``maximum``
    bound a number; ``inline`` lets a ``path`` option also take the file's content as a mapping
    (a pipeline's inline ``system:``).
    """

    type: str = "str"
    default: Any = None
    help: str = ""
    choices: tuple = ()
    required: bool = False
    unit: str = ""
    minimum: float | None = None
    inline: bool = False
    maximum: float | None = None

    def declaration_error(self) -> str | None:
        """What is wrong with this declaration (an unknown type, a default of the wrong type), or None."""
        if self.type not in _TYPES:
            return f"type {self.type!r} is not one of {', '.join(_TYPES)}"
        if self.default is not None and self.type not in ("any", "path"):
            try:
                _check_type("default", self, self.default, "Option")
            except ConfigError:
                return f"default {self.default!r} is not of type {self.type}"
        return None


def suggest(name: str, candidates) -> str:
    """``" (did you mean 'x'?)"`` for the closest candidate, or "" when none is close."""
    import difflib  # only on a mistake: not loaded by every command

    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _coerce(key: str, spec: Option, value: Any, owner: str) -> Any:
    want = spec.type
    if value is None:
        if spec.default is None and not spec.required:
            return None
        raise ConfigError(f"{owner}: option {key!r} wants {want}, got null")
    value = _from_text(key, spec, value, owner) if isinstance(value, str) else value
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{owner}: option {key!r} must be a finite number, got {value!r}")
    return _check_type(key, spec, value, owner)


def _from_text(key: str, spec: Option, value: str, owner: str) -> Any:
    """Type a string given on the command line (``-O key=value``)."""
    want = spec.type
    if want in ("int", "float", "bool"):
        text = value.strip().lower()
        try:
            if want == "bool":
                if text in ("1", "true", "yes", "on"):
                    return True
                if text in ("0", "false", "no", "off"):
                    return False
                raise ValueError
            if want == "int":
                return int(text, 10) if text.lstrip("+-").isdigit() else int(text, 0)
            return float(text)
        except ValueError:
            raise ConfigError(f"{owner}: option {key!r} wants {want}, got {value!r}") from None
    if want in ("list", "dict") and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError as e:
            raise ConfigError(f"{owner}: option {key!r}: malformed JSON {value!r} ({e})") from None
    if want == "list":
        return [v.strip() for v in value.split(",") if v.strip()]
    return value


def _check_type(key: str, spec: Option, value: Any, owner: str) -> Any:
    want = spec.type
    if want == "path" and spec.inline and isinstance(value, dict):
        return value
    if want == "bool" and type(value) is int and value in (0, 1):
        return bool(value)
    if want == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    typ = _TYPES[want]
    if want == "int" and isinstance(value, bool) or not isinstance(value, typ):
        raise ConfigError(f"{owner}: option {key!r} wants {want}, got {type(value).__name__} {value!r}")
    if want == "int" and isinstance(value, int) and not -(1 << 63) <= value < 1 << 63:
        low = "-2**63" if spec.minimum is None or spec.minimum < -(1 << 63) else f"{math.ceil(spec.minimum)}"
        high = "2**63-1" if spec.maximum is None or spec.maximum >= 1 << 63 else f"{math.floor(spec.maximum)}"
        raise ConfigError(f"{owner}: option {key!r} must be a whole number from {low} to {high}, got a number "
                          f"of about {int(value.bit_length() * 0.30103) + 1} digits")
    return value


def check_options(owner: str, specs: Mapping[str, Option], options: Mapping[str, Any] | None) -> dict:
    """Validate ``options`` against ``specs``; return them with defaults filled in.

    Raises :class:`ConfigError` naming ``owner`` for unknown keys (with a suggestion, or the
    accepted keys when none is close), wrong types, values outside ``choices`` and missing required options.
    """
    options = options_dict(owner, options)
    out: dict[str, Any] = {}
    for key in options:
        if key not in specs:
            hint = suggest(key, specs)  # a close name is enough; else every accepted name
            known = hint or f"; accepted: {', '.join(sorted(specs)) or 'none'}"
            raise ConfigError(f"{owner}: unknown option {key!r}{known}")
    for key, spec in specs.items():
        problem = spec.declaration_error()
        if problem:
            raise PluginError(f"{owner}: option {key!r} is declared badly: {problem}")
        if key not in options:
            if spec.required:
                raise ConfigError(f"{owner}: option {key!r} is required ({spec.help})")
            out[key] = spec.default
            continue
        value = _coerce(key, spec, options[key], owner)
        if spec.choices and value not in spec.choices:
            raise ConfigError(
                f"{owner}: option {key!r} must be one of {', '.join(map(str, spec.choices))}, got {value!r}"
                + suggest(str(value), map(str, spec.choices))
            )
        if spec.minimum is not None and isinstance(value, (int, float)) and value < spec.minimum:
            raise ConfigError(f"{owner}: option {key!r} must be >= {spec.minimum}, got {value!r}")
        if spec.maximum is not None and isinstance(value, (int, float)) and value > spec.maximum:
            raise ConfigError(f"{owner}: option {key!r} must be <= {spec.maximum}, got {value!r}")
        out[key] = value
    return out


def check_flags(**flags: Any) -> None:
    """Refuse a yes-or-no argument of the Python API that is not ``True`` or ``False`` (taken by
    its truth, ``"no"`` would mean yes): a ConfigError naming it."""
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ConfigError(f"{name} must be True or False, got {value!r}")


def options_dict(owner: str, options: Any) -> dict[str, Any]:
    """``options`` (a mapping, or None for none) as a new dict; anything else (a ``"key=value"``
    string, a list) is a ConfigError naming ``owner``."""
    if options is not None and not isinstance(options, Mapping):
        raise ConfigError(f"{owner}: options are a mapping of names to values ({{'key': value}}), got {options!r}")
    return dict(options or {})


def check_whole(**values: Any) -> None:
    """Refuse a whole-number argument of the Python API that is not an ``int`` (a string, a
    float, None, a bool): a ConfigError naming it, where a comparison would raise TypeError."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name} must be a whole number, got {value!r}")


def check_amount(**values: Any) -> None:
    """Refuse a real-number argument of the Python API that is not a finite ``int`` or ``float``
    of 0 or more (a string, a bool, NaN, a negative number): a ConfigError naming it."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ConfigError(f"{name} must be a number of 0 or more, got {value!r}")


def parse_kv(pairs: list[str] | None) -> dict[str, str]:
    """Parse ``-O key=value`` arguments into a dict of strings (typed later by the plugin); a key
    given twice with different values is a ConfigError naming both (the same value twice is one;
    a list option takes its items comma-separated in one value)."""
    out: dict[str, str] = {}
    for p in pairs or []:
        if "=" not in p:
            raise ConfigError(f"-O {p!r}: expected key=value")
        k, v = p.split("=", 1)
        k = k.strip()
        if out.get(k, v) != v:
            raise ConfigError(f"option {k!r} is given twice, as {out[k]!r} and {v!r}: give it once "
                              "(a list option takes its items comma-separated in one value)")
        out[k] = v
    return out
