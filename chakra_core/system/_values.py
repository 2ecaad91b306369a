"""Typed reading of configuration values, with errors that name the file and the key."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from chakra_core.base._errors import ConfigError
from chakra_core.base._options import suggest

__all__ = ["Reader", "number_text_hint"]

#: a decimal number written as text (``1e-30``, ``+5``, ``.5E3``); not inf/nan or hex
_NUMERIC = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def number_text_hint(value: Any) -> str:
    """A hint for ``value`` when it is a decimal number written as text, else ``""``.

    PyYAML (YAML 1.1) reads an exponent without a dot or without a sign (``1e30``, ``1.0e30``) as
    text; the hint spells the number so that it reads as one (``1.0e+30``)."""
    text = value.strip() if isinstance(value, str) else ""
    if not _NUMERIC.match(text):
        return ""
    mantissa, e, exponent = text.lower().partition("e")
    if e:
        mantissa += "" if "." in mantissa else ".0"
        exponent = exponent if exponent[0] in "+-" else f"+{exponent}"
    spelt = f"{mantissa}{e}{exponent}"
    if spelt == text.lower():  # it was quoted
        return f" (write numbers unquoted: {text})"
    return f" (YAML reads {text} as text: write it {spelt}, with a dot and a signed exponent)"


class Reader:
    """Reads keys of one mapping that came from file ``where``; errors name file and key."""

    def __init__(self, data: Any, where: str, prefix: str = ""):
        if not isinstance(data, dict):
            raise ConfigError(f"expected a mapping of keys, got {type(data).__name__}", where,
                              f"key {prefix!r}" if prefix else None)
        self.data = data
        self.where = where
        self.prefix = prefix

    def loc(self, key: str) -> str:
        """The location string of ``key`` for messages."""
        return f"key {self.prefix + key!r}"

    def fail(self, key: str, message: str) -> ConfigError:
        """A ConfigError about ``key``."""
        return ConfigError(message, self.where, self.loc(key))

    def has(self, key: str) -> bool:
        """Whether ``key`` is present (hyphen and underscore spellings both count)."""
        return self.key(key) is not None

    def key(self, key: str) -> str | None:
        """The spelling of ``key`` used in the data, or None."""
        for k in (key, key.replace("-", "_"), key.replace("_", "-")):
            if k in self.data:
                return k
        return None

    def raw(self, key: str, default: Any = None) -> Any:
        """The raw value of ``key`` or ``default``."""
        k = self.key(key)
        return default if k is None else self.data[k]

    def number(self, key: str, default: Any, minimum: float | None = None, integer: bool = False,
               why: str = "", maximum: int | None = None) -> Any:
        """A number (``integer``: whole) >= ``minimum`` and <= ``maximum``; ``why`` explains the
        lower bound.  ``maximum`` is a 32-bit field of ASTRA-sim's (its message says so)."""
        k = self.key(key)
        if k is None:
            return default
        v = self.data[k]
        if isinstance(v, str) and _NUMERIC.match(v.strip()):
            # PyYAML (YAML 1.1) reads 1e-30 or 5e10 as strings; yaml-cpp, which ASTRA-sim
            # uses, reads them as numbers
            text = v.strip()
            v = float(text) if any(c in text for c in ".eE") else int(text)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(k, f"wants a number, got {v!r} (write numbers unquoted, e.g. 50, 2.5 or 1.0e-3)")
        if isinstance(v, float) and not math.isfinite(v) or isinstance(v, int) and v.bit_length() > 1023:
            shown = f"a number of about {int(v.bit_length() * math.log10(2)) + 1} digits" if isinstance(v, int) \
                else repr(v)
            raise self.fail(k, f"wants a finite number (below 1.8e308), got {shown}")
        if integer:
            if isinstance(v, float) and not v.is_integer():
                raise self.fail(k, f"wants a whole number, got {v!r}")
            v = int(v)
        if minimum is not None and v < minimum:
            raise self.fail(k, f"must be >= {minimum:g}, got {v!r}" + (f" ({why})" if why else ""))
        if maximum is not None and v > maximum:
            raise self.fail(k, f"must be <= {maximum}, got {v!r} (ASTRA-sim reads it as a 32-bit int)")
        return v

    def flag(self, key: str, default: bool) -> bool:
        """A 0/1 or boolean flag."""
        k = self.key(key)
        if k is None:
            return default
        v = self.data[k]
        if isinstance(v, bool):
            return v
        if isinstance(v, (int, float)) and v in (0, 1):
            return bool(v)
        raise self.fail(k, f"wants 0 or 1, got {v!r}")

    def choice(self, key: str, default: str, choices: Iterable[str]) -> str:
        """One of ``choices`` (exact spelling, as ASTRA-sim compares strings exactly)."""
        k = self.key(key)
        if k is None:
            return default
        v = self.data[k]
        choices = tuple(choices)
        if v not in choices:
            hint = next((f" (did you mean {c!r}?)" for c in choices if c.lower() == str(v).lower()), "")
            raise self.fail(k, f"must be one of {', '.join(choices)}, got {v!r}"
                            + (hint or suggest(str(v), choices)))
        return v

    def unknown(self, known: Iterable[str]) -> list[str]:
        """Keys of the data not in ``known`` (compared with ``-`` and ``_`` unified)."""
        norm = {k.replace("_", "-") for k in known}
        return [k for k in self.data if str(k).replace("_", "-") not in norm]
