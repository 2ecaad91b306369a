"""chakra-astrasim: the ``astrasim`` exporter backend.

Turns any Chakra trace set into a directory ASTRA-sim 2.x runs the first time: workload files
with only the slots it reads, its four configuration files written from the project's system
description with every known pitfall fixed or refused, a ``run.sh``, and a report of all that
was changed.  See docs/astrasim.md.

Public API: :func:`export_astrasim`, :class:`AstraSimExporter`, :data:`RULES` (how each
collective kind ASTRA-sim does not model is rewritten), :data:`BINARIES` (the names of
ASTRA-sim's analytical binaries, ``{"unaware": ..., "aware": ...}``, that ``run.sh`` calls).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chakra_core import lazy_exports

if TYPE_CHECKING:
    from .backend import AstraSimExporter, export_astrasim
    from .collectives import RULES
    from .runscript import BINARIES

__all__ = ["AstraSimExporter", "export_astrasim", "RULES", "BINARIES"]

_WHERE = {"AstraSimExporter": "backend", "export_astrasim": "backend", "RULES": "collectives",
          "BINARIES": "runscript"}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
