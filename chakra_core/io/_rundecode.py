"""Whether a run of node messages decodes, checked by protobuf in one call.

The runs of :func:`._etruns.file_runs` are rewritten as one message holding them in a repeated
field (``NodeRun``, defined here on top of the schema's Node), which protobuf's C decoder parses
whole, nested messages and UTF-8 checks included, without a Python object per node.  A run
that fails is for the caller to read node by node, which words the error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, message_factory
from google.protobuf.message import DecodeError

from chakra_core.base._kernels import compiled
from chakra_core.io import _wirekernels as wire
from chakra_core.io._etruns import Run
from chakra_core.io._schema import Node

__all__ = ["run_decodes"]


def _run_class() -> Any:
    node = Node.DESCRIPTOR
    proto = descriptor_pb2.FileDescriptorProto(name="chakra_core_node_run.proto", package="chakra_core_check",
                                               dependency=[node.file.name], syntax="proto3")
    msg = proto.message_type.add(name="NodeRun")
    msg.field.add(name="nodes", number=1, label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
                  type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE, type_name="." + node.full_name)
    pool = node.file.pool
    try:
        found = pool.FindMessageTypeByName("chakra_core_check.NodeRun")
    except KeyError:
        pool.Add(proto)
        found = pool.FindMessageTypeByName("chakra_core_check.NodeRun")
    return message_factory.GetMessageClass(found)  # type: ignore[arg-type]


_NodeRun = _run_class()


def run_decodes(run: Run) -> bool:
    """Whether every node message of ``run`` decodes as a Node (nested messages included)."""
    data, start, sizes, _, _ = run
    framed = compiled(wire.as_repeated_field)(np.frombuffer(data, np.uint8), start, sizes)
    try:
        _NodeRun.FromString(framed.tobytes())
    except DecodeError:
        return False
    return True
