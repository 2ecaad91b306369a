"""``[idle]`` nodes: the time between a device's ops on its measured timeline.

The rule (docs/jax.md, "Idle gaps"), the PyTorch input's convention: a node whose measured
start (its occurrence's start after the start of the execution, the mean over the selected
executions) is later than the time all its dependencies end in the converted graph gets an
``[idle]`` COMP node (attribute ``idle=true``) of the difference, in whole microseconds, which
takes over its dependencies; the node waits for it. After the device's last node an ``[idle]``
node runs to the end of the measured execution. So each device's longest path reproduces the
execution's wall time: what the ops do not cover (dispatch, thread hand-offs, waiting for
another device that the measured collective durations do not show) is in the trace. A gap under
1 us after rounding is no node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from chakra_core import IDLE_NAME, Node, NodeType, make_attr

from .lowering import Op

__all__ = ["IDLE_NAME", "IdleClock", "idle_node"]


def idle_node(node_id: int, ctrl: Sequence[int], us: int) -> bytes:
    """The serialized ``[idle]`` node ``node_id`` of ``us`` microseconds after ``ctrl``."""
    n = Node(id=node_id, name=IDLE_NAME, type=NodeType.COMP_NODE, duration_micros=us)
    n.ctrl_deps.extend(ctrl)
    n.attr.extend([make_attr("is_cpu_op", False), make_attr("idle", True)])
    return n.SerializeToString()


class IdleClock:
    """The converted times of one device's nodes as they are emitted, and its idle gaps.

    ``starts[hlo_op][k]`` is the measured start (us after the execution's start) of the k-th
    occurrence of that op on the device; ``step_us`` the execution's measured wall time.
    """

    def __init__(self, starts: Mapping[str, Sequence[float]], step_us: float, first_id: int):
        self._starts = starts
        self._step_us = step_us
        self._next_id = first_id
        self._seen: dict[str, int] = {}
        self._finish: dict[int, float] = {}
        self._last = (0.0, -1)

    def _measured_start(self, op: Op) -> float | None:
        k = self._seen.get(op.hlo_op, 0)
        self._seen[op.hlo_op] = k + 1
        own = self._starts.get(op.hlo_op)
        if own is not None and k < len(own):
            return own[k]
        parts = [self._starts[n][0] for n, _ in op.profile_parts if self._starts.get(n)]
        return min(parts) if parts else None

    def before(self, op: Op, deps: Sequence[int]) -> tuple[bytes, int] | None:
        """The ``[idle]`` node (bytes, id) to emit before ``op``, whose dependencies are ``deps``,
        or None; call :meth:`after` with the node's ids and duration next."""
        ready = max((self._finish.get(d, 0.0) for d in deps), default=0.0)
        self._ready = ready
        target = self._measured_start(op)
        if target is None:
            return None
        gap = int(target - ready + 0.5)
        if gap < 1:
            return None
        node_id = self._next_id
        self._next_id += 1
        self._ready = ready + gap
        self._record(node_id, self._ready)
        return idle_node(node_id, list(deps), gap), node_id

    def after(self, ids: Sequence[int], us: int) -> None:
        """Record that the nodes ``ids`` (a permute's send and receive share one) run ``us`` us."""
        for i in ids:
            self._record(i, self._ready + us)

    def _record(self, node_id: int, finish: float) -> None:
        self._finish[node_id] = finish
        if finish >= self._last[0]:
            self._last = (finish, node_id)

    def tail(self) -> bytes | None:
        """The ``[idle]`` node from the device's last end to the end of the execution, or None."""
        end, last = self._last
        gap = int(self._step_us - end + 0.5)
        if gap < 1:
            return None
        node_id = self._next_id
        self._next_id += 1
        return idle_node(node_id, [last] if last >= 0 else [], gap)
