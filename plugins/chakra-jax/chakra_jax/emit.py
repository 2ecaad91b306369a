"""Per-device Chakra nodes from the device-independent program of :mod:`.lowering`.

Every device runs the same program; what differs is the process group of each collective, the
peers of each collective-permute, which operations a device takes no part in, and the measured
durations. Each operation's node is therefore serialized once, shared by all devices, and a
device's file is those bytes with its own ``pg_name`` and ``duration_micros`` fields appended
(a protobuf message may be extended by appending fields). Only nodes whose dependencies go
through an operation the device skips, and the send/receive nodes of permutes, are built per
device. Memory stays flat in the number of devices. With a profile's timeline, ``[idle]`` nodes
(:mod:`.idle`) fill the gaps between a device's ops.

A device skips a collective whose group holds it alone and a permute in
which it neither sends nor receives; users of a skipped operation depend on what it depended on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from chakra_core import GeneratedRank, GlobalMetadata, Node, NodeType, make_attr

from .idle import IdleClock
from .lowering import COLLECTIVE, COMPUTE, GroupLayout, Lowered, Op, PermuteLayout

__all__ = ["DeviceRank", "Templates", "Timing", "micros"]


def micros(us: float) -> int:
    """Whole microseconds of a measured duration: rounded half up, at least 1 for any op measured."""
    return max(1, int(us + 0.5))


def _base_node(op: Op, deps: list[int], ctrl: list[int]) -> Node:
    n = Node(id=op.id, name=op.name)
    n.data_deps.extend(deps)
    n.ctrl_deps.extend(ctrl)
    n.attr.append(make_attr("is_cpu_op", False))
    if op.kind == COMPUTE:
        n.type = NodeType.COMP_NODE
        n.attr.append(make_attr("num_ops", op.num_ops))
        n.attr.append(make_attr("tensor_size", op.tensor_size))
    elif op.kind == COLLECTIVE:
        n.type = NodeType.COMM_COLL_NODE
        n.attr.append(make_attr("comm_type", op.comm_type))
        n.attr.append(make_attr("comm_size", op.comm_size))
    if op.note:
        n.attr.append(make_attr("note", op.note))
    return n


class Templates:
    """The serialized node of every operation (shared by all devices) and small cached suffixes."""

    def __init__(self, lowered: Lowered):
        self.lowered = lowered
        self._bytes: list[bytes | None] = [None] * len(lowered.ops)
        self._durations: dict[int, bytes] = {}
        self._pg: dict[str, bytes] = {}
        self._p2p: dict[tuple[int, int], bytes] = {}
        self._ints: dict[tuple[str, int], bytes] = {}

    def node_bytes(self, index: int) -> bytes:
        """The serialized node of ``ops[index]`` with its own dependencies."""
        data = self._bytes[index]
        if data is None:
            op = self.lowered.ops[index]
            data = _base_node(op, op.deps, op.ctrl).SerializeToString()
            self._bytes[index] = data
        return data

    def p2p_bytes(self, index: int, kind: NodeType) -> bytes:
        """The serialized send or receive of permute ``ops[index]`` (peers appended per device)."""
        key = (index, int(kind))
        data = self._p2p.get(key)
        if data is None:
            op = self.lowered.ops[index]
            data = _p2p_node(op, kind, op.deps, op.ctrl).SerializeToString()
            self._p2p[key] = data
        return data

    def int_attr(self, name: str, value: int) -> bytes:
        """A serialized integer attribute (``comm_src``, ``comm_dst``)."""
        key = (name, value)
        data = self._ints.get(key)
        if data is None:
            n = Node()
            n.attr.append(make_attr(name, value))
            data = n.SerializeToString()
            self._ints[key] = data
        return data

    def duration(self, us: int) -> bytes:
        """The serialized ``duration_micros`` field."""
        data = self._durations.get(us)
        if data is None:
            data = Node(duration_micros=us).SerializeToString()
            self._durations[us] = data
        return data

    def ctrl_dep(self, node_id: int) -> bytes:
        """A serialized ``ctrl_deps`` entry (appended to a node, it adds one control dependency)."""
        return Node(ctrl_deps=[node_id]).SerializeToString()

    def pg_name(self, name: str) -> bytes:
        """The serialized ``pg_name`` attribute."""
        data = self._pg.get(name)
        if data is None:
            n = Node()
            n.attr.append(make_attr("pg_name", name))
            data = n.SerializeToString()
            self._pg[name] = data
        return data


def _measured(op: Op, durations: Mapping[str, float] | None) -> int | None:
    if not durations:
        return None
    us = durations.get(op.hlo_op)
    if us is None and op.profile_parts:
        found = [durations[n] * c for n, c in op.profile_parts if n in durations]
        us = sum(found) if found else None
    return None if us is None else micros(us)


@dataclass
class Timing:
    """What times one device's nodes: measured ``durations`` (``{hlo_op: us}``) and, for idle
    gaps, measured ``starts`` (``{hlo_op: [us after the execution's start]}``) and ``step_us``;
    else ``model_us`` (the device model's duration of each operation, by index)."""

    durations: Mapping[str, float] | None = None
    starts: Mapping[str, Sequence[float]] | None = None
    step_us: float = 0.0
    model_us: Sequence[int] | None = None


class DeviceRank(GeneratedRank):
    """One device's ET, produced from the shared templates on each iteration."""

    def __init__(self, device: int, metadata: GlobalMetadata, templates: Templates, timing: Timing):
        super().__init__(device, metadata, self._decode)
        self._templates = templates
        self._timing = timing

    def _decode(self) -> Iterator[Node]:
        return (Node.FromString(b) for b in self.raw())

    def _duration(self, index: int, op: Op) -> int | None:
        timing = self._timing
        if timing.durations is not None:
            return _measured(op, timing.durations)
        if timing.model_us is not None and op.kind == COMPUTE:
            return timing.model_us[index]
        return None

    def raw(self) -> Iterator[bytes]:
        """Serialized node messages of this device in dependency order (``[idle]`` nodes, numbered
        after the operations, come before the node that waits for them)."""
        timing = self._timing
        if timing.starts is None:
            for _, _, nodes, _ in self._op_nodes():
                for _, data in nodes:
                    yield data
            return
        clock = IdleClock(timing.starts, timing.step_us, self._templates.lowered.next_free_id)
        for op, waited, nodes, us in self._op_nodes():
            idle = clock.before(op, list(dict.fromkeys(waited)))
            waits = b""
            if idle is not None:
                yield idle[0]
                waits = self._templates.ctrl_dep(idle[1])
            clock.after([i for i, _ in nodes], us or 0)
            yield from (data + waits for _, data in nodes)
        tail = clock.tail()
        if tail is not None:
            yield tail

    def _op_nodes(self) -> Iterator[tuple[Op, list[int], list[tuple[int, bytes]], int | None]]:
        """For each operation this device takes part in: the operation, what its nodes wait for
        (data and control dependencies), their ``(id, bytes)`` and their duration."""
        alias: dict[int, list[int]] = {}
        for index, op in enumerate(self._templates.lowered.ops):
            deps, ctrl = op.deps, op.ctrl
            rebuilt = bool(alias) and (any(d in alias for d in deps) or any(c in alias for c in ctrl))
            if rebuilt:
                deps, ctrl = _resolve(deps, alias), _resolve(ctrl, alias)
            us = self._duration(index, op)
            nodes = list(self._nodes(op, index, deps, ctrl, rebuilt, us, alias))
            if nodes:
                yield op, deps + ctrl, nodes, us

    def _nodes(self, op: Op, index: int, deps: list[int], ctrl: list[int], rebuilt: bool, us: int | None,
               alias: dict[int, list[int]]) -> Iterator[tuple[int, bytes]]:
        """``(id, bytes)`` of the node(s) ``op`` is on this device (none when it takes no part:
        users of a skipped operation then depend, through ``alias``, on what it depended on)."""
        t = self._templates
        suffix = t.duration(us) if us is not None else b""
        if op.kind == COMPUTE:
            data = _base_node(op, deps, ctrl).SerializeToString() if rebuilt else t.node_bytes(index)
            yield op.id, data + suffix
        elif op.kind == COLLECTIVE:
            assert isinstance(op.layout, GroupLayout)
            g = op.layout.group_of[self.rank]
            if g < 0:
                alias[op.id] = list(dict.fromkeys(deps + ctrl))
                return
            data = _base_node(op, deps, ctrl).SerializeToString() if rebuilt else t.node_bytes(index)
            yield op.id, data + t.pg_name(t.lowered.group_names[op.layout.members[g]]) + suffix
        else:
            yield from self._permute(op, index, deps, ctrl, rebuilt, suffix, alias)

    def _permute(self, op: Op, index: int, deps: list[int], ctrl: list[int], rebuilt: bool, suffix: bytes,
                 alias: dict[int, list[int]]) -> Iterator[tuple[int, bytes]]:
        assert isinstance(op.layout, PermuteLayout)
        t = self._templates
        device = self.rank
        target, source = op.layout.target[device], op.layout.source[device]
        if target < 0 and source < 0:
            alias[op.id] = alias[op.id + 1] = list(dict.fromkeys(deps + ctrl))
            return
        for kind, peer in ((NodeType.COMM_SEND_NODE, target), (NodeType.COMM_RECV_NODE, source)):
            if peer < 0:
                if kind == NodeType.COMM_SEND_NODE:
                    alias[op.id] = [op.id + 1]
                else:
                    alias[op.id + 1] = [op.id]
                continue
            src, dst = (device, peer) if kind == NodeType.COMM_SEND_NODE else (peer, device)
            data = (_p2p_node(op, kind, deps, ctrl).SerializeToString() if rebuilt
                    else t.p2p_bytes(index, kind))
            data += t.int_attr("comm_src", src) + t.int_attr("comm_dst", dst)
            node_id = op.id if kind == NodeType.COMM_SEND_NODE else op.id + 1
            yield node_id, data + suffix


def _p2p_node(op: Op, kind: NodeType, deps: list[int], ctrl: list[int]) -> Node:
    """A send (id ``op.id``) or receive (``op.id + 1``) of a permute, without its peers."""
    send = kind == NodeType.COMM_SEND_NODE
    name = op.name + (":send" if send else ":recv") if op.opcode.startswith("collective-permute") else op.name
    n = Node(id=op.id if send else op.id + 1, name=name, type=kind)
    n.data_deps.extend(deps)
    n.ctrl_deps.extend(ctrl)
    n.attr.extend([make_attr("is_cpu_op", False), make_attr("comm_tag", op.tag if op.tag >= 0 else op.id),
                   make_attr("comm_size", op.comm_size)])
    return n


def _resolve(ids: list[int], alias: dict[int, list[int]]) -> list[int]:
    if not alias:
        return ids
    out: list[int] = []
    for i in ids:
        a = alias.get(i)
        if a is None:
            out.append(i)
        else:
            out.extend(a)
    return list(dict.fromkeys(out)) if len(out) > 1 else out
