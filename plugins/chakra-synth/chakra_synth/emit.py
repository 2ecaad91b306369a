"""From generated node batches to a valid, lazily read TraceSet, in flat memory.

A synthesizer describes each rank class as a :class:`ClassStream`: constant node parts
(``statics``) and a factory of :class:`NodeBatch` arrays.  Each class is serialized once, batch
by batch, into a spill file (a plain ``.et`` in a temporary directory that lives as long as the
set); every rank of the class streams those bytes back with its own suffix appended to its
communication nodes (``pg_name`` of its group, ``comm_src``/``comm_dst`` of its peers): a
repeated protobuf field may be appended to a serialized message.  Before the set is returned,
:func:`check_consistency` proves the two cross-rank rules of ``chakra validate`` on what was
generated: the collectives of every group agree in order, type and size on all its members, and
every send has its receive.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from chakra_core import (
    EtReader,
    EtWriter,
    GeneratedRank,
    GlobalMetadata,
    Node,
    NodeType,
    PluginError,
    TraceSet,
    make_attr,
)

from .layout import WORLD_REF, GroupNames, group_members

__all__ = ["NodeBatch", "ClassStream", "Role", "build_traceset", "static_bytes"]

#: a communication role: ("g", group reference), ("send", peer offset) or ("recv", peer offset)
Role = tuple[str, object]
_ROLE_DTYPE = np.uint16


@dataclass
class NodeBatch:
    """Consecutive nodes ``first_id, first_id + 1, ...``; -1 marks an absent number.

    ``data_ptr``/``data_ids`` (``ctrl_*``) are CSR rows of absolute dependency ids; ``role``
    indexes :attr:`ClassStream.roles` (0: none).
    """

    first_id: int
    static: np.ndarray
    duration: np.ndarray
    size: np.ndarray
    num_ops: np.ndarray
    tag: np.ndarray
    role: np.ndarray
    data_ptr: np.ndarray
    data_ids: np.ndarray
    ctrl_ptr: np.ndarray
    ctrl_ids: np.ndarray


@dataclass
class ClassStream:
    """One rank class: ``statics[k]`` the serialized constant part of static ``k`` (name, type,
    CPU flag, ``comm_type``, root), ``static_type``/``static_comm_type`` their node and
    collective types, ``roles`` (index 0 unused) and ``batches()`` the nodes."""

    statics: list[bytes]
    static_type: list[int]
    static_comm_type: list[int]
    roles: list[Role]
    batches: Callable[[], Iterator[NodeBatch]]
    nodes: int = 0
    comm_log: dict[Role, list[tuple[int, int, int]]] = field(default_factory=dict)


def static_bytes(name: str, node_type: int, cpu: bool, comm_type: int, root: int) -> bytes:
    """The constant part of a generated node, serialized."""
    n = Node(name=name, type=node_type)
    n.attr.append(make_attr("is_cpu_op", cpu))
    if node_type == NodeType.COMM_COLL_NODE:
        n.attr.append(make_attr("comm_type", comm_type))
        if root >= 0:
            n.attr.append(make_attr("root", root))
    return n.SerializeToString()


_SIZE_ATTR = {NodeType.COMM_COLL_NODE: "comm_size", NodeType.COMM_SEND_NODE: "comm_size",
              NodeType.COMM_RECV_NODE: "comm_size", NodeType.MEM_LOAD_NODE: "tensor_size",
              NodeType.MEM_STORE_NODE: "tensor_size"}


def _serialize(b: NodeBatch, cls: ClassStream) -> list[bytes]:
    """The node messages of one batch, without the per-rank suffixes; logs its communication."""
    statics, types = cls.statics, cls.static_type
    st, dur, size, ops, tag, role = (a.tolist() for a in (b.static, b.duration, b.size, b.num_ops, b.tag, b.role))
    dp, di, cp, ci = b.data_ptr.tolist(), b.data_ids.tolist(), b.ctrl_ptr.tolist(), b.ctrl_ids.tolist()
    out = []
    log = cls.comm_log
    for i in range(len(st)):
        n = Node(id=b.first_id + i, duration_micros=max(dur[i], 0))  # none drawn (-1): unset, as size
        if dp[i + 1] > dp[i]:
            n.data_deps.extend(di[dp[i]:dp[i + 1]])
        if cp[i + 1] > cp[i]:
            n.ctrl_deps.extend(ci[cp[i]:cp[i + 1]])
        k = st[i]
        if size[i] >= 0:
            n.attr.append(make_attr(_SIZE_ATTR.get(types[k], "comm_size"), size[i]))
        if ops[i] >= 0:
            n.attr.append(make_attr("num_ops", ops[i]))
        if tag[i] >= 0:
            n.attr.append(make_attr("comm_tag", tag[i]))
        if role[i]:
            log.setdefault(cls.roles[role[i]], []).append((cls.static_comm_type[k], max(size[i], 0), tag[i]))
        out.append(n.SerializeToString() + statics[k])
    return out


def _spill(cls: ClassStream, directory: Path, index: int) -> tuple[Path, Path]:
    """Serialize class ``index`` into ``directory``; return the node file and the role file."""
    nodes, roles = directory / f"class{index}.et", directory / f"class{index}.roles"
    with EtWriter(nodes, GlobalMetadata(version="0.0.4")) as w, open(roles, "wb") as rf:
        for batch in cls.batches():
            for data in _serialize(batch, cls):
                w.write_raw(data)
            rf.write(np.asarray(batch.role, dtype=_ROLE_DTYPE).tobytes())
            cls.nodes += len(batch.static)
    return nodes, roles


class SynthRank(GeneratedRank):
    """One generated rank: its class's spilled nodes with this rank's suffixes."""

    def __init__(self, rank: int, metadata: GlobalMetadata, spill: tuple[Path, Path], suffixes: list[bytes],
                 keep_alive: object):
        super().__init__(rank, metadata, self._decode)
        self._spill = spill
        self._suffixes = suffixes
        self._keep_alive = keep_alive

    def raw(self) -> Iterator[bytes]:
        """Serialized node messages of this rank, in id order."""
        sfx = self._suffixes
        with open(self._spill[1], "rb") as rf:
            roles: list[int] = []
            at = 0
            for data in EtReader(self._spill[0]).raw():
                if at == len(roles):
                    roles = np.frombuffer(rf.read(2 * 65536), dtype=_ROLE_DTYPE).tolist()
                    at = 0
                r = roles[at]
                at += 1
                yield data + sfx[r] if r else data

    def _decode(self) -> Iterator[Node]:
        return (Node.FromString(b) for b in self.raw())


def _suffix(role: Role, rank: int, tile: int, names: GroupNames) -> bytes:
    n = Node()
    kind, value = role
    if kind == "g":
        n.attr.append(make_attr("pg_name", names.name(str(value), rank)))
    else:
        peer = (rank // tile) * tile + (rank % tile + int(str(value))) % tile
        src, dst = (rank, peer) if kind == "send" else (peer, rank)
        n.attr.append(make_attr("comm_src", src))
        n.attr.append(make_attr("comm_dst", dst))
    return n.SerializeToString()


#: why a generated set can fail the cross-rank check: the model is read as it is
_DISAGREE = "(the rank classes disagree: a model file changed by hand, or a synthesizer bug)"


def check_consistency(classes: Sequence[ClassStream], tile_classes: Sequence[int]) -> None:
    """Raise PluginError unless the generated classes pass the cross-rank rules (module doc)."""
    tile = len(tile_classes)
    for p, c in enumerate(tile_classes):
        for role in classes[c].roles[1:]:
            if role[0] != "g":
                continue
            ref = str(role[1])
            members = set(group_members(ref, p, tile, tile))  # the group's positions in one tile
            digests = {q: _digest(classes[tile_classes[q]].comm_log.get(("g", _ref_from(ref, members, q, tile)), []))
                       for q in sorted(members)}
            if len(set(digests.values())) > 1:
                raise PluginError(f"generated collectives of group {ref!r} (of tile position {p}) differ between "
                                  f"tile positions {sorted(digests)} {_DISAGREE}")
    sends: Counter = Counter()
    recvs: Counter = Counter()
    for p, c in enumerate(tile_classes):
        for role, log in classes[c].comm_log.items():
            if role[0] in ("send", "recv"):
                q = (p + int(str(role[1]))) % tile
                pair = (p, q) if role[0] == "send" else (q, p)
                (sends if role[0] == "send" else recvs).update((*pair, tag, size) for _ct, size, tag in log)
    if sends != recvs:
        odd = next(iter((sends - recvs) or (recvs - sends)))
        raise PluginError(f"a generated send or receive (src, dst, tag, size) {odd} has no partner {_DISAGREE}")


def _ref_from(ref: str, positions: set[int], q: int, tile: int) -> str:
    """The reference of the same group as tile position ``q`` sees it."""
    if ref == WORLD_REF:
        return ref
    return ref[:2] + ",".join(str(x) for x in sorted((m - q) % tile for m in positions))


def _digest_all(logs: Mapping[Role, list[tuple[int, int, int]]]) -> str:
    return hashlib.sha256(repr(sorted((repr(k), v) for k, v in logs.items())).encode()).hexdigest()


def _digest(log: list[tuple[int, int, int]]) -> str:
    return hashlib.sha256(repr([(ct, size) for ct, size, _tag in log]).encode()).hexdigest()


def build_traceset(classes: Sequence[ClassStream], tile_classes: Sequence[int], stream_of: Callable[[int], int],
                   ranks: int, metadata: GlobalMetadata, source: str) -> TraceSet:
    """Spill every stream, check the set, and return ``ranks`` ranks (a whole number of tiles):
    rank ``r`` reads stream ``stream_of(r)``, which communicates exactly as stream
    ``tile_classes[r % tile]`` (the one the cross-rank check runs on)."""
    tmp = tempfile.TemporaryDirectory(prefix="chakra-synth-")
    try:
        spills = [_spill(c, Path(tmp.name), k) for k, c in enumerate(classes)]
    except BaseException:
        tmp.cleanup()
        raise
    check_consistency(classes, tile_classes)
    tile = len(tile_classes)
    digests = [_digest_all(c.comm_log) for c in classes]
    for rank in range(ranks):
        if digests[stream_of(rank)] != digests[tile_classes[rank % tile]]:
            raise PluginError(f"generated rank {rank} communicates unlike its rank class {_DISAGREE}")
    names = GroupNames(tile, ranks)
    out = []
    for rank in range(ranks):
        c = stream_of(rank)
        sfx = [b""] + [_suffix(role, rank, tile, names) for role in classes[c].roles[1:]]
        meta = GlobalMetadata()
        meta.CopyFrom(metadata)
        out.append(SynthRank(rank, meta, spills[c], sfx, tmp))
    return TraceSet(out, process_groups=names.groups, source=source)
