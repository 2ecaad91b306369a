"""Finding and loading plugins: built-in defaults plus the ``chakra`` entry-point group.

Each entry point is loaded in isolation: a plugin that fails to import or to register gives one
named warning and is listed as failed; everything else keeps working.  Environment switches:

``CHAKRA_LOAD_PLUGINS``     comma-separated entry-point or distribution names: load only these
                            (an empty value loads no third-party plugin);
``CHAKRA_DISABLE_PLUGINS``  comma-separated names not to load;
``CHAKRA_STRICT_PLUGINS``   ``1``: a failing plugin raises instead of warning (also ``--strict``);
``CHAKRA_TRACE_PLUGINS``    ``1``: print every hook call and registration to stderr.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from dataclasses import dataclass, field
from importlib import metadata as md
from typing import Any

import pluggy

from . import hookspecs
from ._errors import PluginError
from ._registry import KINDS, Registry

__all__ = [
    "PluginHost", "PluginInfo", "get_host", "reset_host", "PluginWarning", "DEFAULT_PLUGINS", "ENTRY_POINT_GROUP",
]

ENTRY_POINT_GROUP = "chakra"
#: the core's own features, registered through the same hooks as any third party.
DEFAULT_PLUGINS = (
    "chakra_core._builtin.formats",
    "chakra_core._builtin.backends",
    "chakra_core._builtin.transforms",
)
CORE_DIST = "chakra-core"


class PluginWarning(UserWarning):
    """A plugin failed to load and was skipped."""


@dataclass
class PluginInfo:
    """One loaded (or failed) plugin: its entry point, distribution and what it registered."""

    name: str
    distribution: str
    version: str
    module: str
    registered: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``chakra plugins --json``."""
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "registered": self.registered,
            "error": self.error,
        }


def _env_list(name: str) -> set[str] | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return {v.strip() for v in value.split(",") if v.strip()}


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _core_version() -> str:
    try:
        return md.version(CORE_DIST)
    except md.PackageNotFoundError:
        return "0+unknown"


class PluginHost:
    """The pluggy manager, the registry and the list of plugins, loaded once per process."""

    def __init__(self, strict: bool | None = None, entry_points: bool = True):
        self.strict = _truthy("CHAKRA_STRICT_PLUGINS") if strict is None else strict
        self.trace = _truthy("CHAKRA_TRACE_PLUGINS")
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.registry = Registry()
        self.plugins: list[PluginInfo] = []
        if self.trace:
            self.pm.trace.root.setwriter(lambda s: sys.stderr.write("chakra-trace: " + s))
            self.pm.enable_tracing()
        version = _core_version()
        for modname in DEFAULT_PLUGINS:
            info = PluginInfo(modname.rsplit(".", 1)[-1], CORE_DIST, version, modname)
            self._add(importlib.import_module(modname), info)
        if entry_points:
            self._load_entry_points()

    def _load_entry_points(self) -> None:
        only = _env_list("CHAKRA_LOAD_PLUGINS")
        disabled = _env_list("CHAKRA_DISABLE_PLUGINS") or set()
        eps = sorted(md.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
        known = {e.name for e in eps} | {e.dist.name for e in eps if e.dist}
        for var, names in (("CHAKRA_LOAD_PLUGINS", only or set()), ("CHAKRA_DISABLE_PLUGINS", disabled)):
            unknown = sorted(names - known)
            if unknown:
                warnings.warn(f"{var} names no installed plugin: {', '.join(unknown)}", PluginWarning, stacklevel=3)
        for ep in eps:
            dist = ep.dist.name if ep.dist else "?"
            version = ep.dist.version if ep.dist else "?"
            if only is not None and ep.name not in only and dist not in only:
                continue
            if ep.name in disabled or dist in disabled:
                continue
            info = PluginInfo(ep.name, dist, version, ep.value)
            try:
                obj = ep.load()
            except Exception as e:  # noqa: BLE001 - isolate any failure of third-party code
                self._fail(info, e, "import")
                continue
            self._add(obj, info)

    def add_plugin(self, obj: Any, name: str, distribution: str = "<in-process>", version: str = "0") -> PluginInfo:
        """Register a plugin object (a module or an instance with hookimpls) at run time."""
        info = PluginInfo(name, distribution, version, getattr(obj, "__name__", type(obj).__name__))
        self._add(obj, info)
        return info

    def remove_plugin(self, name: str) -> None:
        """Unregister the plugin added as ``name`` and forget what it registered."""
        for info in list(self.plugins):
            if info.name == name:
                self.pm.unregister(name=name)
                self.plugins.remove(info)
                for kind, names in info.registered.items():
                    self.registry.forget(kind, names)

    def _add(self, obj: Any, info: PluginInfo) -> None:
        try:
            self.pm.register(obj, name=info.name)
        except Exception as e:  # noqa: BLE001
            self._fail(info, e, "register")
            return
        self.plugins.append(info)
        for kind, hook in KINDS.items():
            impls = [i for i in getattr(self.pm.hook, hook).get_hookimpls() if i.plugin is obj]
            for impl in impls:
                names: list[str] = []
                cb = self.registry.register_callback(kind, info.distribution)

                def register(name, factory, description="", install_hint=None, _cb=cb, _names=names, _kind=kind):
                    if self.trace:
                        sys.stderr.write(f"chakra-trace: {info.name} registers {_kind} {name!r}\n")
                    _cb(name, factory, description=description, install_hint=install_hint)
                    _names.append(name)

                try:
                    impl.function(register=register)
                except Exception as e:  # noqa: BLE001
                    self.registry.forget(kind, names)
                    self._fail(info, e, f"{hook}")
                    self.pm.unregister(obj)
                    for k, ns in info.registered.items():
                        self.registry.forget(k, ns)
                    info.registered = {}
                    return
                if names:
                    info.registered.setdefault(kind, []).extend(names)

    def _fail(self, info: PluginInfo, exc: BaseException, stage: str) -> None:
        info.error = f"{type(exc).__name__}: {exc}"
        if info not in self.plugins:
            self.plugins.append(info)
        if self.strict:
            raise PluginError(
                f"plugin {info.name!r} ({info.distribution} {info.version}) failed in {stage}: {info.error}"
            ) from exc
        warnings.warn(
            f"plugin {info.name!r} ({info.distribution} {info.version}) failed in {stage} and was "
            f"skipped: {info.error}",
            PluginWarning,
            stacklevel=2,
        )

    @property
    def failed(self) -> list[PluginInfo]:
        """Plugins that failed to load."""
        return [p for p in self.plugins if p.error]

    def _call_each(self, hook: str, firstresult: bool = False, **kwargs: Any) -> Any:
        """Call every implementation of ``hook`` in pluggy's order, isolating failures.

        A plugin whose hook raises gives one warning naming it (an error in strict mode) and
        the others still run.  With ``firstresult`` the first non-None answer is returned.
        """
        caller = getattr(self.pm.hook, hook)
        for impl in reversed(caller.get_hookimpls()):
            try:
                if self.trace:
                    sys.stderr.write(f"chakra-trace: {hook} -> {impl.plugin_name}\n")
                result = impl.function(*[kwargs[a] for a in impl.argnames])
            except Exception as e:  # noqa: BLE001 - isolate third-party code
                name = impl.plugin_name
                dist = next((p.distribution for p in self.plugins if p.name == name), "?")
                msg = f"plugin {name!r} ({dist}) failed in {hook}: {type(e).__name__}: {e}"
                if self.strict:
                    raise PluginError(msg) from e
                warnings.warn(msg + "; ignored", PluginWarning, stacklevel=2)
                continue
            if firstresult and result is not None:
                return result
        return None

    def detect_format(self, paths: list[str]) -> str | None:
        """Ask the plugins which input format ``paths`` are in (first answer wins)."""
        return self._call_each("chakra_detect_format", firstresult=True, paths=list(paths))

    def notify(self, hook: str, **kwargs: Any) -> None:
        """Call an observer hook (``chakra_stage_started``/``_finished``) on every plugin."""
        self._call_each(hook, **kwargs)


_HOST: PluginHost | None = None


def get_host(strict: bool | None = None) -> PluginHost:
    """The process-wide :class:`PluginHost`, created on first use."""
    global _HOST
    if _HOST is None or (strict is not None and strict != _HOST.strict):
        _HOST = PluginHost(strict=strict)
    return _HOST


def reset_host() -> None:
    """Forget the loaded plugins (the next :func:`get_host` loads them again)."""
    global _HOST
    _HOST = None
