"""The hooks a chakra plugin may implement.

A plugin is a module (or object) named by an entry point in the group ``chakra``; it implements
any of these functions, decorated with :data:`chakra_core.hookimpl`.  Registration hooks receive a
``register`` callback and call it once per name they provide::

    register(name, factory, description="...", install_hint="pip install ...")

``factory`` is a zero-argument callable returning the implementation (usually its class) or an
import path ``"package.module:Class"`` that is imported on first use, so that listing plugins
never imports heavy dependencies.  An implementation subclasses the matching base class in
:mod:`chakra_core` (:class:`chakra_core.InputFormat`, :class:`chakra_core.Backend`, ...).

Compatibility policy: hooks are only ever added.  An existing hook never changes its name, its
arguments or their meaning; new arguments are only added to new hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import pluggy

__all__ = ["hookspec", "hookimpl", "PROJECT", "Register"]

PROJECT = "chakra"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class Register(Protocol):
    """The ``register`` callback a registration hook receives."""

    def __call__(self, name: str, factory: Callable[[], Any] | str, description: str = "",
                 install_hint: str | None = None) -> None:
        """Register implementation ``name``: ``factory`` returns it (or is ``"package.module:Attr"``)."""


@hookspec
def chakra_register_formats(register: Register) -> None:
    """Register input formats (subclasses of :class:`chakra_core.InputFormat`).

    :param register: ``register(name, factory, description=, install_hint=)``.
    """


@hookspec
def chakra_register_backends(register: Register) -> None:
    """Register backends: simulators, exporters and emulators (:class:`chakra_core.Backend`).

    :param register: ``register(name, factory, description=, install_hint=)``.
    """


@hookspec
def chakra_register_transforms(register: Register) -> None:
    """Register trace transforms, e.g. what-if scaling (:class:`chakra_core.Transform`).

    :param register: ``register(name, factory, description=, install_hint=)``.
    """


@hookspec
def chakra_register_synthesizers(register: Register) -> None:
    """Register synthesizers that learn from ETs and generate new ones
    (:class:`chakra_core.Synthesizer`).

    :param register: ``register(name, factory, description=, install_hint=)``.
    """


@hookspec
def chakra_register_generators(register: Register) -> None:
    """Register workload generators that build trace sets from a model description, not from
    files (:class:`chakra_core.Generator`).

    :param register: ``register(name, factory, description=, install_hint=)``.
    """


@hookspec
def chakra_register_executors(register: Register) -> None:
    """Register sweep executors that run many points at once: a process pool, a Ray or Dask
    cluster (:class:`chakra_core.Executor`).

    :param register: ``register(name, factory, description=, install_hint=)``.
    """


@hookspec(firstresult=True)
def chakra_detect_format(paths: list[str]) -> str | None:
    """Name the input format of ``paths``, or return None when it is not yours.

    Called in turn on every plugin until one answers; must be cheap (look at names and the
    first bytes only) and must not import heavy dependencies.

    :param paths: the input paths as the user gave them.
    :return: a registered input-format name, or None.
    """


@hookspec
def chakra_stage_started(stage: str, name: str, context: dict[str, Any]) -> None:
    """Observe the start of a pipeline stage.

    :param stage: ``"input"``, ``"transform"`` or ``"backend"``.
    :param name: the registered name of the implementation that runs.
    :param context: the stage's options and, for backends, its output directory.
    """


@hookspec
def chakra_stage_finished(stage: str, name: str, context: dict[str, Any], result: Any,
                          seconds: float) -> None:
    """Observe the end of a pipeline stage.

    :param stage: as for :func:`chakra_stage_started`.
    :param name: the implementation's registered name.
    :param context: as for :func:`chakra_stage_started`.
    :param result: the stage's output (a TraceSet, or a backend's Result).
    :param seconds: wall-clock seconds the stage took.
    """
