"""Lower the entry computation of an HLO module to one device-independent list of operations.

Rules (docs/jax.md explains each):

- one operation per instruction that does work, in the module's order (the schedule order of a
  scheduled module); ``parameter``, ``constant``, ``tuple``, ``get-tuple-element``,
  ``bitcast``, ``partition-id``, ``replica-id``, ``after-all``, ``optimization-barrier``,
  ``domain`` and ``add-dependency`` are folded away: data dependencies go through them to the
  operations that produced the values (tuples are tracked element by element);
- with ``schedule`` on, the device runs its schedule as one stream: each operation waits
  (``ctrl_deps``) for the one before it; an async collective (``*-start``/``*-done``, or
  ``async-start``/``async-done`` wrapping a collective) is one communication operation issued
  at the start, off the stream, so compute scheduled before the done overlaps it; the first
  operation after the done waits for it. Explicit ``control-predecessors`` are kept;
- ``while`` with ``known_trip_count`` (or, without it, a counter loop: :mod:`.trip_count`) up
  to ``unroll_limit`` is unrolled (the body once per
  iteration, the loop state threaded through); otherwise it is one compute operation with the
  summed cost of its iterations (one iteration when the trip count is unknown) and a note;
- ``call`` is inlined; ``conditional`` is one compute operation with the cost of its most
  expensive branch and a note;
- an instruction this converter does not know is a generic compute operation with a note; a
  ``custom-call`` whose target the cost model does not know (:data:`.cost.KNOWN_TARGETS`) is a
  compute operation whose target is listed in ``Lowered.unknown_targets``;
- every ``send`` of a channel has its ``recv`` on the target device (else the program is refused);
- every device is in a replica group of every collective (else the program is refused); with more
  replicas than the module states (``devices``, a multiple of its replica_count x num_partitions), the groups and
  pairs that name ids repeat in each copy of the module's devices (:mod:`.groups`);
- what summarised loops and conditionals hide (their collectives' bytes, unknown trip counts) is
  also one line of ``Lowered.notes``;
- a module that states no device count and whose collectives name no device is one device, as
  XLA reads it, with a note in ``Lowered.notes``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from chakra_core import ConfigError, TraceFormatError, check_limit

from .cost import CostModel, custom_call_target, is_known_target
from .groups import GroupError, device_groups, parse_pairs, parse_replica_groups, permute_pairs
from .hlo_text import Computation, HloModule, Instruction, tuple_index
from .opcodes import COLLECTIVES, FOLDED, KNOWN
from .shapes import array_bytes, arrays, shape_bytes
from .trip_count import counted_trip_count

__all__ = ["Op", "GroupLayout", "PermuteLayout", "Lowered", "lower", "COMPUTE", "COLLECTIVE", "PERMUTE"]

COMPUTE, COLLECTIVE, PERMUTE = 0, 1, 2
#: collectives that send only their first operand (ragged-all-to-all's others are its output
#: buffer and its offset and size arrays)
_FIRST_OPERAND_ONLY = ("collective-permute", "ragged-all-to-all")
_INT64_MAX = (1 << 63) - 1
_TAG_MAX = (1 << 31) - 1

Value = tuple[int, ...] | list  # op ids, or one value per tuple element


class Summary(NamedTuple):
    """The cost of a summarised computation: FLOPs, bytes, profiled op names with counts,
    collective bytes, the output type of its instruction of most FLOPs (whose peak times the
    summary) and the names of the loops of unknown trip count in it (costed as one iteration)."""

    flops: int
    size: int
    parts: list[tuple[str, int]]
    comm: int
    dtype: str
    unknown_loops: frozenset[str] = frozenset()

    def times(self, n: int) -> Summary:
        """The cost of ``n`` runs."""
        return self._replace(flops=self.flops * n, size=self.size * n, comm=self.comm * n,
                             parts=[(name, c * n) for name, c in self.parts])


def _unknown_inside(summary: Summary) -> str:
    """The clause of a summarised node's note naming the loops of unknown trip count it holds."""
    k = len(summary.unknown_loops)
    return f"; {k} loop{'s' * (k != 1)} of unknown trip count in it costed as one iteration" if k else ""


@dataclass(slots=True)
class GroupLayout:
    """How a collective groups the devices: ``group_of[device]`` indexes ``members`` (-1: alone)."""

    members: list[tuple[int, ...]]
    group_of: list[int]


@dataclass(slots=True)
class PermuteLayout:
    """Peers of a collective-permute: ``target[device]`` and ``source[device]`` (-1: none)."""

    target: list[int]
    source: list[int]


@dataclass(slots=True)
class Op:
    """One operation of the device-independent program (ids are node ids; a permute has two)."""

    id: int
    name: str
    kind: int
    hlo_op: str
    deps: list[int]
    ctrl: list[int]
    num_ops: int = 0
    tensor_size: int = 0
    comm_type: int = -1
    comm_size: int = 0
    layout: GroupLayout | PermuteLayout | None = None
    profile_parts: tuple[tuple[str, int], ...] = ()
    note: str = ""
    opcode: str = ""
    tag: int = -1
    dtype: str = ""


@dataclass
class Lowered:
    """The lowered program: operations in order, device count, process groups."""

    ops: list[Op]
    devices: int
    groups: dict[str, list[int]] = field(default_factory=dict)
    group_names: dict[tuple[int, ...], str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unknown_targets: dict[str, int] = field(default_factory=dict)

    @property
    def next_free_id(self) -> int:
        """The first node id after every operation's (a permute has two)."""
        if not self.ops:
            return 1
        last = self.ops[-1]
        return last.id + (2 if last.kind == PERMUTE else 1)


def _flat(v: Value) -> list[int]:
    if isinstance(v, tuple):
        return list(v)
    out: list[int] = []
    for x in v:
        out.extend(_flat(x))
    return out


def _dedupe(ids: list[int]) -> list[int]:
    return list(dict.fromkeys(ids)) if len(ids) > 1 else ids


def _relabel(v: Value, ids: tuple[int, ...]) -> Value:
    """A value shaped like ``v`` whose every element comes from ``ids``."""
    if isinstance(v, tuple):
        return ids
    return [_relabel(x, ids) for x in v]


def _trip_count(ins: Instruction) -> int | None:
    config = ins.attr("backend_config")
    if not config or "known_trip_count" not in config:
        return None
    try:
        data = json.loads(json.loads(config) if config.startswith('"') else config)
        return int(data["known_trip_count"]["n"])
    except (ValueError, KeyError, TypeError):
        return None


@dataclass
class _Summarised:
    """What the summarised loops and conditionals hide: their collectives' bytes (not emitted as
    communication) and the loops of unknown trip count (costed as one iteration)."""

    loops: set[str] = field(default_factory=set)
    nodes: int = 0
    loop_comm: int = 0
    unknown: set[str] = field(default_factory=set)
    conditional_comm: int = 0

    def loop(self, name: str, comm: int, unknown: Iterable[str]) -> None:
        """Record one summarised node of ``while`` instruction ``name``, its collective bytes and
        the loops of unknown trip count it costs as one iteration (itself or loops in its body)."""
        self.loops.add(name)
        self.nodes += 1
        self.loop_comm += comm
        self.unknown.update(unknown)

    def conditional(self, comm: int, unknown: Iterable[str]) -> None:
        """Record one summarised conditional: its collective bytes and the loops of unknown trip
        count in its costliest branch."""
        self.conditional_comm += comm
        self.unknown.update(unknown)

    def note(self, unroll_limit: int) -> str:
        """One line for the set's notes ("" when nothing was summarised that hides anything)."""
        parts = []
        if self.loops and (self.loop_comm or self.unknown):
            loops = len(self.loops)
            parts.append(f"{loops} while loop{'s' * (loops != 1)} summarised (unroll_limit={unroll_limit}) "
                         f"as {self.nodes} compute node{'s' * (self.nodes != 1)}")
        if self.loop_comm:
            parts.append(f"{self.loop_comm:,} bytes of collectives in their bodies not emitted as communication nodes")
        if self.unknown:
            parts.append(f"{len(self.unknown)} loop{'s' * (len(self.unknown) != 1)} of unknown trip count "
                         "costed as one iteration")
        if self.conditional_comm:
            parts.append(f"{self.conditional_comm:,} bytes of collectives inside summarised conditionals not "
                         "emitted as communication nodes")
        return "; ".join(parts)


class _Lowering:
    def __init__(self, module: HloModule, devices: int, replicas: tuple[int, int], partitions: int,
                 unroll_limit: int, schedule: bool):
        self.module = module
        self.devices = devices
        self.replicas, self.module_replicas = replicas
        self.partitions = partitions
        self.unroll_limit = unroll_limit
        self.schedule = schedule
        self.cost = CostModel(module)
        self.ops: list[Op] = []
        self.next_id = 1
        self.stream: list[int] = []
        self.layouts: dict[tuple, GroupLayout | PermuteLayout] = {}
        self.group_names: dict[tuple[int, ...], str] = {}
        self.unknown_targets: dict[str, int] = {}
        self.channels: dict[tuple[str, int], tuple[set[tuple[int, int]], Instruction]] = {}
        self.summarised = _Summarised()

    def fail(self, ins: Instruction, message: str) -> TraceFormatError:
        return TraceFormatError(f"instruction {ins.name!r}: {message}", self.module.path, f"line {ins.line}")

    def index_attr(self, ins: Instruction, key: str) -> int:
        """Attribute ``key`` of ``ins`` as a whole number (0 when absent); TraceFormatError else."""
        text = (ins.attr(key) or "0").strip()
        if not (text.isascii() and text.isdigit()):
            raise self.fail(ins, f"{key}={text[:40]!r} is not a whole number")
        return int(text)

    def computation(self, comp: Computation, params: Sequence[Value] | None, prefix: str) -> Value:
        env: dict[str, Value] = {}
        for ins in comp.instructions:
            env[ins.name] = self.instruction(ins, comp, env, params, prefix)
        return env[comp.root.name] if comp.root is not None else ()

    def operand(self, ins: Instruction, env: dict[str, Value], i: int) -> Value:
        if i >= len(ins.operands):
            raise self.fail(ins, f"{ins.opcode} wants operand {i + 1}, got {len(ins.operands)}")
        name = ins.operands[i]
        if name in env:
            return env[name]
        base, index = tuple_index(name)
        if index is None or base not in env:
            raise self.fail(ins, f"operand {name!r} is not defined before it")
        return self.element(ins, env[base], index)

    def element(self, ins: Instruction, v: Value, index: int) -> Value:
        """Element ``index`` of tuple value ``v`` (``v`` itself when it is one node's output)."""
        if not isinstance(v, list):
            return v
        if index >= len(v):
            raise self.fail(ins, f"index={index} is outside a tuple of {len(v)}")
        return v[index]

    def operand_ids(self, ins: Instruction, env: dict[str, Value]) -> list[int]:
        out: list[int] = []
        for i in range(len(ins.operands)):
            out.extend(_flat(self.operand(ins, env, i)))
        control = ins.attr("control-predecessors")
        if control:
            for name in control.strip("{}").split(","):
                v = env.get(name.strip().lstrip("%"))
                if v is not None:
                    out.extend(_flat(v))
        return _dedupe(out)

    def new_op(self, ins: Instruction, kind: int, prefix: str, deps: list[int], on_stream: bool = True,
               **fields: object) -> Op:
        ctrl = [c for c in self.stream if c not in deps] if self.schedule else []
        out = arrays(ins.shape)
        dtype = str(fields.pop("dtype", "") or (out[0][0] if out else ""))
        op = Op(self.next_id, prefix + ins.name, kind, ins.name, deps, ctrl, opcode=ins.opcode,
                dtype=dtype, **fields)  # type: ignore[arg-type]
        self.next_id += 2 if kind == PERMUTE else 1
        self.ops.append(op)
        if on_stream and self.schedule:
            self.stream = [op.id, op.id + 1] if kind == PERMUTE else [op.id]
        return op

    def instruction(self, ins: Instruction, comp: Computation, env: dict[str, Value],
                    params: Sequence[Value] | None, prefix: str) -> Value:
        op = ins.opcode
        if op in FOLDED:
            return self.folded(ins, env, params)
        if op == "while":
            return self.while_loop(ins, comp, env, prefix)
        if op == "call":
            called = self.called(ins, "to_apply")
            args = [self.operand(ins, env, i) for i in range(len(ins.operands))]
            return self.computation(called, args, prefix + ins.name + "/")
        if op == "conditional":
            return self.conditional(ins, comp, env, prefix)
        if op.endswith("-done") or op == "async-done":
            value = self.operand(ins, env, 0)
            if self.schedule:
                self.stream = _dedupe(self.stream + _flat(value))
            return value
        if op == "async-update":
            return self.operand(ins, env, 0)
        if op in ("send", "recv") and "_xla_send_recv_source_target_pairs" in ins.attr_text:
            return self.point_to_point(ins, comp, env, prefix)
        if op in COLLECTIVES or (op.endswith("-start") and op.removesuffix("-start") in COLLECTIVES):
            return self.collective(ins, ins, comp, env, prefix, async_=op.endswith("-start"))
        if op == "async-start":
            wrapped = self.called(ins, "calls")
            root = wrapped.root
            if root is not None and root.opcode in COLLECTIVES:
                return self.collective(ins, root, comp, env, prefix, async_=True)
            node = self.compute(ins, comp, env, prefix, on_stream=False)
            return (node.id,)
        node = self.compute(ins, comp, env, prefix)
        if op not in KNOWN:
            node.note = f"instruction {op!r} is not known to the converter: kept as a generic compute node"
        elif op == "custom-call" and not is_known_target(custom_call_target(ins)):
            target = custom_call_target(ins)
            self.unknown_targets[target] = self.unknown_targets.get(target, 0) + 1
            node.note = (f"custom-call target {target!r} is not known to the cost model: a compute node "
                         "without FLOPs; communication inside it is not in the trace")
        return (node.id,)

    def called(self, ins: Instruction, key: str) -> Computation:
        name = (ins.attr(key) or "").strip("{}").split(",")[0].strip().lstrip("%")
        comp = self.module.computations.get(name)
        if comp is None:
            raise self.fail(ins, f"{key}={name!r} names no computation of the module")
        return comp

    def folded(self, ins: Instruction, env: dict[str, Value], params: Sequence[Value] | None) -> Value:
        op = ins.opcode
        if op == "parameter":
            number = self.index_attr(ins, "number")
            return params[number] if params is not None and number < len(params) else ()
        if op == "tuple":
            return [self.operand(ins, env, i) for i in range(len(ins.operands))]
        if op == "get-tuple-element":
            return self.element(ins, self.operand(ins, env, 0), self.index_attr(ins, "index"))
        if op in ("bitcast", "optimization-barrier", "domain") and ins.operands:
            return self.operand(ins, env, 0)
        if op == "add-dependency" and ins.operands:
            v = self.operand(ins, env, 0)
            extra = tuple(_flat(self.operand(ins, env, 1))) if len(ins.operands) > 1 else ()
            return tuple(_dedupe(_flat(v) + list(extra)))
        return ()

    def compute(self, ins: Instruction, comp: Computation, env: dict[str, Value], prefix: str,
                on_stream: bool = True) -> Op:
        flops, size = self.cost.flops(ins, comp), self.cost.bytes(ins, comp)
        if max(flops, size) > _INT64_MAX:
            raise self.fail(ins, f"its cost ({flops} FLOPs, {size} bytes) does not fit a 64-bit integer")
        return self.new_op(ins, COMPUTE, prefix, self.operand_ids(ins, env), on_stream,
                           num_ops=flops, tensor_size=size)

    def operand_bytes(self, ins: Instruction, comp: Computation, first_only: bool) -> int:
        """Bytes of the operands of ``ins`` (of its first only with ``first_only``)."""
        names = ins.operands[:1] if first_only else ins.operands
        total = 0
        for name in names:
            shape = comp.operand_shape(name)
            if shape is not None:
                total += shape_bytes(shape)
        return total

    def collective(self, ins: Instruction, spec: Instruction, comp: Computation, env: dict[str, Value],
                   prefix: str, async_: bool) -> Value:
        base = spec.opcode.removesuffix("-start")
        has_channel = spec.attr("channel_id") is not None
        deps = self.operand_ids(ins, env)
        try:
            if base == "collective-permute":
                layout: GroupLayout | PermuteLayout = self.permute_layout(spec, has_channel)
                size = self.operand_bytes(ins, comp, first_only=True)
                node = self.new_op(ins, PERMUTE, prefix, deps, not async_, comm_size=size, layout=layout)
                return _result(node)
            layout = self.group_layout(spec, base, has_channel)
        except GroupError as e:
            raise self.fail(spec, str(e)) from None
        size = self.operand_bytes(ins, comp, first_only=base in _FIRST_OPERAND_ONLY)
        node = self.new_op(ins, COLLECTIVE, prefix, deps, not async_, comm_type=int(COLLECTIVES[base]),
                           comm_size=size, layout=layout)
        return _result(node)

    def point_to_point(self, ins: Instruction, comp: Computation, env: dict[str, Value], prefix: str) -> Value:
        """A ``send`` or ``recv`` (with its pairs in ``frontend_attributes``): one half of a permute,
        tagged by its channel so that the send and the receive of one channel match."""
        attrs = ins.attr("frontend_attributes") or ""
        at = attrs.find("_xla_send_recv_source_target_pairs=")
        text = attrs[at:].split("=", 1)[1].lstrip().lstrip('"').split('"', 1)[0] if at >= 0 else ""
        has_channel = ins.attr("channel_id") is not None
        try:
            full = self.permute_layout_of(text, has_channel)
        except GroupError as e:
            raise self.fail(ins, str(e)) from None
        none = [-1] * self.devices
        if ins.opcode == "send":
            layout = PermuteLayout(full.target, none)
            size = self.operand_bytes(ins, comp, first_only=True)
        else:
            layout = PermuteLayout(none, full.source)
            received = arrays(ins.shape)
            size = array_bytes(*received[0]) if received else 0
        tag = self.channel_tag(ins)
        if tag >= 0:
            pairs = {(s, t) for s, t in enumerate(full.target) if t >= 0}
            seen, _ = self.channels.get((ins.opcode, tag), (set(), ins))
            self.channels[(ins.opcode, tag)] = (seen | pairs, ins)
        node = self.new_op(ins, PERMUTE, prefix, self.operand_ids(ins, env), False, comm_size=size,
                           layout=layout, tag=tag)
        return _result(node)

    def channel_tag(self, ins: Instruction) -> int:
        """The ``channel_id`` of a send or recv as its messages' tag (-1 without one)."""
        channel = ins.attr("channel_id")
        if not channel:
            return -1
        if not channel.isdigit() or int(channel) > _TAG_MAX:
            raise self.fail(ins, f"channel_id={channel[:40]} is not a tag in 0..{_TAG_MAX}")
        return int(channel)

    def check_channels(self) -> None:
        """Refuse a program in which a send of a channel has no recv on its target, or the reverse."""
        for (opcode, tag), (pairs, ins) in self.channels.items():
            other = "recv" if opcode == "send" else "send"
            match, _ = self.channels.get((other, tag), (set(), ins))
            missing = sorted(pairs - match)
            if missing:
                s, t = missing[0]
                raise self.fail(ins, f"{opcode} of channel {tag} from device {s} to {t} has no matching "
                                     f"{other} (unmatched point-to-point messages)")

    def group_layout(self, spec: Instruction, base: str, has_channel: bool) -> GroupLayout:
        text = spec.attr("replica_groups")
        if text is not None and text.startswith("mesh") and "{" not in text and spec.attr("device_ids"):
            text = f"{text}, device_ids={spec.attr('device_ids')}"
        global_ids = spec.attr("use_global_device_ids") == "true"
        key = (base, text, has_channel, global_ids)
        cached = self.layouts.get(key)
        if isinstance(cached, GroupLayout):
            return cached
        groups = device_groups(base, parse_replica_groups(text), has_channel, global_ids,
                               self.replicas, self.partitions, self.module_replicas)
        layout = self.place_groups(groups)
        self.layouts[key] = layout
        return layout

    def place_groups(self, groups: list[list[int]]) -> GroupLayout:
        """The layout of ``groups`` (global device ids), each group of two or more named; a
        GroupError when a group names a device outside the set, a device twice, or no group a device."""
        group_of = [-1] * self.devices
        covered = [False] * self.devices
        members: list[tuple[int, ...]] = []
        for g in groups:
            if any(d < 0 or d >= self.devices for d in g):
                raise GroupError(f"replica group {g} names a device outside 0..{self.devices - 1}")
            for d in g:
                if covered[d]:
                    raise GroupError(f"device {d} is in two replica groups")
                covered[d] = True
            if len(g) >= 2:
                ranks = tuple(sorted(g))
                self.group_names.setdefault(ranks, str(len(self.group_names) + 1))
                for d in g:
                    group_of[d] = len(members)
                members.append(ranks)
        if not all(covered):
            raise GroupError(f"device {covered.index(False)} of {self.devices} is in no replica group "
                             "(XLA runs a collective on every device of the program)")
        return GroupLayout(members, group_of)

    def permute_layout(self, spec: Instruction, has_channel: bool) -> PermuteLayout:
        return self.permute_layout_of(spec.attr("source_target_pairs"), has_channel)

    def permute_layout_of(self, text: str | None, has_channel: bool) -> PermuteLayout:
        key = ("permute", text, has_channel)
        cached = self.layouts.get(key)
        if isinstance(cached, PermuteLayout):
            return cached
        target = [-1] * self.devices
        source = [-1] * self.devices
        pairs = permute_pairs(parse_pairs(text), has_channel, self.replicas, self.partitions, self.module_replicas)
        for s, t in pairs:
            if not (0 <= s < self.devices and 0 <= t < self.devices):
                raise GroupError(f"source_target_pairs name a device outside 0..{self.devices - 1}")
            if s == t:
                continue
            if target[s] >= 0 or source[t] >= 0:
                raise GroupError(f"device {s if target[s] >= 0 else t} appears twice in source_target_pairs")
            target[s], source[t] = t, s
        layout = PermuteLayout(target, source)
        self.layouts[key] = layout
        return layout

    def while_loop(self, ins: Instruction, comp: Computation, env: dict[str, Value], prefix: str) -> Value:
        body = self.called(ins, "body")
        state = self.operand(ins, env, 0) if ins.operands else ()
        trip = self.trip(ins, comp)
        if trip is not None and trip <= self.unroll_limit:
            for i in range(trip):
                state = self.computation(body, [state], f"{prefix}{ins.name}[{i}]/")
            return state
        inner = self.summary(body)
        cost = inner.times(1 if trip is None else trip)
        why = (f"trip count {trip} is above unroll_limit={self.unroll_limit}" if trip is not None
               else "trip count unknown (no known_trip_count): the cost of one iteration")
        note = f"while loop summarised: {why}"
        if cost.comm:
            note += f"; its collectives ({cost.comm} bytes in all) are folded into this node"
        note += _unknown_inside(inner)
        self.summarised.loop(ins.name, cost.comm, inner.unknown_loops | ({ins.name} if trip is None else set()))
        node = self.new_op(ins, COMPUTE, prefix, _dedupe(_flat(state)), num_ops=self.fits(ins, cost.flops),
                           tensor_size=self.fits(ins, cost.size), note=note, dtype=cost.dtype,
                           profile_parts=tuple(cost.parts))
        return _relabel(state, (node.id,))

    def trip(self, ins: Instruction, comp: Computation) -> int | None:
        """Iterations of ``while`` instruction ``ins`` (in ``comp``): its ``known_trip_count``, else
        those of its counter loop, else None (unknown); a negative count is an error."""
        trip = _trip_count(ins)
        if trip is None:
            trip = counted_trip_count(ins, comp, self.module)
        if trip is not None and trip < 0:
            raise self.fail(ins, f"known_trip_count {trip} is negative")
        return trip

    def fits(self, ins: Instruction, cost: int) -> int:
        """``cost`` (FLOPs or bytes of ``ins``) when it fits a 64-bit integer; an error naming ``ins`` else."""
        if cost > _INT64_MAX:
            raise self.fail(ins, f"its cost ({cost}) does not fit a 64-bit integer")
        return cost

    def conditional(self, ins: Instruction, comp: Computation, env: dict[str, Value], prefix: str) -> Value:
        branches, best = self.costliest(ins)
        note = f"conditional summarised: the most expensive of its {branches} branches"
        if best.comm:
            note += f"; its collectives ({best.comm} bytes) are folded into this node"
        note += _unknown_inside(best)
        self.summarised.conditional(best.comm, best.unknown_loops)
        node = self.new_op(ins, COMPUTE, prefix, self.operand_ids(ins, env), num_ops=self.fits(ins, best.flops),
                           tensor_size=self.fits(ins, best.size), note=note, dtype=best.dtype,
                           profile_parts=tuple(best.parts))
        return (node.id,)

    def costliest(self, ins: Instruction) -> tuple[int, Summary]:
        """The number of branches of ``conditional`` instruction ``ins`` and the summary of its most
        expensive one (by FLOPs, then bytes), its output's bytes added."""
        names = ins.attr("branch_computations")
        if names:
            branches = [n.strip().lstrip("%") for n in names.strip("{}").split(",")]
        else:
            branches = [(ins.attr(k) or "").lstrip("%") for k in ("true_computation", "false_computation")]
        best = Summary(0, 0, [], 0, "")
        for name in branches:
            called = self.module.computations.get(name)
            if called is None:
                raise self.fail(ins, f"branch {name!r} names no computation of the module")
            cost = self.summary(called)
            if (cost.flops, cost.size) > (best.flops, best.size):
                best = cost
        return len(branches), best._replace(size=best.size + shape_bytes(ins.shape))

    def nested(self, ins: Instruction, comp: Computation) -> Summary:
        """The summary of ``while``, ``call`` or ``conditional`` instruction ``ins`` (in ``comp``)
        inside a summarised computation: a loop's body its trip count times (once, the loop named
        in ``unknown_loops``, when the count is unknown), a call's computation, a conditional's
        most expensive branch."""
        op = ins.opcode
        if op == "conditional":
            return self.costliest(ins)[1]
        inner = self.summary(self.called(ins, "body" if op == "while" else "to_apply"))
        if op == "call":
            return inner
        trip = self.trip(ins, comp)
        if trip is None:
            return inner._replace(unknown_loops=inner.unknown_loops | {ins.name})
        return inner.times(trip)

    def summary(self, comp: Computation) -> Summary:
        """The :class:`Summary` of one run of ``comp``."""
        flops = size = comm = 0
        parts: list[tuple[str, int]] = []
        heavy: tuple[int, str] = (0, "")
        unknown: frozenset[str] = frozenset()
        for ins in comp.instructions:
            op = ins.opcode
            if op in FOLDED or op.endswith("-done") or op in ("async-done", "async-update"):
                continue
            if op in ("while", "call", "conditional"):
                inner = self.nested(ins, comp)
                flops, size, comm = flops + inner.flops, size + inner.size, comm + inner.comm
                heavy = max(heavy, (inner.flops, inner.dtype))
                parts.extend(inner.parts)
                unknown |= inner.unknown_loops
                continue
            if op in COLLECTIVES or op.endswith("-start"):
                comm += self.operand_bytes(ins, comp, first_only=op.removesuffix("-start") in _FIRST_OPERAND_ONLY)
            else:
                own = self.cost.flops(ins, comp)
                flops += own
                size += self.cost.bytes(ins, comp)
                out = arrays(ins.shape)
                heavy = max(heavy, (own, out[0][0] if out else ""))
            parts.append((ins.name, 1))
        return Summary(flops, size, parts, comm, heavy[1], unknown)


def _result(node: Op) -> Value:
    """The value a communication op produces: a permute's is its receive (id + 1)."""
    return (node.id + 1,) if node.kind == PERMUTE else (node.id,)


def _largest_device_id(module: HloModule) -> tuple[int, bool]:
    """The largest id any collective names and whether some collective has a channel_id."""
    largest, channel = -1, False
    for comp in module.computations.values():
        for ins in comp.instructions:
            base = ins.opcode.removesuffix("-start")
            if base not in COLLECTIVES:
                continue
            channel = channel or ins.attr("channel_id") is not None
            try:
                if base == "collective-permute":
                    ids = [i for pair in parse_pairs(ins.attr("source_target_pairs")) for i in pair]
                else:
                    ids = [i for g in parse_replica_groups(ins.attr("replica_groups")) or [] for i in g]
            except GroupError:
                continue
            largest = max([largest, *ids])
    return largest, channel


def _layout(module: HloModule) -> tuple[int, int, str]:
    """Replicas, partitions and a note: from the header, else (an HloModuleProto carries
    neither) from the largest device id the collectives name (partitions when they have
    channels); one device when they name none."""
    if "replica_count" in module.header or "num_partitions" in module.header:
        return module.header_int("replica_count", 1), module.header_int("num_partitions", 1), ""
    largest, channel = _largest_device_id(module)
    if largest < 0:
        return 1, 1, ("the module states no device count (replica_count, num_partitions) and its "
                      "collectives name no device: one device, as XLA reads it (option devices=N to change)")
    return (1, largest + 1, "") if channel else (largest + 1, 1, "")


def _replicas(module: HloModule, devices: int | None, replicas: int, partitions: int) -> int:
    """The replicas of a program of ``devices`` (the module's own when None); a ConfigError when
    ``devices`` is not a whole number of copies of the partitioned program."""
    if devices is None:
        return replicas
    if devices % (replicas * partitions):
        raise ConfigError(f"option devices={devices} is not a multiple of the module's {replicas * partitions} "
                          f"devices (replica_count={replicas} x num_partitions={partitions}): more devices are "
                          "whole copies of the program", module.path)
    return devices // partitions


def lower(module: HloModule, devices: int | None = None, unroll_limit: int = 1024,
          schedule: bool = True) -> Lowered:
    """Lower ``module``'s entry computation; ``devices`` (a multiple of replica_count x
    num_partitions: whole copies of the program) overrides that count."""
    module_replicas, partitions, note = _layout(module)
    replicas = _replicas(module, devices, module_replicas, partitions)
    count = replicas * partitions
    check_limit("npus", count, "devices", module.path, error=ConfigError)  # before any per-device table
    lowering = _Lowering(module, count, (replicas, module_replicas), partitions, unroll_limit, schedule)
    lowering.computation(module.entry_computation, None, "")
    lowering.check_channels()
    groups = {name: list(ranks) for ranks, name in lowering.group_names.items()}
    notes = [note] if note and devices is None else []
    summarised = lowering.summarised.note(unroll_limit)
    notes += [summarised] if summarised else []
    return Lowered(lowering.ops, count, groups, lowering.group_names, notes, lowering.unknown_targets)
