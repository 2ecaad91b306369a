"""Communication ops of a Kineto trace read alone: kind, bytes, peer, root, group.

Kineto writes, with ``record_shapes`` on, each op's ``Input Dims``, ``Input type`` and
``Concrete Inputs`` (the scalar arguments as text).  A ``c10d::<op>`` event is turned into the
host ET's input values (a tensor per dims, a number or bool per scalar) and read by the same
rules as a host ET node (:func:`comm_from_c10d`: the operand that gives the size, the peer and
tag of send/recv, the root).  A tensor list is typed ``TensorList``: its element size comes
from the ``gloo:*``/``nccl:*`` annotation that does the op's work, else from another input's
dtype.  A ``record_param_comms`` event (NCCL) carries ``Collective name``, ``In msg nelems``,
``Out msg nelems``, ``dtype``, ``Process Group Name``/``Ranks``, ``Group size`` and ``Global
rank start``/``stride``, read as the host ET's attributes of that node.  A ``gloo:*``/``nccl:*``
annotation with no op in the trace (:func:`annotation_comm`) is read as a collective of its own.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from .comms import _MAX_BYTES, _PARAM_NAMES, DTYPE_BYTES, CommInfo, comm_from_c10d, comm_from_param_comms
from .ints import is_rank

__all__ = ["elem_bytes", "c10d_comm", "param_comm", "annotation_elem_bytes", "annotation_bytes", "work_bytes",
           "group_of", "SIZED_BY_WORK", "annotation_kind", "annotation_comm"]

#: kinds whose work annotation is given the tensors ``comm_size`` counts (a reduce-scatter is
#: sized from its output; a scatter by :func:`work_bytes`)
SIZED_BY_WORK = frozenset({"all_reduce", "broadcast", "reduce", "all_gather", "gather", "all_to_all",
                           "send", "recv"})
#: kinds an annotation gives a whole collective of: sized by its tensors (a barrier by none);
#: a send or receive lacks its peer
_ALONE_KINDS = (SIZED_BY_WORK - {"send", "recv"}) | {"barrier"}

#: C++ type names Kineto writes in ``Input type``, and their sizes in bytes
_CXX_TYPES = {"long int": 8, "long long int": 8, "unsigned char": 1, "signed char": 1, "short int": 2,
              "complex<float>": 8, "complex<double>": 16, "complex<c10::half>": 4, "unsigned short": 2,
              "unsigned int": 4}

#: Kineto argument -> host-ET attribute of ``record_param_comms``
_PARAM_ARGS = {"Collective name": "collective_name", "In msg nelems": "in_msg_nelems",
               "Out msg nelems": "out_msg_nelems", "dtype": "dtype", "Process Group Name": "pg_name",
               "Group size": "pg_size", "Global rank start": "global_rank_start",
               "Global rank stride": "global_rank_stride"}


def elem_bytes(type_name: Any) -> int | None:
    """The size in bytes of one element of a Kineto ``Input type`` (``float``, ``c10::Half``,
    ``long int``); None when it is not a tensor dtype (``Scalar``, ``TensorList``, "")."""
    if not isinstance(type_name, str):
        return None
    t = type_name.strip().lower().replace("c10::", "").replace("torch.", "")
    return _CXX_TYPES.get(t, DTYPE_BYTES.get(t.replace(" ", "")))


def _numel(dims: list) -> int:
    return math.prod(int(d) for d in dims) if all(isinstance(d, int) and d >= 0 for d in dims) else 0


def _tensor(dims: list, esize: int) -> list:
    """A host-ET tensor tuple ``[id, storage, offset, numel, elem_bytes, device]`` (no ids)."""
    return [0, 0, 0, _numel(dims), esize, "cpu"]


def _scalar(text: Any) -> Any:
    """A ``Concrete Inputs`` entry as the value a host ET would hold (int, float, bool, str)."""
    if not isinstance(text, str) or text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    return v if isinstance(v, (int, float, list)) else text


def _values(args: dict[str, Any], list_esize: int) -> list:
    """The input values of an op as a host ET writes them, from its Kineto arguments."""
    dims, types, concrete = (args.get(k) for k in ("Input Dims", "Input type", "Concrete Inputs"))
    if not isinstance(dims, list):
        return []
    types = types if isinstance(types, list) and len(types) == len(dims) else [None] * len(dims)
    concrete = concrete if isinstance(concrete, list) and len(concrete) == len(dims) else [""] * len(dims)
    values: list = []
    for d, t, c in zip(dims, types, concrete):
        esize = elem_bytes(t)
        if isinstance(d, list) and d and all(isinstance(x, list) for x in d):
            values.append([_tensor(x, esize or list_esize) for x in d])
        elif isinstance(d, list) and esize is not None:  # dims [] with a dtype: a 0-d tensor
            values.append(_tensor(d, esize))
        else:
            values.append(_scalar(c))
    return values


def c10d_comm(name: str, args: dict[str, Any], list_esize: int | None) -> CommInfo | None:
    """The communication of a ``c10d::<op>`` event; ``list_esize`` is the element size of its
    tensor lists (None: the first dtype among its inputs, else 4).  ValueError as
    :func:`comm_from_c10d`."""
    if list_esize is None:
        types = args.get("Input type")
        found = [e for e in map(elem_bytes, types if isinstance(types, list) else []) if e]
        list_esize = found[0] if found else 4
    return comm_from_c10d(name, _values(args, list_esize))


def param_comm(args: dict[str, Any]) -> CommInfo | None:
    """The communication a ``record_param_comms`` event (or an NCCL kernel's arguments)
    describes; None without a known ``Collective name``.  ValueError as
    :func:`comm_from_param_comms`."""
    if "Collective name" not in args:
        return None
    attrs = {host: args[k] for k, host in _PARAM_ARGS.items() if k in args}
    if isinstance(attrs.get("pg_name"), (int, float)):
        attrs["pg_name"] = str(attrs["pg_name"])
    return comm_from_param_comms(attrs, _values(args, 4))


def annotation_elem_bytes(args: dict[str, Any]) -> int | None:
    """The element size of the first tensor of a ``gloo:*``/``nccl:*`` annotation."""
    types = args.get("Input type")
    for t in types if isinstance(types, list) else []:
        e = elem_bytes(t)
        if e:
            return e
    return None


def _each_tensor_bytes(args: dict[str, Any]) -> list[int]:
    """The bytes of each tensor a ``gloo:*``/``nccl:*`` annotation was given, in order: an
    ``Input Dims`` entry's element count times its ``Input type``'s size ([] when it records
    none; an undefined tensor, dims ``[]``, is no tensor)."""
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list) or len(types) != len(dims):
        return []
    return [_numel(d) * (elem_bytes(t) or 0) for d, t in zip(dims, types) if isinstance(d, list) and d]


def _fitting(size: int) -> int:
    """``size``; ValueError when it does not fit ``comm_size``."""
    if size > _MAX_BYTES:
        raise ValueError(f"size in bytes {size} of its 'Input Dims' is out of range (0..{_MAX_BYTES})")
    return size


def annotation_bytes(args: dict[str, Any]) -> int:
    """The bytes of the tensors a ``gloo:*``/``nccl:*`` annotation was given, all of them (0
    when it records none); ValueError when that does not fit ``comm_size``."""
    return _fitting(sum(_each_tensor_bytes(args)))


def work_bytes(kind: str, args: dict[str, Any]) -> int:
    """The ``comm_size`` of an op of ``kind`` as its work annotation's tensors give it, 0 when
    they do not: all of them for the kinds of :data:`SIZED_BY_WORK`; for a scatter the first:
    the root's annotation is given one chunk per rank, each what a rank receives (PyTorch checks
    them against the output), a non-root's none.  ValueError as :func:`annotation_bytes`."""
    if kind in SIZED_BY_WORK:
        return annotation_bytes(args)
    if kind == "scatter":
        chunks = _each_tensor_bytes(args)
        return _fitting(chunks[0] if chunks else 0)
    return 0


def group_of(args: dict[str, Any]) -> tuple[str, list[int]] | None:
    """(name, global ranks) of the group an event names in ``Process Group Name`` and
    ``Process Group Ranks`` (a list, or its text ``"[0, 1]"``); None when it names none."""
    name, ranks = args.get("Process Group Name"), args.get("Process Group Ranks")
    if name is None or ranks is None:
        return None
    if isinstance(ranks, str):
        try:
            ranks = ast.literal_eval(ranks)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    if not isinstance(ranks, list) or not ranks or not all(is_rank(r) for r in ranks):
        return None
    return str(name), list(ranks)


def annotation_kind(name: str) -> str | None:
    """The communication kind a ``gloo:<op>``/``nccl:<op>`` annotation names (``gloo:all_reduce``
    and ``nccl:_all_gather_base`` as ``record_param_comms`` names them), None when unknown."""
    op = name.split(":", 1)[-1].lower()
    return _PARAM_NAMES.get(op) or _PARAM_NAMES.get(op.replace("all_gather", "allgather")
                                                    .replace("all_reduce", "allreduce"))


def annotation_comm(name: str, args: dict[str, Any]) -> CommInfo | None:
    """The collective a ``gloo:*``/``nccl:*`` annotation does when no op in the trace issued it:
    the kind its name says, the bytes of its ``Input Dims`` x ``Input type``
    (:func:`annotation_bytes`; 0 for a barrier or without shapes), the group its ``Process
    Group Name`` says (``pg_name`` None when it says none).  None for a send or receive (no
    peer), a scatter or reduce-scatter (its tensors are not what ``comm_size`` counts) and an
    unknown kind.  ValueError as :func:`annotation_bytes`."""
    kind = annotation_kind(name)
    if kind not in _ALONE_KINDS:
        return None
    info = CommInfo(kind, 0 if kind == "barrier" else annotation_bytes(args))
    group = args.get("Process Group Name")
    if group is not None and group != "":
        info.pg_name = str(group)
    return info
