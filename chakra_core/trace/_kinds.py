"""What each node of a rank is to a replay, and what it occupies while it runs.

The one rule the simulator and the emulator share, over a rank's :class:`NodeColumns` at once.
A node's kind follows its type; its resource follows its kind and ``is_cpu_op`` (read as
:func:`get_bool` reads it, absent: False):

=========== ====================================== ============= ==============
kind        node types                             is_cpu_op     otherwise
=========== ====================================== ============= ==============
COMPUTE     ``COMP_NODE``                          CPU           COMPUTE
MEMORY      ``MEM_LOAD_NODE``, ``MEM_STORE_NODE``  CPU           COMM
COLLECTIVE  ``COMM_COLL_NODE``                     COMM          COMM
SEND        ``COMM_SEND_NODE``                     COMM          COMM
RECV        ``COMM_RECV_NODE``                     NONE          NONE
OTHER       any other (metadata, invalid, unknown) NONE          NONE
=========== ====================================== ============= ==============

CPU is the host thread, COMPUTE the accelerator's compute streams, COMM its communication (and
copy) streams; a receive holds none: it waits for its message.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from chakra_core.io._schema import NodeType
from chakra_core.trace._columns import NodeColumns

__all__ = ["NodeKind", "NodeResource", "NodeClasses", "classify_nodes"]


class NodeKind(IntEnum):
    """What a node is to a replay (the values of :attr:`NodeClasses.kind`)."""

    COMPUTE = 0
    MEMORY = 1
    COLLECTIVE = 2
    SEND = 3
    RECV = 4
    OTHER = 5


class NodeResource(IntEnum):
    """What a node occupies while it runs (the values of :attr:`NodeClasses.resource`)."""

    CPU = 0
    COMPUTE = 1
    COMM = 2
    NONE = 3


#: per NodeType value, its kind
_KIND_OF_TYPE = np.full(max(NodeType) + 1, NodeKind.OTHER, np.uint8)
_KIND_OF_TYPE[NodeType.COMP_NODE] = NodeKind.COMPUTE
_KIND_OF_TYPE[[NodeType.MEM_LOAD_NODE, NodeType.MEM_STORE_NODE]] = NodeKind.MEMORY
_KIND_OF_TYPE[NodeType.COMM_COLL_NODE] = NodeKind.COLLECTIVE
_KIND_OF_TYPE[NodeType.COMM_SEND_NODE] = NodeKind.SEND
_KIND_OF_TYPE[NodeType.COMM_RECV_NODE] = NodeKind.RECV
#: per kind, its resource: [0] for an accelerator node, [1] for a CPU node (``is_cpu_op``)
_RESOURCE_OF_KIND = np.array([
    [NodeResource.COMPUTE, NodeResource.COMM, NodeResource.COMM, NodeResource.COMM, NodeResource.NONE,
     NodeResource.NONE],
    [NodeResource.CPU, NodeResource.CPU, NodeResource.COMM, NodeResource.COMM, NodeResource.NONE,
     NodeResource.NONE],
], np.uint8)


class NodeClasses:
    """Per node of a rank (file order, as its :class:`NodeColumns`): ``kind`` (uint8,
    :class:`NodeKind` values), ``resource`` (uint8, :class:`NodeResource` values) and ``is_cpu``
    (bool: its ``is_cpu_op``)."""

    def __init__(self, kind: np.ndarray, resource: np.ndarray, is_cpu: np.ndarray):
        self.kind = kind
        self.resource = resource
        self.is_cpu = is_cpu

    def __len__(self) -> int:
        return len(self.kind)


def classify_nodes(cols: NodeColumns) -> NodeClasses:
    """The kind and resource of every node of ``cols`` (by the rule of the module docstring);
    ``cols`` must hold the ``is_cpu_op`` column (``node_columns(rank, ["is_cpu_op", ...])``),
    else a ValueError."""
    if "is_cpu_op" not in cols.attrs:
        raise ValueError("classify_nodes reads the is_cpu_op column: ask node_columns for it")
    types = cols.types
    known = (types >= 0) & (types < len(_KIND_OF_TYPE))
    kind = np.where(known, _KIND_OF_TYPE[np.where(known, types, 0)], np.uint8(NodeKind.OTHER)).astype(np.uint8)
    is_cpu = _is_cpu(cols)
    resource = _RESOURCE_OF_KIND[is_cpu.astype(np.intp), kind]
    return NodeClasses(kind, resource, is_cpu)


def _is_cpu(cols: NodeColumns) -> np.ndarray:
    """Per node, its ``is_cpu_op`` as :func:`get_bool` reads it (absent: False)."""
    col = cols.attrs["is_cpu_op"]
    out = col.is_int & (col.ints != 0)
    wide = [i for i in col.others if col.get_bool(i)]
    out[wide] = True
    return out
