"""Which communication op each ``gloo:*`` / ``nccl:*`` annotation does the work of.

gloo opens a ``gloo:<op>`` record function when the c10d op creates its work (on the issuing
thread, inside the op) and closes it on a worker thread when the work is done; NCCL opens
``nccl:<op>`` inside the op too.  Record-function ids are handed out in issue order, so an
annotation belongs to the communication op issued last before it on its host thread (the
``tid`` the host ET gives it).  Its parent link in the host ET is not used: it names whatever
op was open when the worker finished (another collective, an unrelated ``aten`` op, the step).
Where the thread has no communication op before the annotation (a trace whose annotations
name another thread), the op issued last before it on one of its tensors is taken, else the
op issued last before it on any thread.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .comms import CommInfo

__all__ = ["WorkAnnotation", "attach_annotations"]


@dataclass(slots=True)
class WorkAnnotation:
    """A ``gloo:*`` / ``nccl:*`` annotation of the host ET."""

    rf: int  # record-function id (-1 when absent)
    tid: int  # host thread that opened it
    tensors: frozenset  # (tensor id, storage id) of its tensors


class _IssueOrder:
    """Communication ops in record-function order, to find the last one issued before an id."""

    def __init__(self) -> None:
        self.rfs: list[int] = []
        self.ops: list[int] = []

    def add(self, rf: int, op: int) -> None:
        """Append op ``op`` issued as record function ``rf`` (call in increasing ``rf``)."""
        self.rfs.append(rf)
        self.ops.append(op)

    def last_before(self, rf: int) -> tuple[int, int] | None:
        """(rf, op) of the last op issued before record function ``rf``, or None."""
        k = bisect.bisect_left(self.rfs, rf) - 1
        return (self.rfs[k], self.ops[k]) if k >= 0 else None


def attach_annotations(annotations: Iterable[WorkAnnotation], comms: Mapping[int, CommInfo],
                       rf_of: Sequence[int] | Mapping[int, int], tid_of: Mapping[int, int]) -> None:
    """Append each annotation's record-function id to ``worker_rfs`` of the op it works for.

    ``comms`` maps the host-node id of each communication op to its info, ``rf_of[op]`` is the
    op's record-function id and ``tid_of[op]`` its host thread.
    """
    issued = sorted((rf_of[op], op) for op in comms if rf_of[op] >= 0)
    if not issued:
        return
    everywhere = _IssueOrder()
    per_thread: dict[int, _IssueOrder] = {}
    per_tensor: dict[tuple[int, int], _IssueOrder] = {}
    for rf, op in issued:
        everywhere.add(rf, op)
        per_thread.setdefault(tid_of.get(op, 0), _IssueOrder()).add(rf, op)
        for key in comms[op].tensor_ids:
            per_tensor.setdefault(key, _IssueOrder()).add(rf, op)
    for ann in annotations:
        if ann.rf < 0:
            continue
        thread = per_thread.get(ann.tid)
        found = thread.last_before(ann.rf) if thread is not None else None
        if found is None:
            on_tensor = [hit for key in ann.tensors if key in per_tensor
                         if (hit := per_tensor[key].last_before(ann.rf)) is not None]
            found = max(on_tensor) if on_tensor else everywhere.last_before(ann.rf)
        if found is not None:
            comms[found[1]].worker_rfs.append(ann.rf)
