"""The registry of named implementations, stamped with the distribution that registered each.

Every implementation has a bare name (``simpy``) and a qualified name ``DISTRIBUTION:NAME``
(``chakra-simpy:simpy``).  Two distributions may register the same bare name: both stay
registered and addressable by their qualified names, and the bare name is ambiguous (an error
naming both) unless the user prefers one distribution for it: the environment variable
``CHAKRA_PREFER=simpy=chakra-simpy,text=other-dist`` or a pipeline's ``prefer:`` mapping.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chakra_core.base._errors import ConfigError, PluginError
from chakra_core.base._options import suggest

__all__ = ["Registry", "Entry", "KINDS", "PREFER_ENV", "normalize_distribution", "parse_prefer"]

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_FACTORY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
PREFER_ENV = "CHAKRA_PREFER"

#: registry kind -> the hook that fills it
KINDS = {
    "format": "chakra_register_formats",
    "backend": "chakra_register_backends",
    "transform": "chakra_register_transforms",
    "synthesizer": "chakra_register_synthesizers",
    "generator": "chakra_register_generators",
    "executor": "chakra_register_executors",
}


def normalize_distribution(name: str) -> str:
    """A distribution name compared the way pip compares them (``Chakra_SimPy`` = ``chakra-simpy``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_prefer(text: str, where: str = PREFER_ENV) -> dict[str, str]:
    """Parse ``name=distribution,name=distribution`` (the form of ``CHAKRA_PREFER``)."""
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, eq, dist = item.partition("=")
        if not eq or not name.strip() or not dist.strip():
            raise ConfigError(f"{where}: {item.strip()!r} is not NAME=DISTRIBUTION")
        out[name.strip()] = dist.strip()
    return out


@dataclass
class Entry:
    """One registered implementation: its kind, bare name and the distribution that registered it."""

    kind: str
    name: str
    factory: Callable[[], Any] | str
    distribution: str
    version: str = ""
    description: str = ""
    install_hint: str | None = None
    _instance: Any = field(default=None, repr=False)

    @property
    def qualified_name(self) -> str:
        """``DISTRIBUTION:NAME``, unique among every installed implementation of this kind."""
        return f"{self.distribution}:{self.name}"

    @property
    def label(self) -> str:
        """``kind 'name' (from distribution)`` for messages."""
        return f"{self.kind} {self.name!r} (from {self.distribution})"

    def load(self) -> Any:
        """Resolve the factory (importing on first use) and return the implementation instance."""
        if self._instance is not None:
            return self._instance
        inst = self._create()
        kind = getattr(inst, "kind", None)
        if self.kind == "backend" and kind not in ("simulator", "exporter", "emulator"):
            raise PluginError(f"{self.label} has kind {kind!r}; "
                              f"it must set kind to 'simulator', 'exporter' or 'emulator'")
        inst.name = self.name
        inst.qualified_name = self.qualified_name
        self._instance = inst
        return inst

    def _create(self) -> Any:
        factory = self.factory
        try:
            if isinstance(factory, str):
                mod, _, attr = factory.partition(":")
                obj: Any = importlib.import_module(mod)
                for part in attr.split(".") if attr else []:
                    obj = getattr(obj, part)
                factory = obj
            return factory()
        except ImportError as e:
            raise self._import_error(e) from None
        except Exception as e:  # noqa: BLE001 - a broken plugin must not give a traceback
            raise PluginError(f"{self.label} cannot be loaded from {self.factory!r}: "
                              f"{type(e).__name__}: {e}") from e

    def _import_error(self, e: ImportError) -> PluginError:
        missing = getattr(e, "name", None) or ""
        path = self.factory if isinstance(self.factory, str) else ""
        own = path and missing and (path.split(":")[0] == missing or path.startswith(missing + ".")
                                    or missing.split(".")[0] == path.split(".")[0])
        if own:  # the plugin's own module is missing: its registered path is wrong
            return PluginError(f"{self.label} registered the import path {path!r}, which cannot be "
                               f"imported ({e}); the plugin needs fixing")
        hint = self.install_hint or (f"pip install {missing}" if missing else f"reinstall {self.distribution}")
        return PluginError(f"{self.label} needs a missing module ({e}); install it with: {hint}")


class Registry:
    """Names of formats, backends, transforms and synthesizers, and who registered them."""

    def __init__(self) -> None:
        #: kind -> bare name -> the entries of that name, in registration order
        self._entries: dict[str, dict[str, list[Entry]]] = {k: {} for k in KINDS}

    def register_callback(self, kind: str, distribution: str, version: str = "",
                          plugin: str | None = None) -> Callable[..., None]:
        """The ``register`` callback handed to one plugin's registration hook for ``kind``.

        ``plugin`` (the entry point's name) only serves messages.
        """
        who = f"plugin {plugin!r} ({distribution})" if plugin else distribution

        def register(name: str, factory: Callable[[], Any] | str, description: str = "",
                     install_hint: str | None = None) -> None:
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise PluginError(f"{who}: {kind} name {name!r} is not a name (letters, digits, '_', '-', '.')")
            if isinstance(factory, str) and not _FACTORY.fullmatch(factory):
                raise PluginError(f"{who}: {kind} {name!r}: factory {factory!r} is not 'package.module:Attribute'")
            if not isinstance(factory, str) and not callable(factory):
                raise PluginError(f"{who}: {kind} {name!r}: factory must be callable or an import path")
            same = self._entries[kind].setdefault(name, [])
            mine = normalize_distribution(distribution)
            if any(normalize_distribution(e.distribution) == mine for e in same):
                raise PluginError(f"{who}: {kind} {name!r} is registered twice by {distribution}; "
                                  f"one distribution registers each name once")
            same.append(Entry(kind, name, factory, distribution, version, description, install_hint))

        return register

    def forget(self, kind: str, names: list[str], distribution: str) -> None:
        """Remove ``distribution``'s ``names`` of ``kind`` (its plugin was removed or failed half-way)."""
        mine = normalize_distribution(distribution)
        for n in names:
            kept = [e for e in self._entries[kind].get(n, []) if normalize_distribution(e.distribution) != mine]
            if kept:
                self._entries[kind][n] = kept
            else:
                self._entries[kind].pop(n, None)

    def names(self, kind: str) -> list[str]:
        """Registered bare names of ``kind``, sorted."""
        return sorted(self._entries[kind])

    def qualified_names(self, kind: str) -> list[str]:
        """Registered qualified names (``DISTRIBUTION:NAME``) of ``kind``, sorted."""
        return sorted(e.qualified_name for e in self.entries(kind))

    def entries(self, kind: str | None = None) -> list[Entry]:
        """All entries (of one kind, or of every kind)."""
        kinds = [kind] if kind else list(KINDS)
        return [e for k in kinds for same in self._entries[k].values() for e in same]

    def clashes(self, kind: str, name: str) -> list[Entry]:
        """Every entry of ``kind`` with bare ``name`` when more than one distribution registers it."""
        same = self._entries[kind].get(name, [])
        return list(same) if len(same) > 1 else []

    def entry(self, kind: str, name: str, prefer: Mapping[str, str] | None = None) -> Entry:
        """The entry for a bare or qualified ``name``.

        A bare name that several distributions register is resolved by ``prefer`` (bare name ->
        distribution, e.g. a pipeline's ``prefer:``), then by ``CHAKRA_PREFER``; otherwise it is
        an error naming every qualified name.  Unknown names raise with "did you mean" and the
        installed alternatives.
        """
        if not isinstance(name, str):
            raise PluginError(f"a {kind} is named by a string, got {name!r}; installed: "
                              f"{', '.join(self.names(kind)) or 'none'}")
        if ":" in name:
            return self._qualified(kind, name)
        same = self._entries[kind].get(name)
        if not same:
            known = self.names(kind)
            alts = ", ".join(known) if known else "none installed"
            raise PluginError(f"unknown {kind} {name!r}{suggest(name, known)}; installed: {alts}")
        if len(same) == 1:
            return same[0]
        return self._preferred(kind, name, same, prefer)

    def get(self, kind: str, name: str, prefer: Mapping[str, str] | None = None) -> Any:
        """The implementation instance registered as ``name`` (bare or qualified)."""
        return self.entry(kind, name, prefer).load()

    def _qualified(self, kind: str, qualified: str) -> Entry:
        dist, _, bare = qualified.partition(":")
        wanted = normalize_distribution(dist)
        for e in self._entries[kind].get(bare, []):
            if normalize_distribution(e.distribution) == wanted:
                return e
        known = self.qualified_names(kind)
        raise PluginError(f"unknown {kind} {qualified!r}{suggest(qualified, known)}; "
                          f"installed: {', '.join(known) or 'none'}")

    def _preferred(self, kind: str, name: str, same: list[Entry], prefer: Mapping[str, str] | None) -> Entry:
        both = " and ".join(e.qualified_name for e in same)
        for where, choice in (("prefer", (prefer or {}).get(name)), (PREFER_ENV, _env_prefer().get(name))):
            if choice is None:
                continue
            wanted = normalize_distribution(choice)
            for e in same:
                if normalize_distribution(e.distribution) == wanted:
                    return e
            raise ConfigError(f"{where} picks {choice!r} for {kind} {name!r}, which it does not register; "
                              f"registered as {both}")
        raise PluginError(f"{kind} {name!r} is ambiguous: registered as {both}; use a qualified name, or "
                          f"pick one with {PREFER_ENV}={name}=DISTRIBUTION (or 'prefer:' in a pipeline)")


def _env_prefer() -> dict[str, str]:
    return parse_prefer(os.environ.get(PREFER_ENV, ""))
