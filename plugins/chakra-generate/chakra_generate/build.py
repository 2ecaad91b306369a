"""One pipeline stage's template: the nodes every rank of that stage runs, in issue order.

Ranks of one stage differ only in their process groups and pipeline peers, so each node is
serialized once with a *slot* saying which per-rank attribute it lacks (``pg_name`` of a group
kind, ``comm_dst``/``comm_src`` of a peer); :mod:`chakra_generate.emit` appends it per rank.

Dependencies: compute runs in one stream (each compute node depends on the one before); a
tensor-parallel, context-parallel or MoE collective and a ZeRO-3 parameter gather block that
stream (the next compute depends on it); a pipeline receive blocks it, a send does not (sends
are eager); data-parallel gradient collectives are issued when their bucket's last backward
finishes (``grad_reduce=per_microbatch``: in every micro-batch's backward) and only the
optimizer step waits for them; the optimizer and the ZeRO-1/2 parameter gathers take the
buckets of the step's last backward of each chunk, so they run once per step either way.
With recomputation a layer's ZeRO-3 gather comes before its recomputed forward, and its
backward uses the same gathered parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from chakra_core import CommType, ConfigError, Node, NodeType, check_limit, make_attr
from chakra_core.system import Device

from .flops import GROWS_WITH, Op, backward_ops, embedding_op, forward_ops, optimizer_op, output_op
from .model import Model
from .schedule import schedule

__all__ = ["Template", "Builder", "build_stage", "check_nodes", "check_fits", "op_sizes", "Size", "SLOTS", "NO_SLOT",
           "INT64_MAX"]

NO_SLOT = 0
#: slot number -> (attribute, what it names): group kinds give ``pg_name``, peers a rank
SLOTS = {1: ("pg_name", "tp"), 2: ("pg_name", "cp"), 3: ("pg_name", "dp"), 4: ("pg_name", "ep"),
         5: ("pg_name", "edp"), 6: ("pg_name", "emb"), 7: ("comm_dst", "next"), 8: ("comm_dst", "prev"),
         9: ("comm_src", "next"), 10: ("comm_src", "prev")}
_SLOT_OF_GROUP = {kind: slot for slot, (attr, kind) in SLOTS.items() if attr == "pg_name"}
_SEND = {"next": 7, "prev": 8}
_RECV = {"next": 9, "prev": 10}


@dataclass
class Template:
    """Serialized nodes of one stage and the slot of each (:data:`SLOTS`; 0: complete)."""

    stage: int
    nodes: list[bytes] = field(default_factory=list)
    slots: bytearray = field(default_factory=bytearray)


class Builder:
    """Appends nodes to a template, tracking the compute stream and what the optimizer awaits."""

    def __init__(self, model: Model, device: Device, stage: int):
        self.m = model
        self.device = device
        self.dtype = model.dtype_name()
        self.t = Template(stage)
        self.last: int | None = None
        #: collectives the next compute node waits for besides the stream (ZeRO-1/2 parameter gathers)
        self.pending: list[int] = []

    def _add(self, node: Node, deps: Sequence[int | None], slot: int = NO_SLOT) -> int:
        node.id = len(self.t.nodes) + 1
        node.data_deps.extend(sorted({d for d in deps if d is not None}))
        node.attr.append(make_attr("is_cpu_op", False))
        self.t.nodes.append(node.SerializeToString())
        self.t.slots.append(slot)
        return node.id

    def comp(self, name: str, op: Op, awaits: Sequence[int] = ()) -> int:
        """A compute node on the stream (also waiting for ``awaits``), timed by the device's roofline."""
        n = Node(name=name, type=NodeType.COMP_NODE,
                 duration_micros=self.device.roofline_micros(op.flops, op.bytes, self.dtype))
        n.attr.extend([make_attr("num_ops", op.flops), make_attr("tensor_size", op.bytes)])
        self.last = self._add(n, [self.last, *awaits, *self.pending])
        self.pending = []
        return self.last

    def coll(self, name: str, kind: CommType, size: int, group: str, blocking: bool = True) -> int:
        """A collective on the rank's ``group`` kind; a blocking one ends the compute stream."""
        n = Node(name=name, type=NodeType.COMM_COLL_NODE)
        n.attr.extend([make_attr("comm_type", int(kind)), make_attr("comm_size", size)])
        nid = self._add(n, [self.last], _SLOT_OF_GROUP[group])
        if blocking:
            self.last = nid
        return nid

    def all_gather(self, name: str, gathered: int, group: str, blocking: bool = True) -> int:
        """An all-gather of ``gathered`` bytes (its output) over the rank's ``group`` kind.  Its
        ``comm_size`` is the per-rank input shard, as Chakra and ASTRA-sim read an all-gather's
        size: ``gathered`` divided by the group's ranks, rounded up where they do not divide it
        (ZeRO and FSDP pad a partition to whole shards)."""
        return self.coll(name, CommType.ALL_GATHER, -(-gathered // self.m.group_size(group)), group, blocking)

    def send(self, name: str, size: int, tag: int, peer: str) -> int:
        """An eager send to the ``next`` or ``prev`` stage (the stream does not wait)."""
        n = Node(name=name, type=NodeType.COMM_SEND_NODE)
        n.attr.extend([make_attr("comm_tag", tag), make_attr("comm_size", size)])
        return self._add(n, [self.last], _SEND[peer])

    def recv(self, name: str, size: int, tag: int, peer: str) -> int:
        """A receive from the ``next`` or ``prev`` stage; the stream waits for it."""
        n = Node(name=name, type=NodeType.COMM_RECV_NODE)
        n.attr.extend([make_attr("comm_tag", tag), make_attr("comm_size", size)])
        self.last = self._add(n, [self.last], _RECV[peer])
        return self.last


def _tag(m: Model, step: int, direction: int, micro_batch: int, sender: int) -> int:
    """The tag of the pipeline message from virtual stage ``sender`` (0 forward, 1 backward)."""
    return 1 + 2 * ((step * m.micro_batches + micro_batch) * (m.pp * m.chunks) + sender) + direction


@dataclass
class _Bucket:
    """Gradients collected for one data-parallel collective: parameters by group kind."""

    params: dict[str, int] = field(default_factory=lambda: {"dp": 0, "edp": 0})


class _Stage:
    """Builds the passes of one stage for every step."""

    def __init__(self, model: Model, device: Device, stage: int):
        self.m = model
        self.b = Builder(model, device, stage)
        self.stage = stage
        self.passes = schedule(model.schedule, stage, model.pp, model.micro_batches, model.chunks)
        last_b: dict[int, int] = {}
        for i, (ph, _mb, c) in enumerate(self.passes):
            if ph == "B":
                last_b[c] = i
        self.last_backward = last_b
        self.open = _Bucket()
        #: gradient buckets issued in this step (they name the collectives)
        self.issued = 0
        #: whether the backward being built is the step's last of its chunk
        self.final = False
        #: the buckets of those last backwards: what the optimizer updates and ZeRO-1/2 gathers
        self.buckets: list[dict[str, int]] = []
        #: gradient collectives the optimizer step waits for
        self.grad_colls: list[int] = []

    def virtual(self, chunk: int) -> int:
        """The virtual stage of ``chunk`` on this stage."""
        return chunk * self.m.pp + self.stage

    def layers(self, chunk: int) -> range:
        """Global layers of ``chunk``."""
        n = self.m.layers_per_chunk
        v = self.virtual(chunk)
        return range(v * n, (v + 1) * n)

    def build(self) -> Template:
        """Every step: the passes in schedule order, then the gradient synchronisation and the
        optimizer step."""
        for step in range(self.m.steps):
            for i, (ph, mb, c) in enumerate(self.passes):
                if ph == "F":
                    self.forward(step, mb, c)
                else:
                    self.backward(step, mb, c, i == self.last_backward[c])
            self.finish_step(step)
        return self.b.t

    def forward(self, step: int, mb: int, c: int) -> None:
        """One forward pass of micro-batch ``mb`` through chunk ``c``."""
        m, b, v = self.m, self.b, self.virtual(c)
        pre = f"s{step}.F{mb}.c{c}"
        if v == 0:
            self.gather_params(f"{pre}.embedding", m.embedding_params(), 0)
            b.comp(f"{pre}.embedding", embedding_op(m))
            self.tp_reduce(f"{pre}.embedding")
        else:
            b.recv(f"{pre}.recv_activation", m.p2p_bytes, _tag(m, step, 0, mb, v - 1), "prev")
        for layer in self.layers(c):
            self.layer_forward(f"{pre}.L{layer}", layer)
        if v == m.pp * m.chunks - 1:
            self.tp_gather(f"{pre}.output")
            self.gather_params(f"{pre}.output", m.output_params(), 0)
            b.comp(f"{pre}.output_loss", output_op(m))
        else:
            b.send(f"{pre}.send_activation", m.p2p_bytes, _tag(m, step, 0, mb, v), "next")

    def backward(self, step: int, mb: int, c: int, last: bool) -> None:
        """One backward pass; ``last``: the step's final backward of chunk ``c``.  It reduces the
        chunk's gradients when ``last``, or in every micro-batch (``grad_reduce=per_microbatch``)."""
        m, b, v = self.m, self.b, self.virtual(c)
        pre = f"s{step}.B{mb}.c{c}"
        reduce = last or m.grad_reductions > 1
        self.final = last
        if v == m.pp * m.chunks - 1:
            self.gather_params(f"{pre}.output", m.output_params(), 0)
            self.tp_regather(f"{pre}.output")
            b.comp(f"{pre}.output_loss", output_op(m, backward=True))
            self.tp_gather(f"{pre}.output", backward=True)
            if reduce:
                self.add_grads(m.output_params(), 0, step)
        else:
            b.recv(f"{pre}.recv_gradient", m.p2p_bytes, _tag(m, step, 1, mb, v + 1), "next")
        for layer in reversed(self.layers(c)):
            self.gather_params(f"{pre}.L{layer}", *m.layer_params(layer))
            if m.recompute:
                self.layer_ops(f"s{step}.R{mb}.c{c}.L{layer}", forward_ops(m, m.is_moe(layer)), backward=False)
            self.layer_ops(f"{pre}.L{layer}", backward_ops(m, m.is_moe(layer)), backward=True)
            if reduce:
                self.add_grads(*m.layer_params(layer), step)
        if v == 0:
            self.tp_reduce(f"{pre}.embedding", backward=True)
            self.gather_params(f"{pre}.embedding", m.embedding_params(), 0)
            b.comp(f"{pre}.embedding", embedding_op(m, backward=True))
            if reduce:
                self.add_grads(m.embedding_params(), 0, step)
        else:
            b.send(f"{pre}.send_gradient", m.p2p_bytes, _tag(m, step, 1, mb, v), "prev")
        if reduce:
            self.flush(step)

    def tp_reduce(self, name: str, backward: bool = False) -> None:
        """The tensor-parallel reduction after a row-parallel matrix (an all-reduce, or with sp a
        reduce-scatter; in backward its mirror: nothing, or with sp an all-gather)."""
        m = self.m
        if m.tp == 1:
            return
        if backward:
            if m.sp:
                self.b.all_gather(f"{name}.tp_all_gather", m.activation_bytes, "tp")
            return
        kind = CommType.REDUCE_SCATTER if m.sp else CommType.ALL_REDUCE
        self.b.coll(f"{name}.tp_{'reduce_scatter' if m.sp else 'all_reduce'}", kind, m.activation_bytes, "tp")

    def tp_gather(self, name: str, backward: bool = False) -> None:
        """The tensor-parallel step before a column-parallel matrix (nothing, or with sp an
        all-gather; in backward an all-reduce, or with sp a reduce-scatter)."""
        m = self.m
        if m.tp == 1:
            return
        if not backward:
            if m.sp:
                self.b.all_gather(f"{name}.tp_all_gather", m.activation_bytes, "tp")
            return
        kind = CommType.REDUCE_SCATTER if m.sp else CommType.ALL_REDUCE
        self.b.coll(f"{name}.tp_{'reduce_scatter' if m.sp else 'all_reduce'}", kind, m.activation_bytes, "tp")

    def tp_regather(self, name: str) -> None:
        """Before a column-parallel matrix's backward, with sp: the all-gather of its input again
        (Megatron-LM keeps only the sequence shard and gathers it for the weight gradient)."""
        m = self.m
        if m.tp > 1 and m.sp:
            self.b.all_gather(f"{name}.tp_wgrad_all_gather", m.activation_bytes, "tp")

    def gather_params(self, name: str, dense: int, expert: int) -> None:
        """ZeRO-3: all-gather parameters before they are used (dense over dp, experts over edp)."""
        m = self.m
        if m.zero == 3 and dense and self.group_exists("dp"):
            self.b.all_gather(f"{name}.zero3_all_gather", dense * m.dtype_bytes, "dp")
        if m.zero == 3 and expert and self.group_exists("edp"):
            self.b.all_gather(f"{name}.zero3_expert_all_gather", expert * m.dtype_bytes, "edp")

    def layer_forward(self, name: str, layer: int) -> None:
        """One layer's forward."""
        m = self.m
        self.gather_params(name, *m.layer_params(layer))
        self.layer_ops(name, forward_ops(m, m.is_moe(layer)), backward=False)

    def layer_ops(self, name: str, ops: list[Op], backward: bool) -> None:
        """The compute of ``ops`` in order, each with the communication its markers stand for
        (an all-to-all before an op dispatches in the forward and combines in the backward)."""
        before, after = ("combine", "dispatch") if backward else ("dispatch", "combine")
        for op in ops:
            for marker in op.before:
                self.marker_comm(name, marker, op, before, backward)
            self.b.comp(f"{name}.{op.name}", op)
            for marker in op.after:
                self.marker_comm(name, marker, op, after, backward)

    def marker_comm(self, name: str, marker: str, op: Op, a2a: str, backward: bool) -> None:
        """The communication a marker stands for (see :class:`Op`), or its backward mirror."""
        m = self.m
        if marker == "tp_regather":
            self.tp_regather(f"{name}.{op.name}")
        elif marker == "tp_gather":
            self.tp_gather(f"{name}.{op.name}", backward=backward)
        elif marker == "tp_reduce":
            self.tp_reduce(f"{name}.{op.name}", backward=backward)
        elif marker == "cp_gather" and m.cp > 1:
            if backward:
                self.b.coll(f"{name}.cp_reduce_scatter", CommType.REDUCE_SCATTER, op.comm_bytes, "cp")
            else:
                self.b.all_gather(f"{name}.cp_all_gather", op.comm_bytes, "cp")
        elif marker == "a2a" and m.ep > 1:
            self.b.coll(f"{name}.{a2a}_all_to_all", CommType.ALL_TO_ALL, m.a2a_bytes, "ep")

    def add_grads(self, dense: int, expert: int, step: int) -> None:
        """Count finished gradients into the open bucket; issue it once it holds ``bucket_bytes``
        (ZeRO-3: every layer's gradients at once)."""
        self.open.params["dp"] += dense
        self.open.params["edp"] += expert
        full = sum(self.open.params.values()) * self.m.grad_bytes >= self.m.bucket_bytes
        if full or self.m.zero == 3:
            self.flush(step)

    def flush(self, step: int) -> None:
        """Issue the open bucket's gradient collectives (all-reduce at ZeRO 0, else reduce-scatter);
        keep the bucket for the optimizer when it comes from a chunk's last backward."""
        m, b = self.m, self.b
        bucket, self.open = self.open.params, _Bucket()
        if not any(bucket.values()):
            return
        kind = CommType.ALL_REDUCE if m.zero == 0 else CommType.REDUCE_SCATTER
        label = "all_reduce" if m.zero == 0 else "reduce_scatter"
        for group, params in bucket.items():
            if params and self.group_exists(group):
                self.grad_colls.append(b.coll(f"s{step}.grad_bucket{self.issued}.{group}_{label}", kind,
                                              params * m.grad_bytes, group, blocking=False))
        self.issued += 1
        if self.final:
            self.buckets.append(bucket)

    def group_exists(self, group: str) -> bool:
        """Whether this stage's ranks have a ``group`` (``dp`` or ``edp``) of two or more ranks."""
        return self.m.group_size(group) > 1

    def finish_step(self, step: int) -> None:
        """The tied-embedding all-reduce, the optimizer step and (ZeRO 1-2) the parameter gathers."""
        m, b = self.m, self.b
        first_or_last = self.stage in (0, m.pp - 1)
        if m.pp > 1 and m.tie_embeddings and first_or_last:
            b.coll(f"s{step}.embedding_grad_all_reduce", CommType.ALL_REDUCE,
                   m.vocab * m.hidden // m.tp * m.grad_bytes, "emb")
        dense = sum(bk["dp"] for bk in self.buckets)
        expert = sum(bk["edp"] for bk in self.buckets)
        if m.zero >= 1:
            dense //= m.group_size("dp")
            expert //= m.group_size("edp")
        b.comp(f"s{step}.optimizer", optimizer_op(dense + expert), self.grad_colls)
        self.grad_colls = []
        if m.zero in (1, 2):
            for i, bk in enumerate(self.buckets):
                for group, params in bk.items():
                    if params and self.group_exists(group):
                        b.pending.append(b.all_gather(f"s{step}.param_bucket{i}.{group}_all_gather",
                                                      params * m.dtype_bytes, group, blocking=False))
        self.buckets = []
        self.issued = 0


def check_nodes(m: Model, layer_passes: int, generator: str, counted: str) -> None:
    """Raise ConfigError unless a rank's compute nodes, ``layer_passes`` times the compute ops of
    one layer's forward (a lower bound of its nodes), are within the ``nodes`` limit
    (``CHAKRA_MAX_NODES``); ``counted`` words the passes (``"steps * micro_batches * ..."``).
    Checked before any template is built, so that an absurd size fails at once."""
    ops = len(forward_ops(m, False))
    check_limit("nodes", layer_passes * ops, f"generator {generator!r}: compute nodes per rank {counted} * "
                f"{ops} ops of a layer =", error=ConfigError)


#: the largest value the generator writes in a node's integer fields (``num_ops`` and
#: ``comm_size`` are int64; ``tensor_size``, a uint64, is held to the same bound)
INT64_MAX = 2**63 - 1
#: the options of the shape behind the symbols of :data:`GROWS_WITH` (``T``, ``c``, ``P``: the generator's)
_SHAPE_SYMBOLS = {"h": "hidden", "q": "hidden, kv_heads", "f": "ffn", "E": "experts", "k": "topk", "V": "vocab"}
#: a size the options give some node: ``(what, value, the options it grows with)``
Size = tuple[str, int, str]


def op_sizes(ops: Iterable[Op], symbols: Mapping[str, str]) -> Iterator[Size]:
    """The FLOPs and bytes of each of ``ops`` with the options they grow with (:data:`GROWS_WITH`;
    ``symbols``: the options of ``T``, ``c`` and ``P``)."""
    names = {**_SHAPE_SYMBOLS, **symbols}
    for op in ops:
        grows = dict.fromkeys(o for sym in GROWS_WITH[op.name.removesuffix("_bwd")].split()
                              for o in names[sym].split(", "))
        yield f"the {op.name} node's num_ops (FLOPs)", op.flops, ", ".join(grows)
        yield f"the {op.name} node's tensor_size (bytes)", op.bytes, ", ".join(grows)


def check_fits(generator: str, sizes: Iterable[Size]) -> None:
    """Raise ConfigError naming the first of ``sizes`` past :data:`INT64_MAX` and the options it
    grows with.  Checked with the options, before anything is built: such a value does not fit
    the field a node would carry it in."""
    for what, value, grows in sizes:
        if value > INT64_MAX:
            raise ConfigError(f"generator {generator!r}: {what} would be {value:,}, which does not fit a trace's "
                              f"64-bit field (at most 2**63-1): it grows with the options {grows}; make them smaller")


def build_stage(model: Model, device: Device, stage: int) -> Template:
    """The template of pipeline stage ``stage``."""
    return _Stage(model, device, stage).build()
