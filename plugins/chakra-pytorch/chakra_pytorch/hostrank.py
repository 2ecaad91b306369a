"""The rank a host execution trace records of itself, read from its first ``record_param_comms``
that records its caller.

PyTorch's ``record_param_comms`` node (every c10d collective and point-to-point op since 1.13)
lists, before the collective's name, the calling rank *in the op's process group*, and after it
the split sizes, (since 2.1) the group's first global rank and stride, and the group size.  The
global rank is ``start + rank * stride`` (the rank itself when the start and stride are not
recorded and the group is the default one).  The group size is the world size only for the
default group (``pg_name`` ``"0"``).

Not every op records the caller there: ProcessGroupNCCL writes the root rank (``opts.rootRank``)
for ``broadcast``, ``_broadcast_oop``, ``reduce``, ``_reduce_oop``, ``gather`` and ``scatter``, the
peer for ``send`` and ``recv``, and a ``wait`` records no group; such nodes are passed over (DDP
starts with a broadcast from rank 0, which every rank would otherwise read as its own rank).
"""

from __future__ import annotations

from dataclasses import dataclass

from .comms import _PARAM_NAMES
from .hostet import _attrs, _io, iter_raw_nodes
from .ints import is_rank
from .needles import PARAM_COMMS, holds

__all__ = ["TraceRank", "scan_rank"]

@dataclass(frozen=True)
class TraceRank:
    """A rank recorded in a trace: the global rank, the world size when the trace says it, and
    where it was read (for messages)."""

    rank: int
    world: int | None
    source: str


#: ``record_param_comms`` names whose rank slot is not the caller's (see the module docstring)
_NOT_CALLER = frozenset({"broadcast", "_broadcast_oop", "reduce", "_reduce_oop", "gather", "scatter",
                         "send", "recv", "wait"})


def scan_rank(path: str) -> TraceRank | None:
    """The global rank (and world size) the first ``record_param_comms`` node of the host ET
    ``path`` that records its caller's rank says (rooted collectives, point-to-point ops and
    waits are passed over), None when there is none or it does not say (the bytes are searched
    for the name first; only then are nodes parsed, up to that node)."""
    if not holds(path, PARAM_COMMS):
        return None
    for index, node in enumerate(iter_raw_nodes(path)):
        if isinstance(node, dict) and node.get("name") == "record_param_comms":
            values = _io(node, path, index)[0]
            k = _name_slot(values)
            if k < 0 or str(values[k]).lower() not in _NOT_CALLER:
                return _rank_of(node, values, k, path, index)
    return None


def _name_slot(values: list) -> int:
    """The index of the collective's name among a ``record_param_comms`` node's inputs, -1 when
    none is there."""
    return next((i for i, v in enumerate(values)
                 if isinstance(v, str) and (v.lower() in _PARAM_NAMES or v.lower() in _NOT_CALLER)), -1)


def _rank_of(node: dict, values: list, k: int, path: str, index: int) -> TraceRank | None:
    """The global rank and world size that ``node`` (inputs ``values``, its collective's name at
    ``k``) records of its caller, None when it does not say."""
    if k < 1 or not is_rank(values[k - 1]):
        return None
    rank = values[k - 1]
    attrs = _attrs(node, path, index)
    tail = values[k + 1:]
    start, stride = attrs.get("global_rank_start"), attrs.get("global_rank_stride")
    if start is None and len(tail) == 5:
        start, stride = tail[2], tail[3]
    size = attrs.get("pg_size", tail[-1] if tail else None)
    pg = attrs.get("pg_name")
    if pg is None and isinstance(values[k - 2], list) and values[k - 2]:
        pg = values[k - 2][0]
    default = pg in (None, "0", 0)
    if is_rank(start) and is_rank(stride, 1):
        rank = start + rank * stride
    elif not default:
        return None
    world = size if default and is_rank(size, 1) else None
    if not is_rank(rank):
        return None
    return TraceRank(rank, world, f"record_param_comms node {node.get('id')}")
