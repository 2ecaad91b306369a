"""Node selection for transforms: by kind, by name pattern and by rank.

Declared once (:data:`SELECTION_OPTIONS`) and read once (:func:`node_selection`), so that every
what-if transform selects nodes the same way:

- ``kinds``: any of ``compute``, ``communication`` (collectives, sends, receives), ``memory``
  (loads, stores), ``cpu``, ``accelerator``, ``idle``; the first three pick node types, the next
  two pick by the node's ``is_cpu_op``; an empty list (the default) means every node.  An idle
  gap (a COMP node named ``[idle]`` with ``idle`` true: the time between a thread's or a
  device's recorded operations, as the PyTorch and JAX inputs write it) is no compute: only
  ``idle`` selects it;
- ``names``: a regular expression searched in the node's name;
- ``ranks``: rank numbers or ``"a-b"`` ranges (inclusive).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chakra_core.base._errors import ConfigError
from chakra_core.base._options import Option
from chakra_core.io._schema import IDLE_NAME, Node, NodeType
from chakra_core.trace._attrs import get_bool

__all__ = ["SELECTION_OPTIONS", "NODE_KINDS", "node_selection", "parse_ranks"]

#: what ``kinds`` may name
NODE_KINDS = ("compute", "communication", "memory", "cpu", "accelerator", "idle")
_TYPES = {
    "compute": {NodeType.COMP_NODE},
    "communication": {NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE},
    "memory": {NodeType.MEM_LOAD_NODE, NodeType.MEM_STORE_NODE},
}

#: the selection options, to include in a transform's ``options``
SELECTION_OPTIONS = {
    "kinds": Option("list", [], f"node kinds to change ({', '.join(NODE_KINDS)}); empty: all"),
    "names": Option("str", None, "regular expression searched in node names; unset: all"),
    "ranks": Option("list", None, "ranks to change (numbers or 'a-b' ranges); unset: all"),
}


#: the most ranks one ``"a-b"`` range may span (the ranks are held as a set)
MAX_RANK_RANGE = 1 << 24


def parse_ranks(values: Sequence[Any], owner: str) -> set[int]:
    """Rank numbers and ``"a-b"`` ranges as a set (ConfigError naming ``owner`` for anything else)."""
    out: set[int] = set()
    for v in values:
        text = str(v).strip()
        lo, dash, hi = text.partition("-")
        try:
            first, last = (int(lo), int(hi)) if dash else (int(text), int(text))
        except ValueError:
            raise ConfigError(f"{owner}: ranks: {v!r} is not a rank or an 'a-b' range") from None
        if first < 0 or last < first:
            raise ConfigError(f"{owner}: ranks: {v!r} is not a rank or an 'a-b' range")
        if last - first >= MAX_RANK_RANGE:
            raise ConfigError(f"{owner}: ranks: {v!r} spans more than {MAX_RANK_RANGE:,} ranks")
        out.update(range(first, last + 1))
    return out


def node_selection(options: Mapping[str, Any], owner: str,
                   ranks_of_set: Sequence[int] | None = None) -> Callable[[int, Node], bool]:
    """``selected(rank, node)`` for the checked :data:`SELECTION_OPTIONS` in ``options``; with
    ``ranks_of_set`` (the set's ranks), a ``ranks`` option naming a rank not among them is refused
    (ConfigError naming ``owner``), since it would select nothing there."""
    kinds = [str(k) for k in options.get("kinds") or []]
    for k in kinds:
        if k not in NODE_KINDS:
            raise ConfigError(f"{owner}: kinds: {k!r} is not one of {', '.join(NODE_KINDS)}")
    idle = "idle" in kinds
    rest = [k for k in kinds if k != "idle"]
    types = set().union(*(_TYPES[k] for k in rest if k in _TYPES)) or None
    where = {k for k in rest if k in ("cpu", "accelerator")}
    cpu_only = where == {"cpu"}
    accel_only = where == {"accelerator"}
    try:
        pattern = re.compile(options["names"]) if options.get("names") else None
    except re.error as e:
        raise ConfigError(f"{owner}: names: {options['names']!r} is not a regular expression ({e})") from None
    ranks = parse_ranks(options["ranks"], owner) if options.get("ranks") is not None else None
    if ranks is not None and ranks_of_set is not None and not ranks <= set(ranks_of_set):
        missing = min(ranks - set(ranks_of_set))
        raise ConfigError(f"{owner}: rank {missing} is not in the set (ranks {min(ranks_of_set)}..{max(ranks_of_set)})")

    def selected(rank: int, node: Node) -> bool:
        if ranks is not None and rank not in ranks:
            return False
        if node.name == IDLE_NAME and get_bool(node, "idle", False):
            return idle and (pattern is None or pattern.search(node.name) is not None)
        if idle and not rest:
            return False
        if types is not None and node.type not in types:
            return False
        if cpu_only or accel_only:
            cpu = get_bool(node, "is_cpu_op", False) if node.attr else False
            if cpu != cpu_only:
                return False
        return pattern is None or pattern.search(node.name) is not None

    return selected

