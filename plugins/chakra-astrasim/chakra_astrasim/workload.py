"""Convert one rank's nodes into what ASTRA-sim runs.

Per node, only the slots ASTRA-sim reads are written (id, name, type, deps, duration and the
attributes of the spec, each in its conventional slot).  Nodes ASTRA-sim cannot run
(METADATA, INVALID, bookkeeping CPU ops, memory nodes without remote memory, ...) are removed;
a node that depended on a removed node depends instead on the removed node's nearest kept
ancestors.  When a removed node would hand more than ``join_limit`` such ancestors to more than
one dependent, it is kept as a 0-duration CPU "join" node instead, so that the number of edges
stays linear in the input.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from chakra_core import CommType, DepGraph, Node, NodeAttrs, NodeType, RankTrace, TraceFormatError, add_attr
from chakra_core.system import roofline_ns

from .collectives import MODELLED, rewrite
from .plan import Plan
from .report import ExportReport
from .spill import NodeSpill

__all__ = ["RankInput", "RankOutput", "read_rank", "convert_rank", "idle_node"]

_INT32 = (-(1 << 31), (1 << 31) - 1)
#: largest value of the int64 slots ASTRA-sim reads (comm_size, num_ops).
_INT64_MAX = (1 << 63) - 1


@dataclass
class RankInput:
    """One rank read once, undecoded: its nodes spilled to disk in file order, and the bytes of
    the nodes that hold a ``pg_name`` attribute, by position."""

    spill: NodeSpill
    pg_raws: dict[int, bytes]


@dataclass
class _Arrays:
    """Ids and dependencies of a rank: node ``i`` depends on ``dep_ids[dep_ptr[i]:dep_ptr[i+1]]``,
    its ``n_data[i]`` data deps first, then its ctrl deps."""

    ids: array
    dep_ptr: array
    dep_ids: array
    n_data: array


@dataclass
class RankOutput:
    """One converted rank: its nodes in a topological order (serialized, on disk), the
    collectives it issues per ASTRA-sim group (``[(node_id, comm_type, comm_size), ...]``), its
    point-to-point messages ``(src, dst, tag, size)``, per input collective ``(input position,
    group, group size, [output node ids])`` (empty ids when it was removed), and the output
    position of every collective node by id."""

    nodes: NodeSpill
    collectives: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)
    sends: list[tuple[int, int, int, int]] = field(default_factory=list)
    recvs: list[tuple[int, int, int, int]] = field(default_factory=list)
    coll_inputs: list[tuple[int, str, int, list[int]]] = field(default_factory=list)
    coll_pos: dict[int, int] = field(default_factory=dict)


def idle_node(rank: int, plan: Plan) -> Node:
    """The one node given to a rank that would otherwise be empty (ASTRA-sim aborts on those):
    a 0-duration accelerator compute node (1 ns, replayed or under roofline)."""
    n = Node(id=1, name=f"astrasim_idle_rank{rank}", type=NodeType.COMP_NODE, duration_micros=0)
    add_attr(n, "is_cpu_op", False)
    if plan.roofline:
        add_attr(n, "num_ops", roofline_ops(0, plan.peak_perf))
        add_attr(n, "tensor_size", 1)
    return n


def roofline_ops(ns: int, peak_tflops: float) -> int:
    """num_ops that ASTRA-sim's roofline times as exactly ``max(ns, 1)`` ns at ``peak_tflops``
    when the node is compute-bound (tensor_size 1): the extra half ns keeps the truncation to
    whole ns from losing one to floating-point rounding.  Never 0 ns: ASTRA-sim asserts that
    every event lies in the future, and replays a 0-us node as 1 ns."""
    return int((max(ns, 1) + 0.5) * peak_tflops * 1000)


class _Converter:
    """Per-node conversion for one rank (see :func:`convert_rank`)."""

    def __init__(self, rank: int, plan: Plan, report: ExportReport, where: str, next_id: int):
        self.rank = rank
        self.plan = plan
        self.report = report
        self.where = where
        self.next_id = next_id
        self.out = RankOutput(NodeSpill())
        self.pos = 0
        self.inserted: dict[int, int] = {}

    def fail(self, node: Node, message: str) -> TraceFormatError:
        return TraceFormatError(message, self.where, f"node {node.id}")

    @staticmethod
    def drop(reason: str) -> str:
        """A removal: the reason is returned instead of nodes (counted by the caller)."""
        return reason

    # -- durations ---------------------------------------------------------------------------
    def exact_ns(self, n: Node, ix: NodeAttrs) -> tuple[int, bool]:
        """Duration in ns: the ``duration_attr`` attribute when present, else duration_micros."""
        if self.plan.duration_attr:
            v = ix.get_int(self.plan.duration_attr)
            if v is not None and v >= 0:
                return v, True
        return n.duration_micros * 1000, False

    def set_duration(self, out: Node, ns: int, exact: bool, original_us: int) -> None:
        if exact:
            us = (ns + 500) // 1000
            if ns % 1000:
                self.report.changed["duration_rounded_to_us"] += 1
                self.report.changed["rounding_error_ns_total"] += abs(us * 1000 - ns)
            out.duration_micros = us
        else:
            out.duration_micros = original_us

    # -- node kinds --------------------------------------------------------------------------
    def convert(self, n: Node) -> list[Node] | str:
        t = n.type
        ix = NodeAttrs(n)
        if t == NodeType.COMP_NODE:
            return self.comp(n, ix)
        if t == NodeType.COMM_COLL_NODE:
            return self.coll(n, ix)
        if t in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE):
            return self.p2p(n, ix)
        if t in (NodeType.MEM_LOAD_NODE, NodeType.MEM_STORE_NODE):
            if not self.plan.keep_memory:
                return self.drop("memory_node_without_remote_memory")
            out = Node(id=n.id, name=n.name, type=t)
            add_attr(out, "is_cpu_op", False)
            add_attr(out, "tensor_size", max(0, ix.get_int("tensor_size", 0)))
            return [out]
        if t == NodeType.METADATA_NODE:
            return self.drop("METADATA_NODE")
        if t == NodeType.INVALID_NODE:
            return self.drop("INVALID_NODE")
        return self.drop("unknown_node_type")  # a newer schema's node type (storage, checkpoint, ...)

    def comp(self, n: Node, ix: NodeAttrs) -> list[Node] | str:
        plan = self.plan
        cpu = bool(ix.get_int("is_cpu_op", 0))
        ns, exact = self.exact_ns(n, ix)
        if cpu and plan.cpu_ops == "drop":
            return self.drop("cpu_op")
        if cpu and plan.cpu_ops == "drop_zero" and ns == 0:
            return self.drop("cpu_op_zero_duration")
        out = Node(id=n.id, name=n.name, type=NodeType.COMP_NODE)
        add_attr(out, "is_cpu_op", cpu)
        self.set_duration(out, ns, exact, n.duration_micros)
        if plan.roofline and not cpu:
            ops, size = self.roofline_pair(ix, ns)
            add_attr(out, "num_ops", ops)
            add_attr(out, "tensor_size", size)
        return [out]

    def roofline_pair(self, ix: NodeAttrs, ns: int) -> tuple[int, int]:
        """(num_ops, tensor_size) for a GPU compute node under roofline timing."""
        if self.plan.keep_num_ops:
            ops = ix.get("num_ops")
            size = ix.get_int("tensor_size", 0)
            if isinstance(ops, float):
                ops = int(round(ops)) if math.isfinite(ops) else None
                if ops is not None:
                    self.report.changed["num_ops_float_to_int"] += 1
            if isinstance(ops, int) and not isinstance(ops, bool) and 0 < ops <= _INT64_MAX and size > 0:
                if roofline_ns(ops, size, self.plan.peak_perf, self.plan.local_mem_bw) >= 1:
                    return ops, size
                self.report.changed["roofline_zero_time_raised_to_1ns"] += 1
                return roofline_ops(1, self.plan.peak_perf), 1
            self.report.changed["roofline_filled_from_duration"] += 1
        else:
            self.report.changed["duration_encoded_as_roofline"] += 1
        if ns < 1:
            self.report.changed["roofline_zero_time_raised_to_1ns"] += 1
        return roofline_ops(ns, self.plan.peak_perf), 1

    def group_of(self, n: Node, ix: NodeAttrs) -> tuple[str, frozenset[int]]:
        pg = ix.get_str("pg_name", "")
        if pg in ("", "0"):
            out = self.plan.world_pg
        elif pg in self.plan.group_map:
            out = self.plan.group_map[pg]
        else:
            raise self.fail(n, f"collective names process group {pg!r}, which the trace set does not "
                               "define (give its ranks with --comm-groups)")
        members = self.plan.members[out]
        if self.rank not in members:
            raise self.fail(n, f"rank {self.rank} issues a collective on group {pg!r}, "
                               f"which does not contain it")
        return out, members

    def coll(self, n: Node, ix: NodeAttrs) -> list[Node] | str:
        """A collective as the ASTRA-sim collectives that replay it (one, or a rewrite's
        sequence), or the reason it is dropped."""
        kind = self.comm_type(n, ix)
        pg, members = self.group_of(n, ix)
        produced: list[int] = []
        self.out.coll_inputs.append((self.pos, pg, len(members), produced))
        if len(members) < 2:
            return self.drop("collective_on_one_rank")
        pairs = self.replayed(n, kind, self.coll_size(n, ix), len(members))
        if isinstance(pairs, str):
            return pairs
        self.note_cpu_op(ix)
        dims = self.involved_dim(ix)
        prio = ix.get_int("comm_priority")
        seq = self.out.collectives.setdefault(pg, [])
        outs = []
        for i, (k, s) in enumerate(pairs):
            s = self.replayable_size(k, s)
            out = self.coll_node(n, i, len(pairs), k, s)
            if pg:
                add_attr(out, "pg_name", pg)
            if prio is not None and _INT32[0] <= prio <= _INT32[1]:
                add_attr(out, "comm_priority", prio)
            if dims is not None:
                add_attr(out, "involved_dim", dims)
            outs.append(out)
            seq.append((out.id, int(k), int(s)))
        produced.extend(o.id for o in outs)
        return outs

    def comm_type(self, n: Node, ix: NodeAttrs) -> CommType:
        """The collective's ``comm_type``; an unknown one is an error."""
        raw = ix.get_int("comm_type")
        try:
            return CommType(raw)
        except (ValueError, TypeError):
            raise self.fail(n, f"collective without a known comm_type (got {raw!r})") from None

    def coll_size(self, n: Node, ix: NodeAttrs) -> int:
        """The collective's ``comm_size`` in bytes (0 when missing, counted)."""
        size = ix.get_int("comm_size")
        if size is None:
            self.report.changed["comm_size_missing"] += 1
            size = 0
        self.check_size(n, "comm_size", size)
        return size

    def check_size(self, n: Node, key: str, size: int) -> None:
        """A size in bytes that ASTRA-sim's int64 slot cannot hold is an error."""
        if size > _INT64_MAX:
            raise self.fail(n, f"{key} {size} does not fit the int64 slot ASTRA-sim reads")
        if size < 0:
            raise self.fail(n, f"{key} {size} is negative (a size in bytes)")

    def replayed(self, n: Node, kind: CommType, size: int, ranks: int) -> list[tuple[CommType, int]] | str:
        """The ``(kind, bytes)`` collectives ASTRA-sim runs for this one, by ``unsupported``
        for a kind it does not model, or the reason to drop it."""
        plan = self.plan
        replay = plan.replay_broadcast
        if replay is None:  # as the simpy backend: ASTRA-sim replays a duration, there is one
            replay = n.duration_micros > 0
        if kind in MODELLED or (kind == CommType.BROADCAST and replay):
            return [(kind, size)]
        if plan.unsupported == "error":
            raise self.fail(n, f"ASTRA-sim does not run {kind.name} collectives "
                               "(use -O unsupported=rewrite or drop)")
        if plan.unsupported == "drop":
            return self.drop(f"collective_{kind.name}")
        pairs = rewrite(kind, size, ranks, plan.barrier_bytes)
        self.report.rewritten[f"{kind.name}->" + "+".join(k.name for k, _ in pairs)] += 1
        return pairs

    def note_cpu_op(self, ix: NodeAttrs) -> None:
        """Count a communication node marked ``is_cpu_op`` (the output clears it)."""
        if ix.get_int("is_cpu_op", 0):
            self.report.changed["comm_is_cpu_op_cleared"] += 1

    def involved_dim(self, ix: NodeAttrs) -> list[bool] | None:
        """``involved_dim`` when it is one bool per network dimension with one set; else None
        (a present one dropped is counted)."""
        dims = ix.get("involved_dim")
        if dims is not None and (not isinstance(dims, list) or len(dims) != self.plan.ndims
                                 or not all(isinstance(d, bool) for d in dims) or not any(dims)):
            self.report.changed["involved_dim_dropped"] += 1
            return None
        return dims

    def replayable_size(self, kind: CommType, size: int) -> int:
        """``size`` raised to what ASTRA-sim can run: at least 1 byte, and for an all-gather at
        least the dataset splits (its chunk is size // splits, and a 0 chunk divides by zero)."""
        if size <= 0:
            self.report.changed["comm_size_raised_to_1"] += 1
            size = 1
        if kind == CommType.ALL_GATHER and size < self.plan.splits:
            self.report.changed["all_gather_size_raised_to_splits"] += 1
            size = self.plan.splits
        return size

    def coll_node(self, n: Node, i: int, count: int, kind: CommType, size: int) -> Node:
        """Collective ``i`` of the ``count`` that replay ``n``: the last keeps ``n``'s id and
        name, the others get new ids placed before it and ``#i`` names."""
        last = i == count - 1
        nid = n.id if last else self.new_id(before=n.id)
        out = Node(id=nid, name=n.name if last else f"{n.name}#{i}", type=NodeType.COMM_COLL_NODE)
        if kind == CommType.BROADCAST:
            out.duration_micros = n.duration_micros
        add_attr(out, "is_cpu_op", False)
        add_attr(out, "comm_type", int(kind))
        add_attr(out, "comm_size", int(size))
        return out

    def p2p(self, n: Node, ix: NodeAttrs) -> list[Node] | str:
        plan, rep = self.plan, self.report
        send = n.type == NodeType.COMM_SEND_NODE
        peer = ix.get_int("comm_dst" if send else "comm_src")
        key = "comm_size"
        size = ix.get_int(key)
        if size is None:
            key = "tensor_size"
            size = ix.get_int(key)
        if peer is None or size is None:
            what = "peer" if peer is None else "size"
            if plan.incomplete_p2p == "error":
                raise self.fail(n, f"{'send' if send else 'recv'} without a {what} "
                                   f"({'comm_dst' if send else 'comm_src'}, comm_size)")
            return self.drop(f"{'send' if send else 'recv'}_without_{what}")
        self.check_size(n, key, size)
        if not 0 <= peer < plan.npus:
            raise self.fail(n, f"peer rank {peer} is outside the network's {plan.npus} NPUs")
        if peer == self.rank:
            return self.drop("p2p_to_self")
        own = ix.get_int("comm_src" if send else "comm_dst")
        if own is not None and own != self.rank:
            rep.changed["p2p_own_rank_corrected"] += 1
        tag = ix.get_int("comm_tag")
        if tag is None:
            rep.changed["p2p_tag_filled_0"] += 1
            tag = 0
        if not _INT32[0] <= tag <= _INT32[1]:
            raise self.fail(n, f"comm_tag {tag} does not fit the int32 slot ASTRA-sim reads")
        self.note_cpu_op(ix)
        src, dst = (self.rank, peer) if send else (peer, self.rank)
        out = Node(id=n.id, name=n.name, type=n.type)
        add_attr(out, "is_cpu_op", False)
        add_attr(out, "comm_src", src)
        add_attr(out, "comm_dst", dst)
        add_attr(out, "comm_tag", tag)
        add_attr(out, "comm_size", size)
        (self.out.sends if send else self.out.recvs).append((src, dst, tag, size))
        return [out]

    def new_id(self, before: int) -> int:
        """A fresh id for a node inserted just before node ``before`` (see :func:`_renumber`)."""
        self.next_id += 1
        self.inserted[self.next_id] = before
        return self.next_id

    def join(self, n: Node) -> Node:
        self.report.dependencies["join_nodes_added"] += 1
        out = Node(id=n.id, name=f"join:{n.name}", type=NodeType.COMP_NODE, duration_micros=0)
        add_attr(out, "is_cpu_op", True)
        return out


#: nodes handed at once to ``read_rank``'s callback.
READ_CHUNK = 4096


def read_rank(rt: RankTrace, on_chunk: Callable[[list[bytes]], None]) -> RankInput:
    """Read ``rt`` once into a :class:`RankInput`, calling ``on_chunk`` with each run of up to
    :data:`READ_CHUNK` nodes' bytes."""
    raw_fn = getattr(rt, "raw", None)
    raws = raw_fn() if raw_fn is not None else (n.SerializeToString() for n in rt.nodes())
    spill = NodeSpill()
    pg_raws: dict[int, bytes] = {}
    chunk: list[bytes] = []
    try:
        for raw in raws:
            chunk.append(raw)
            if len(chunk) == READ_CHUNK:
                _take(chunk, spill, pg_raws, on_chunk)
                chunk = []
        if chunk:
            _take(chunk, spill, pg_raws, on_chunk)
    except BaseException:
        spill.discard()
        raise
    return RankInput(spill.close(), pg_raws)


def _take(chunk: list[bytes], spill: NodeSpill, pg_raws: dict[int, bytes],
          on_chunk: Callable[[list[bytes]], None]) -> None:
    """Add one run of nodes to ``spill`` and ``pg_raws`` (the nodes holding ``pg_name``) and
    hand it to ``on_chunk``."""
    base = len(spill)
    for k, raw in enumerate(chunk):
        if b"pg_name" in raw:
            pg_raws[base + k] = raw
    on_chunk(chunk)
    spill.extend(chunk)


def _arrays(spill: NodeSpill) -> _Arrays:
    """Ids and dependencies of the nodes of ``spill`` (read by :func:`read_rank`, whose reader
    has checked that they decode)."""
    ids, dep_ids, n_data = array("Q"), array("Q"), array("l")
    ptr = array("q", [0])
    for batch in spill.batches():
        for n in batch:
            ids.append(n.id)
            dep_ids.extend(n.data_deps)
            n_data.append(len(n.data_deps))
            dep_ids.extend(n.ctrl_deps)
            ptr.append(len(dep_ids))
    return _Arrays(ids, ptr, dep_ids, n_data)


def _graph(inp: _Arrays, report: ExportReport, where: str) -> tuple[DepGraph, np.ndarray]:
    """The rank's graph with dangling and self dependencies dropped (counted in ``report``),
    and its topological order (file order when it already is one)."""
    g = DepGraph(_view(inp.ids, np.uint64), _view(inp.dep_ptr, np.int64), _view(inp.dep_ids, np.uint64))
    if g.duplicates:
        nid = g.duplicates[0]
        raise TraceFormatError(f"node id {nid} appears twice", where, f"node {nid}")
    dep = report.dependencies
    dangling = len(g.missing)
    if dangling:
        dep["dangling_dropped"] += dangling
    self_deps = g.drop_self_deps()
    if self_deps:
        dep["self_dropped"] += self_deps
    order, left = g.topo_order()
    if left:
        raise TraceFormatError("dependency cycle", where, f"node {inp.ids[left[0]]}")
    return g, order


def _view(a: array, dtype: type) -> np.ndarray:
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype=dtype)


def _dep_lists(g: DepGraph, n_data: np.ndarray, positions: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    """For ``positions``: CSR pointers into the returned dependency positions, and the number
    of data deps of each (the rest are ctrl deps)."""
    ptr, deps = g.rows(positions)
    return ptr.tolist(), deps.tolist(), n_data[positions].tolist()


def convert_rank(rank: int, rt: RankTrace, inp: RankInput, plan: Plan, report: ExportReport) -> RankOutput:
    """Convert the rank ``rank`` (``rt``, read by :func:`read_rank`) under ``plan``; counts go
    to ``report``.

    Raises TraceFormatError naming the file and node for duplicate ids, dependency cycles and
    nodes ASTRA-sim cannot run that no option can fix (unknown comm_type, undefined group).
    """
    where = rt.label
    arrays = _arrays(inp.spill)
    count = len(arrays.ids)
    report.nodes_in += count
    g, order = _graph(arrays, report, where)
    conv = _Converter(rank, plan, report, where, int(g.ids.max()) if count else 0)
    try:
        _convert_all(conv, inp.spill, arrays, g, order)
    except BaseException:
        conv.out.nodes.discard()
        raise
    result = conv.out
    result.nodes.close()
    if conv.inserted:
        _renumber(result, conv.inserted)
        report.changed["ranks_renumbered_for_inserted_nodes"] += 1
    report.nodes_out += len(result.nodes)
    return result


def _convert_all(conv: _Converter, spill: NodeSpill, arrays: _Arrays, g: DepGraph, order: np.ndarray) -> None:
    """Convert every node of ``spill`` in ``order``, writing the kept ones to ``conv.out.nodes``."""
    n_data = _view(arrays.n_data, np.int64)
    frontier = _Frontier(arrays.ids, g)
    source = spill if _is_identity(order) else spill.reordered(order)
    at = 0
    for nodes in source.batches():
        batch = list(nodes)
        positions = order[at:at + len(batch)]
        ptr, deps, ndata = _dep_lists(g, n_data, positions)
        for k, n in enumerate(batch):
            lo, mid, hi = ptr[k], ptr[k] + ndata[k], ptr[k + 1]
            _convert_one(conv, frontier, n, int(positions[k]), deps[lo:mid], deps[mid:hi])
        at += len(batch)
    if source is not spill:
        source.discard()
    if frontier.rewired:
        conv.report.dependencies["rewired_through_removed"] += frontier.rewired


class _Frontier:
    """Which positions were kept, and for a removed node the kept ids its dependents depend on
    instead: remembered until its last dependent is converted."""

    def __init__(self, ids_of: array, g: DepGraph):
        self.ids_of = ids_of
        self.kept = bytearray(len(ids_of))
        #: per position, how many dependents are still to be converted
        self.waiting = array("q", np.bincount(g.deps[g.deps >= 0], minlength=len(ids_of)).tobytes()) \
            if len(ids_of) else array("q")
        self.through: dict[int, list[int]] = {}
        #: dependencies that now point past a removed node
        self.rewired = 0

    def resolve(self, positions: list[int]) -> list[int]:
        """The ids a dependent of ``positions`` depends on: a kept node's own id, a removed
        node's kept ancestors."""
        out: list[int] = []
        for j in positions:
            if self.kept[j]:
                out.append(self.ids_of[j])
            else:
                via = self.through[j]
                self.rewired += len(via)
                out.extend(via)
                self.waiting[j] -= 1
                if not self.waiting[j]:
                    del self.through[j]
        return out

    def remove(self, i: int, through: list[int]) -> None:
        """Position ``i`` is removed; its dependents depend on ``through`` instead."""
        if self.waiting[i]:
            self.through[i] = through


def _convert_one(conv: _Converter, frontier: _Frontier, n: Node, i: int, data_deps: Sequence[int],
                 ctrl_deps: Sequence[int]) -> None:
    """Convert node ``n`` at position ``i`` (dependency positions ``data_deps``, ``ctrl_deps``,
    -1 for missing) and write what it becomes.  A removed node with many dependents and more
    than ``join_limit`` kept ancestors becomes a join node instead, so that its dependents do
    not each inherit every ancestor."""
    conv.pos = i
    converted = conv.convert(n)
    data = frontier.resolve([j for j in data_deps if j >= 0])
    ctrl = frontier.resolve([j for j in ctrl_deps if j >= 0])
    if isinstance(converted, str):
        through = list(dict.fromkeys(data + ctrl))
        if len(through) <= conv.plan.join_limit or frontier.waiting[i] <= 1:
            conv.report.removed[converted] += 1
            frontier.remove(i, through)
            return
        converted = [conv.join(n)]
    frontier.kept[i] = True
    _link(converted, data, ctrl)
    _write(conv.out, converted)


def _link(converted: list[Node], data: list[int], ctrl: list[int]) -> None:
    """The first node gets the dependencies (each once, data before ctrl), each later node a
    data dependency on the one before it."""
    first = converted[0]
    if len(data) > 1:
        data = list(dict.fromkeys(data))
    if ctrl:
        seen = set(data)
        first.ctrl_deps.extend([c for c in dict.fromkeys(ctrl) if c not in seen])
    if data:
        first.data_deps.extend(data)
    for prev, nxt in zip(converted, converted[1:]):
        nxt.data_deps.append(prev.id)


def _write(out: RankOutput, converted: list[Node]) -> None:
    """Append the nodes to the rank's output, noting where each collective is."""
    for o in converted:
        if o.type == NodeType.COMM_COLL_NODE:
            out.coll_pos[o.id] = len(out.nodes)
        out.nodes.append(o.SerializeToString())


def _is_identity(order: np.ndarray) -> bool:
    return bool((order == np.arange(len(order), dtype=order.dtype)).all())


def _renumber(out: RankOutput, inserted: dict[int, int]) -> None:
    """Give the rank's nodes ids 1..N in the order of their original ids, each inserted node
    just before the node it was inserted for.

    ASTRA-sim issues ready nodes in ascending id order: an inserted node with an id above every
    other would otherwise change the order in which this rank issues its collectives (which must
    be the same on every member of a group).
    """
    old = array("Q")
    for batch in out.nodes.batches():
        old.extend(n.id for n in batch)
    ids = _view(old, np.uint64)
    ins_ids = np.array(sorted(inserted), dtype=np.uint64)
    ins_before = np.array([inserted[i] for i in sorted(inserted)], dtype=np.uint64)
    at = np.minimum(np.searchsorted(ins_ids, ids), len(ins_ids) - 1)
    is_ins = ins_ids[at] == ids
    primary = np.where(is_ins, ins_before[at], ids)
    rank = np.empty(len(ids), dtype=np.uint64)
    rank[np.lexsort((np.where(is_ins, ids, 0), np.where(is_ins, 0, 1), primary))] = \
        np.arange(1, len(ids) + 1, dtype=np.uint64)
    by_id = np.argsort(ids)
    sorted_ids = ids[by_id]

    def new(nids: list[int]) -> list[int]:
        return rank[by_id[np.searchsorted(sorted_ids, np.array(nids, dtype=np.uint64))]].tolist()

    renumbered = NodeSpill()
    try:
        for batch in out.nodes.batches():
            fresh = new([n.id for n in batch])
            for n, nid in zip(batch, fresh):
                n.id = nid
                if n.data_deps:
                    deps = new(list(n.data_deps))
                    del n.data_deps[:]
                    n.data_deps.extend(deps)
                if n.ctrl_deps:
                    deps = new(list(n.ctrl_deps))
                    del n.ctrl_deps[:]
                    n.ctrl_deps.extend(deps)
                renumbered.append(n.SerializeToString())
    except BaseException:
        renumbered.discard()
        raise
    out.nodes.discard()
    out.nodes = renumbered.close()
    for pg, seq in out.collectives.items():
        out.collectives[pg] = list(zip(new([nid for nid, _, _ in seq]), (k for _, k, _ in seq),
                                       (sz for _, _, sz in seq)))
    for _, _, _, nids in out.coll_inputs:
        nids[:] = new(nids) if nids else []
    out.coll_pos = dict(zip(new(list(out.coll_pos)), out.coll_pos.values())) if out.coll_pos else {}
