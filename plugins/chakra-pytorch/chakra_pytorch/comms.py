"""Communication ops of PyTorch traces: which collective, how many bytes, which peers and group.

Two forms are understood:

* gloo (CPU) and any backend: the ``c10d::<op>`` dispatcher node.  Its tensor operands are in its
  ``inputs``; output buffers appear there too, so the operand that gives the size is chosen per
  op (see ``_C10D``).  ``send``/``recv_`` carry the peer (a rank of the group) and the tag.
* NCCL: a ``record_param_comms`` node (usually the child of the ``c10d::`` op) whose attributes
  give ``collective_name``, ``in_msg_nelems``/``out_msg_nelems``, ``dtype``, ``pg_name``,
  ``pg_size``, ``global_rank_start``/``global_rank_stride``; they override what the c10d node says.

Sizes are bytes with the Chakra meaning: the whole buffer for all-reduce, broadcast, reduce,
reduce-scatter (the full input) and all-to-all (the whole send buffer); the per-rank shard for
all-gather and gather (what each rank contributes) and scatter (what each rank receives); the
message for send/recv; 0 for barrier.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from chakra_core import CommType, NodeType

from .ints import MAX_RANKS

__all__ = ["CommInfo", "comm_from_c10d", "comm_from_param_comms", "merge_param_comms",
           "kind_of_kernel", "DTYPE_BYTES", "tensors_in"]

#: element size in bytes of PyTorch dtype names as they appear in traces.
DTYPE_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
    "bfloat16": 2, "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2,
    "byte": 1, "uint8": 1, "char": 1, "int8": 1, "bool": 1, "complexfloat": 8,
    "complexdouble": 16, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1, "uint16": 2, "uint32": 4, "uint64": 8,
}

# c10d op -> (kind, index of the operand that gives comm_size); kind "send"/"recv" are p2p.
_C10D: dict[str, tuple[str, int | None]] = {
    "allreduce_": ("all_reduce", 0),
    "allreduce_coalesced_": ("all_reduce", 0),
    "broadcast_": ("broadcast", 0),
    "allgather_": ("all_gather", 1),
    "_allgather_base_": ("all_gather", 1),
    "allgather_into_tensor_coalesced_": ("all_gather", 1),
    "allgather_coalesced_": ("all_gather", 1),
    "reduce_scatter_": ("reduce_scatter", 1),
    "_reduce_scatter_base_": ("reduce_scatter", 1),
    "reduce_scatter_tensor_coalesced_": ("reduce_scatter", 1),
    "alltoall_": ("all_to_all", 1),
    "alltoall_base_": ("all_to_all", 1),
    "reduce_": ("reduce", 0),
    "gather_": ("gather", 1),
    "scatter_": ("scatter", 0),
    "barrier": ("barrier", None),
    "monitored_barrier_": ("barrier", None),
    "send": ("send", 0),
    "recv_": ("recv", 0),
    "recv_any_source_": ("recv", 0),
}

# record_param_comms collective_name -> kind (NCCL and others)
_PARAM_NAMES = {
    "allreduce": "all_reduce", "all_reduce": "all_reduce", "allreduce_coalesced": "all_reduce",
    "broadcast": "broadcast", "allgather": "all_gather", "all_gather": "all_gather",
    "_allgather_base": "all_gather", "allgather_into_tensor_coalesced": "all_gather",
    "allgather_coalesced": "all_gather", "all_gather_into_tensor": "all_gather",
    "reduce_scatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
    "all_to_all": "all_to_all", "all_to_allv": "all_to_all", "alltoall": "all_to_all",
    "alltoall_base": "all_to_all", "all_to_all_single": "all_to_all", "reduce": "reduce",
    "gather": "gather", "scatter": "scatter", "barrier": "barrier", "send": "send",
    "recv": "recv",
}

#: the largest size in bytes (``comm_size`` is an int64 attribute)
_MAX_BYTES = (1 << 63) - 1

#: kind -> CommType for collectives
COLL_TYPES = {
    "all_reduce": CommType.ALL_REDUCE, "reduce": CommType.REDUCE, "all_gather": CommType.ALL_GATHER,
    "gather": CommType.GATHER, "scatter": CommType.SCATTER, "broadcast": CommType.BROADCAST,
    "all_to_all": CommType.ALL_TO_ALL, "reduce_scatter": CommType.REDUCE_SCATTER,
    "barrier": CommType.BARRIER,
}

# ncclDevKernel_/ncclKernel_ name fragment -> kind
_KERNEL_KINDS = (
    ("AllReduce", "all_reduce"), ("ReduceScatter", "reduce_scatter"), ("AllGather", "all_gather"),
    ("Broadcast", "broadcast"), ("Reduce", "reduce"), ("SendRecv", "sendrecv"),
    ("Send", "send"), ("Recv", "recv"), ("AllToAll", "all_to_all"),
)


@dataclass
class CommInfo:
    """What one communication op does: ``kind``, bytes, peers, group and whether it blocks."""

    kind: str
    size_bytes: int = 0
    peer: int | None = None  # group rank of the peer (send: dst, recv: src)
    tag: int = 0
    root: int | None = None
    pg_name: str | None = None
    pg_size: int | None = None
    rank_start: int | None = None
    rank_stride: int | None = None
    async_op: bool | None = None
    worker_rfs: list[int] = field(default_factory=list)
    tensor_ids: frozenset = frozenset()  # (tensor id, storage id) of its operands

    @property
    def node_type(self) -> int:
        """The Chakra node type: COMM_SEND_NODE, COMM_RECV_NODE or COMM_COLL_NODE."""
        if self.kind == "send":
            return NodeType.COMM_SEND_NODE
        if self.kind == "recv":
            return NodeType.COMM_RECV_NODE
        return NodeType.COMM_COLL_NODE

    def group_ranks(self) -> range | None:
        """Global ranks of the group as ``record_param_comms`` describes it (start, stride, size)."""
        stride = self.rank_stride or 1
        if self.rank_start is None or not self.pg_size or self.rank_start < 0 or stride < 0:
            return None
        if self.rank_start + stride * (self.pg_size - 1) > MAX_RANKS:
            return None
        return range(self.rank_start, self.rank_start + stride * self.pg_size, stride)

    @property
    def comm_type(self) -> int | None:
        """The CollectiveCommType value, None for point-to-point."""
        ct = COLL_TYPES.get(self.kind)
        return None if ct is None else int(ct)


def tensors_in(value: Any):
    """Yield the tensor tuples ``[id, storage, offset, numel, elem_bytes, device]`` in a value
    (six items, an integer id first and a device string last)."""
    if isinstance(value, list):
        if len(value) == 6 and isinstance(value[0], int) and isinstance(value[5], str):
            yield value
        else:
            for v in value:
                yield from tensors_in(v)


def _bytes(value: Any) -> int:
    """The bytes of the tensors in ``value``; ValueError when a tensor's numel or element size
    is not an integer."""
    total = 0
    for t in tensors_in(value):
        if _int(t[3]) is None or _int(t[4]) is None:
            raise ValueError(f"tensor {t[0]}: numel {t[3]!r} and element size {t[4]!r} must be integers")
        total += t[3] * t[4]
    return total


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def comm_from_c10d(name: str, values: list) -> CommInfo | None:
    """The communication of a ``c10d::<op>`` node from its input ``values``; None if unknown.

    Raises ValueError when a peer or root is not a rank or a tag does not fit its int32 slot.
    """
    op = name[len("c10d::"):]
    spec = _C10D.get(op)
    if spec is None:
        return None
    kind, operand = spec
    size = _bytes(values[operand]) if operand is not None and operand < len(values) else 0
    info = CommInfo(kind, size)
    info.tensor_ids = frozenset((t[0], t[1]) for t in tensors_in(values))
    if op == "recv_any_source_":
        # (tensors, pg, tag): the source is whoever sends; the trace does not say
        if len(values) > 2 and _int(values[2]) is not None:
            info.tag = values[2]
    elif kind in ("send", "recv"):
        # (tensors, pg, peer, tag)
        if len(values) > 2:
            info.peer = _int(values[2])
        if len(values) > 3 and _int(values[3]) is not None:
            info.tag = values[3]
    else:
        bools = [v for v in values if isinstance(v, bool)]
        if bools:
            info.async_op = bools[-1]
        if kind in ("broadcast", "reduce"):
            # (tensors, pg, [op,] root_rank, root_tensor, asyncOp, timeout)
            ints = [v for v in values[1:] if _int(v) is not None]
            if ints:
                info.root = ints[0]
        elif kind in ("gather", "scatter"):
            ints = [v for v in values[2:] if _int(v) is not None]
            if ints:
                info.root = ints[0]
    for what, v, low, high in (("peer rank", info.peer, 0, MAX_RANKS), ("root rank", info.root, 0, MAX_RANKS),
                               ("tag", info.tag, -(1 << 31), (1 << 31) - 1),
                               ("size in bytes", info.size_bytes, 0, _MAX_BYTES)):
        if v is not None and not low <= v <= high:
            raise ValueError(f"{what} {v} is out of range ({low}..{high})")
    return info


def _nelems(attrs: dict, key: str) -> int:
    """The element count under ``key`` (0 when absent); ValueError when it is not a count."""
    v = attrs.get(key, 0)
    if _int(v) is None:
        raise ValueError(f"{key} {json.dumps(v, default=str)} is not a count of elements")
    return v


def _dtype_bytes(dtype: Any) -> int | None:
    if not isinstance(dtype, str):
        return None
    return DTYPE_BYTES.get(dtype.lower().replace("torch.", "").replace(" ", ""))


def comm_from_param_comms(attrs: dict, values: list, outputs: list | None = None) -> CommInfo | None:
    """The communication described by a ``record_param_comms`` node (attributes, input values
    and, optionally, output values); ValueError when its size does not fit ``comm_size``.

    Older traces carry no ``collective_name``/``*_msg_nelems`` attributes: then the collective
    name is the string among the inputs that names one, and the size comes from the input tensor
    list (``values[0]``); for scatter and recv from the output list, which PyTorch 2.1+ records
    as ``values[1]`` and earlier versions as the node's outputs (``values[1]`` is then the
    sequence number).  The group is the ``pg_name`` attribute, else the ``(pg_name, pg_desc)``
    pair among the inputs (``Tuple[String,String]``, PyTorch 2.1+).
    """
    kind = _PARAM_NAMES.get(str(attrs.get("collective_name", "")).lower())
    if kind is None and "collective_name" not in attrs:
        kind = next((_PARAM_NAMES[v.lower()] for v in values
                     if isinstance(v, str) and v.lower() in _PARAM_NAMES), None)
    if kind is None:
        return None
    operand = 1 if kind in ("scatter", "recv") else 0
    if "in_msg_nelems" in attrs or "out_msg_nelems" in attrs:
        esize = _dtype_bytes(attrs.get("dtype"))
        if esize is None:
            ts = list(tensors_in(values))
            esize = int(ts[0][4]) if ts else 1
        size = _nelems(attrs, "out_msg_nelems" if operand else "in_msg_nelems") * esize
    else:
        size = _bytes(values[operand]) if operand < len(values) else 0
        if operand and not size and outputs:
            size = _bytes(outputs)
    if not 0 <= size <= _MAX_BYTES:
        raise ValueError(f"size in bytes {size} is out of range (0..{_MAX_BYTES})")
    info = CommInfo(kind, 0 if kind == "barrier" else size)
    pg = attrs.get("pg_name")
    if pg is None or pg == "":
        pg = next((v[0] for v in values if isinstance(v, list) and len(v) == 2
                   and all(isinstance(x, str) for x in v)), None)
    if pg is not None and pg != "":
        info.pg_name = str(pg)
    info.pg_size = _int(attrs.get("pg_size"))
    info.rank_start = _int(attrs.get("global_rank_start"))
    info.rank_stride = _int(attrs.get("global_rank_stride"))
    return info


def merge_param_comms(base: CommInfo, extra: CommInfo) -> None:
    """Refine a c10d op's info with its ``record_param_comms`` child (sizes, group)."""
    if extra.kind == base.kind or base.kind in ("send", "recv"):
        if extra.size_bytes or base.kind == "barrier":
            base.size_bytes = extra.size_bytes
    for f in ("pg_name", "pg_size", "rank_start", "rank_stride"):
        if getattr(extra, f) is not None:
            setattr(base, f, getattr(extra, f))


def kind_of_kernel(name: str) -> str | None:
    """Collective kind of an NCCL kernel name (``ncclDevKernel_AllReduce_Sum_f32_RING_LL``)."""
    if not name.startswith(("ncclDevKernel_", "ncclKernel_")):
        return None
    for frag, kind in _KERNEL_KINDS:
        if frag in name:
            return kind
    return "unknown"
