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

import functools
import importlib
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from chakra_core import hookspecs
from chakra_core.base._errors import PluginError
from chakra_core.host._entrypoints import FoundEntryPoint, env_flag, installed_entry_points
from chakra_core.host._guard import describe, guarded, slow_watch
from chakra_core.host._registry import KINDS, Registry

__all__ = [
    "PluginHost", "PluginInfo", "get_host", "reset_host", "PluginWarning", "DEFAULT_PLUGINS", "ENTRY_POINT_GROUP",
]

ENTRY_POINT_GROUP = "chakra"
#: the core's own features, registered through the same hooks as any third party.
DEFAULT_PLUGINS = (
    "chakra_core.builtin.formats",
    "chakra_core.builtin.backends",
    "chakra_core.builtin.transforms",
    "chakra_core.builtin.executors",
)
CORE_DIST = "chakra-core"
_REGISTRATION_HOOKS = frozenset(KINDS.values())


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

    @property
    def key(self) -> str:
        """``distribution:name``, the plugin's name in the pluggy manager (unique)."""
        return f"{self.distribution}:{self.name}"

    @property
    def label(self) -> str:
        """``plugin 'name' (distribution version)`` for messages."""
        return f"plugin {self.name!r} ({self.distribution} {self.version})"

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


class _GuardedPlugin:
    """The object pluggy registers for a plugin: its hook implementations as attributes."""

    def __init__(self, impls: dict[str, Any]):
        self.__dict__.update(impls)

    def __dir__(self) -> list[str]:
        """The hook implementations alone: pluggy looks at every name ``dir`` gives when it
        registers a plugin, and an object's own methods are none."""
        return list(self.__dict__)


class PluginHost:
    """The pluggy manager, the registry and the list of plugins, loaded once per process.

    Every hook is called through pluggy, so ordering, ``tryfirst``/``trylast`` and wrappers work
    as pluggy documents.  A plugin's registration hooks are called through a pluggy subset
    caller holding that plugin alone, when it is loaded, so that a failure is its own.  The
    other hooks are called on all plugins at once; each implementation runs isolated: a failure
    is a warning naming the plugin (a :class:`PluginError` in strict mode) and the others run.
    """

    def __init__(self, strict: bool | None = None, entry_points: bool = True):
        self.strict = env_flag("CHAKRA_STRICT_PLUGINS") if strict is None else strict
        self.trace = env_flag("CHAKRA_TRACE_PLUGINS")
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.registry = Registry()
        self.plugins: list[PluginInfo] = []
        self._answered_by: PluginInfo | None = None
        self._objects: dict[str, Any] = {}  # plugin key -> the object it was registered as
        if self.trace:
            self.pm.trace.root.setwriter(lambda s: sys.stderr.write("chakra-trace: " + s))
            self.pm.enable_tracing()
        eps, version = installed_entry_points(ENTRY_POINT_GROUP, CORE_DIST)
        for modname in DEFAULT_PLUGINS:
            info = PluginInfo(modname.rsplit(".", 1)[-1], CORE_DIST, version or "0+unknown", modname)
            self._add(importlib.import_module(modname), info)
        if entry_points:
            self._load_entry_points(eps)

    def _load_entry_points(self, eps: list[FoundEntryPoint]) -> None:
        only = _env_list("CHAKRA_LOAD_PLUGINS")
        disabled = _env_list("CHAKRA_DISABLE_PLUGINS") or set()
        known = {ep.name for ep in eps} | {ep.distribution for ep in eps if ep.has_distribution}
        for var, names in (("CHAKRA_LOAD_PLUGINS", only or set()), ("CHAKRA_DISABLE_PLUGINS", disabled)):
            unknown = sorted(names - known)
            if unknown:
                warnings.warn(f"{var} names no installed plugin: {', '.join(unknown)}", PluginWarning, stacklevel=3)
        for ep in eps:
            dist = ep.distribution
            if only is not None and ep.name not in only and dist not in only:
                continue
            if ep.name in disabled or dist in disabled:
                continue
            self._load(ep, PluginInfo(ep.name, dist, ep.version, ep.value))

    def _load(self, ep: FoundEntryPoint, info: PluginInfo) -> None:
        """Import one entry point and register it, guarded and watched for slowness."""
        with slow_watch(info.label):
            try:
                with guarded(info.label, "import"):
                    obj = ep.load()
            except Exception as e:  # noqa: BLE001 - isolate any failure of third-party code
                self._fail(info, e, "import")
                return
            self._add(obj, info)

    def add_plugin(self, obj: Any, name: str, distribution: str = "<in-process>", version: str = "0") -> PluginInfo:
        """Register a plugin object (a module or an instance with hookimpls) at run time.

        Raises :class:`PluginError` when ``obj`` or ``name`` is already registered.
        """
        info = PluginInfo(name, distribution, version, getattr(obj, "__name__", type(obj).__name__))
        owner = self.plugin_info(obj)
        if owner is not None or self.pm.get_plugin(info.key) is not None:
            owner = owner or self._info(info.key)
            what = "this object is already registered as" if owner.key != info.key else "the name is taken by"
            raise PluginError(f"cannot add {info.label}: {what} {owner.label}; remove_plugin({owner.name!r}) first")
        self._add(obj, info)
        return info

    def remove_plugin(self, name: str) -> None:
        """Unregister the plugin added as ``name`` (or ``distribution:name``); forget what it registered."""
        for info in list(self.plugins):
            if name in (info.name, info.key):
                self._unregister(info)
                self.plugins.remove(info)
                self._forget(info)

    def plugin_info(self, obj: Any) -> PluginInfo | None:
        """The :class:`PluginInfo` of a registered plugin object, or None."""
        return next((p for p in self.plugins if self._objects.get(p.key) is obj), None)

    def _unregister(self, info: PluginInfo) -> None:
        if self.pm.get_plugin(info.key) is not None:
            self.pm.unregister(name=info.key)
        self._objects.pop(info.key, None)

    def _info(self, key: str) -> PluginInfo:
        return next(p for p in self.plugins if p.key == key)

    def _forget(self, info: PluginInfo) -> None:
        for kind, names in info.registered.items():
            self.registry.forget(kind, names, info.distribution)
        info.registered = {}

    def _add(self, obj: Any, info: PluginInfo) -> None:
        owner = self.plugin_info(obj)
        if owner is not None:  # e.g. two entry points naming one module
            self._fail(info, PluginError(f"its object is already registered as {owner.label}"), "register")
            return
        proxy = self._guarded_plugin(obj, info)
        try:
            self.pm.register(proxy, name=info.key)
        except Exception as e:  # noqa: BLE001 - pluggy refuses a malformed hookimpl
            self._fail(info, e, "register")
            return
        self._objects[info.key] = obj
        self.plugins.append(info)
        for kind, hook in KINDS.items():
            names: list[str] = []
            try:
                self._register(proxy, info, kind, hook, names)
            except Exception as e:  # noqa: BLE001
                info.registered.setdefault(kind, []).extend(names)
                self._forget(info)
                self._unregister(info)
                self._fail(info, e, hook)
                return
            if names:
                info.registered.setdefault(kind, []).extend(names)

    def _register(self, proxy: Any, info: PluginInfo, kind: str, hook: str, names: list[str]) -> None:
        """Call one plugin's implementations of registration ``hook`` through a pluggy subset caller."""
        others = [p for p in self.pm.get_plugins() if p is not proxy]
        caller = self.pm.subset_hook_caller(hook, remove_plugins=others)
        if not caller.get_hookimpls():
            return
        cb = self.registry.register_callback(kind, info.distribution, info.version, info.name)

        def register(name: str, factory: Any, description: str = "", install_hint: str | None = None) -> None:
            if self.trace:
                sys.stderr.write(f"chakra-trace: {info.name} registers {kind} {name!r}\n")
            cb(name, factory, description=description, install_hint=install_hint)
            names.append(name)

        with guarded(info.label, hook):
            caller(register=register)

    def _guarded_plugin(self, obj: Any, info: PluginInfo) -> _GuardedPlugin:
        """What pluggy registers for ``obj``: its hook implementations, with their markers, each
        plain implementation of a called (not registration) hook made to fail alone."""
        impls: dict[str, Any] = {}
        for attr in dir(obj):
            opts = self.pm.parse_hookimpl_opts(obj, attr)
            if opts is None:
                continue
            fn = getattr(obj, attr)
            hook = opts.get("specname") or attr
            plain = not (opts.get("wrapper") or opts.get("hookwrapper"))
            impls[attr] = self._isolated(fn, info, hook) if plain and hook not in _REGISTRATION_HOOKS else fn
        return _GuardedPlugin(impls)

    def _isolated(self, fn: Callable[..., Any], info: PluginInfo, hook: str) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            if self.trace:
                sys.stderr.write(f"chakra-trace: {hook} -> {info.name}\n")
            try:
                with guarded(info.label, hook):
                    result = fn(*args)
            except Exception as e:  # noqa: BLE001 - isolate third-party code
                self._hook_failed(info, hook, e)
                return None
            if result is not None:
                self._answered_by = info
            return result

        return functools.wraps(fn)(call)  # keeps the hookimpl marker and the signature pluggy reads

    def _hook_failed(self, info: PluginInfo | None, hook: str, exc: Exception) -> None:
        who = info.label if info else "a plugin's hook wrapper"
        msg = f"{who} failed in {hook}: {describe(exc)}"
        if self.strict:
            raise PluginError(msg) from exc
        warnings.warn(msg + "; ignored", PluginWarning, stacklevel=3)

    def _call(self, hook: str, **kwargs: Any) -> Any:
        """Call ``hook`` through pluggy; a failing wrapper (not isolated itself) is reported."""
        try:
            return getattr(self.pm.hook, hook)(**kwargs)
        except PluginError:
            raise
        except Exception as e:  # noqa: BLE001 - raised by a hook wrapper
            self._hook_failed(self._blame(hook, e), hook, e)
            return None

    def _blame(self, hook: str, exc: BaseException) -> PluginInfo | None:
        """The plugin whose wrapper of ``hook`` raised ``exc`` (the deepest frame of one)."""
        codes = {getattr(i.function, "__code__", None): i.plugin_name
                 for i in getattr(self.pm.hook, hook).get_hookimpls()}
        name, tb = None, exc.__traceback__
        while tb is not None:
            name = codes.get(tb.tb_frame.f_code, name)
            tb = tb.tb_next
        return self._info(name) if name else None

    def _fail(self, info: PluginInfo, exc: BaseException, stage: str) -> None:
        info.error = describe(exc)
        if info not in self.plugins:
            self.plugins.append(info)
        if self.strict:
            raise PluginError(f"{info.label} failed in {stage}: {info.error}") from exc
        warnings.warn(f"{info.label} failed in {stage} and was skipped: {info.error}", PluginWarning, stacklevel=2)

    @property
    def failed(self) -> list[PluginInfo]:
        """Plugins that failed to load."""
        return [p for p in self.plugins if p.error]

    def detect_format(self, paths: list[str]) -> str | None:
        """Ask the plugins which input format ``paths`` are in (the first answer wins).

        A bare answer that several distributions register is qualified with the distribution
        of the plugin that answered, when it registers that name.
        """
        self._answered_by = None
        name = self._call("chakra_detect_format", paths=list(paths))
        who = self._answered_by
        if isinstance(name, str) and who is not None and ":" not in name:
            if any(e.distribution == who.distribution for e in self.registry.clashes("format", name)):
                return f"{who.distribution}:{name}"
        return name

    def notify(self, hook: str, **kwargs: Any) -> None:
        """Call an observer hook (``chakra_stage_started``/``_finished``) on every plugin."""
        self._call(hook, **kwargs)


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
