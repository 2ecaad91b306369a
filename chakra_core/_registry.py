"""The registry of named implementations, stamped with the plugin that registered each."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._errors import PluginError
from ._options import suggest

__all__ = ["Registry", "Entry", "KINDS"]

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_FACTORY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")

#: registry kind -> the hook that fills it
KINDS = {
    "format": "chakra_register_formats",
    "backend": "chakra_register_backends",
    "transform": "chakra_register_transforms",
    "synthesizer": "chakra_register_synthesizers",
}


@dataclass
class Entry:
    """One registered name."""

    kind: str
    name: str
    factory: Callable[[], Any] | str
    plugin: str
    description: str = ""
    install_hint: str | None = None
    _instance: Any = field(default=None, repr=False)

    def load(self) -> Any:
        """Resolve the factory (importing on first use) and return the implementation instance."""
        if self._instance is not None:
            return self._instance
        factory = self.factory
        try:
            if isinstance(factory, str):
                mod, _, attr = factory.partition(":")
                obj: Any = importlib.import_module(mod)
                for part in attr.split(".") if attr else []:
                    obj = getattr(obj, part)
                factory = obj
            inst = factory()
        except ImportError as e:
            missing = getattr(e, "name", None) or ""
            own = isinstance(self.factory, str) and missing and (
                self.factory.split(":")[0] == missing or self.factory.startswith(missing + ".")
                or missing.split(".")[0] == self.factory.split(".")[0])
            if own:  # the plugin's own module is missing: its registered path is wrong
                raise PluginError(
                    f"{self.kind} {self.name!r} (from {self.plugin}) registered the import path "
                    f"{self.factory!r}, which cannot be imported ({e}); the plugin needs fixing"
                ) from None
            hint = self.install_hint or (f"pip install {missing}" if missing else f"reinstall {self.plugin}")
            raise PluginError(
                f"{self.kind} {self.name!r} (from {self.plugin}) needs a missing module "
                f"({e}); install it with: {hint}"
            ) from None
        except Exception as e:  # noqa: BLE001 - a broken plugin must not give a traceback
            raise PluginError(
                f"{self.kind} {self.name!r} (from {self.plugin}) cannot be loaded from {self.factory!r}: "
                f"{type(e).__name__}: {e}"
            ) from e
        kind = getattr(inst, "kind", None)
        if self.kind == "backend" and kind not in ("simulator", "exporter", "emulator"):
            raise PluginError(f"backend {self.name!r} (from {self.plugin}) has kind {kind!r}; "
                              f"it must set kind to 'simulator', 'exporter' or 'emulator'")
        inst.name = self.name
        self._instance = inst
        return inst


class Registry:
    """Names of formats, backends, transforms and synthesizers, and who registered them."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}

    def register_callback(self, kind: str, plugin: str) -> Callable[..., None]:
        """The ``register`` callback handed to one plugin's registration hook for ``kind``."""

        def register(name: str, factory: Callable[[], Any] | str, description: str = "",
                     install_hint: str | None = None) -> None:
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise PluginError(f"{plugin}: {kind} name {name!r} is not a name (letters, digits, '_', '-', '.')")
            if isinstance(factory, str) and not _FACTORY.fullmatch(factory):
                raise PluginError(f"{plugin}: {kind} {name!r}: factory {factory!r} is not 'package.module:Attribute'")
            if not isinstance(factory, str) and not callable(factory):
                raise PluginError(f"{plugin}: {kind} {name!r}: factory must be callable or an import path")
            taken = self._entries[kind].get(name)
            if taken is not None:
                raise PluginError(
                    f"{kind} {name!r} is registered by both {taken.plugin} and {plugin}; "
                    + ("rename the new one (the core's names cannot be disabled)" if taken.plugin == "chakra-core"
                       else "uninstall or disable one (CHAKRA_DISABLE_PLUGINS)")
                )
            self._entries[kind][name] = Entry(kind, name, factory, plugin, description, install_hint)

        return register

    def forget(self, kind: str, names: list[str]) -> None:
        """Remove ``names`` of ``kind`` (when their plugin is removed or failed half-way)."""
        for n in names:
            self._entries[kind].pop(n, None)

    def names(self, kind: str) -> list[str]:
        """Registered names of ``kind``, sorted."""
        return sorted(self._entries[kind])

    def entries(self, kind: str | None = None) -> list[Entry]:
        """All entries (of one kind, or of every kind)."""
        kinds = [kind] if kind else list(KINDS)
        return [e for k in kinds for e in self._entries[k].values()]

    def entry(self, kind: str, name: str) -> Entry:
        """The entry for ``name``; unknown names raise with "did you mean" and the alternatives."""
        try:
            return self._entries[kind][name]
        except KeyError:
            known = self.names(kind)
            alts = ", ".join(known) if known else "none installed"
            raise PluginError(f"unknown {kind} {name!r}{suggest(name, known)}; installed: {alts}") from None

    def get(self, kind: str, name: str) -> Any:
        """The implementation instance registered as ``name``."""
        return self.entry(kind, name).load()
