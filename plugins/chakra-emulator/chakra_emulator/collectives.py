"""Collectives and point-to-point messages of a worker (imported by workers only: needs torch).

Each collective node becomes the call of its kind on its group's ``ProcessGroup`` object (the
method that torch.distributed's function of that kind calls, without that function's Python
checks and logging, which cost 40-100 us per call on a 2-core machine against 15-60 us for the
method: time the recorded job spent in the trace's own host nodes), with buffers
whose byte sizes follow the Chakra meaning of ``comm_size`` (the whole buffer for all-reduce,
broadcast and reduce; the full input for reduce-scatter; the whole send buffer for all-to-all;
the per-rank shard for all-gather and gather and what each rank receives of a scatter; 0 for a
barrier).  Buffers are float32 when the size is a multiple of 4 bytes, else bytes.

A kind the process-group backend lacks (its call raises before any message is sent, the same on
every member) is composed from supported primitives, and the node is marked ``composed``:

- reduce-scatter: an all-reduce of the full input, then the member's chunk is kept;
- all-to-all: one send and one receive per peer, posted together;
- gather / scatter: sends to / receives from the root;
- reduce: an all-reduce (every member receives the result; the root keeps it).

What the worker records of each call (``observed``) is taken from the tensors and group it
handed to torch.distributed: the kind called, the bytes per the meaning above, the group's
global ranks, the root, and the primitives used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from .plan import ROOTED

__all__ = ["Comms"]

#: Chakra kind -> the process group's method tried first (what torch.distributed's function of
#: that kind calls)
_PRIMITIVE = {
    "ALL_REDUCE": "allreduce", "REDUCE": "reduce", "ALL_GATHER": "_allgather_base",
    "GATHER": "gather", "SCATTER": "scatter", "BROADCAST": "broadcast",
    "ALL_TO_ALL": "alltoall_base", "REDUCE_SCATTER": "_reduce_scatter_base",
    "REDUCE_SCATTER_BLOCK": "_reduce_scatter_base", "BARRIER": "barrier",
}


class NoPrimitive(RuntimeError):
    """The process group has no primitive for this call as asked; the call is composed of
    point-to-point messages instead."""


class _Done:
    """A finished piece of work (what a composed collective returns after running)."""

    def wait(self) -> bool:
        return True


class _Many:
    """Several works waited together."""

    def __init__(self, works: list[Any]):
        self.works = works

    def wait(self) -> bool:
        for w in self.works:
            if w is not None:
                w.wait()
        return True


class Comms:
    """The collectives of one worker on ``device`` with its process groups ``groups``
    (pg_name -> (ProcessGroup or None for a non-member, global ranks)); the kinds in
    ``compose`` are composed even where the backend has them."""

    def __init__(self, device: torch.device, rank: int, world: int,
                 groups: dict[str, tuple[Any, list[int]]], compose: set[str] | None = None):
        self.device = device
        self.compose = set(compose or ())
        self.rank = rank
        self.world = world
        self.groups = groups
        self.unsupported: set[str] = set()
        self._buffers: dict[tuple[int, int, int], torch.Tensor] = {}
        self._elem = 4
        default = dist.group.WORLD
        if default is None:
            raise RuntimeError("torch.distributed has no default process group yet")
        self.world_pg: dist.ProcessGroup = default

    def _buf(self, nbytes: int, slot: int) -> torch.Tensor:
        """A reusable buffer of ``nbytes`` bytes, of the element type of the call being started
        (``self._elem``: 4 for float32, 1 for bytes)."""
        key = (nbytes, slot, self._elem)
        t = self._buffers.get(key)
        if t is None:
            t = (torch.ones(nbytes // 4, dtype=torch.float32, device=self.device) if self._elem == 4
                 else torch.ones(nbytes, dtype=torch.uint8, device=self.device))
            self._buffers[key] = t
        return t

    def _group(self, pg: str) -> tuple[Any, list[int]]:
        if pg in self.groups:
            return self.groups[pg]
        return None, list(range(self.world))

    def collective(self, spec: dict[str, Any], observe: bool = True) -> tuple[Any, dict[str, Any] | None]:
        """Start the collective of ``spec``; returns (work with ``wait()``, what was observed of
        the call, or None unless ``observe``)."""
        kind, size = spec["type"], int(spec["size"])
        group, members = self._group(spec["pg"])
        if self.rank not in members:
            raise RuntimeError(f"rank {self.rank} issues a {kind} on group {spec['pg'] or '0'!r}, "
                               f"whose members are {members}")
        root = spec.get("root")
        if root is None:  # the backend says so in a note; a root outside the group it refuses
            root = members[0]
        call = _PRIMITIVE[kind]
        self._elem = 4 if size % 4 == 0 else 1
        composed = call in self.unsupported or kind in self.compose
        work = None
        if not composed:
            try:
                work, used = self._primitive(kind, size, group, members, root), [call]
            except RuntimeError as e:  # torch's "not implemented" errors and NoPrimitive included
                if not _is_unsupported(e):
                    raise
                self.unsupported.add(call)
                composed = True
        if composed:
            work, used = self._composed(kind, size, group, members, root)
        if not observe:
            return work, None
        observed = {"kind": kind, "bytes": 0 if kind == "BARRIER" else _nbytes(self._buf(size, 0)),
                    "group": self._members(group), "root": root if kind in ROOTED else None,
                    "primitives": used, "composed": composed}
        return work, observed

    def _members(self, group: Any) -> list[int]:
        """The global ranks of ``group`` as torch.distributed knows them."""
        return list(range(dist.get_world_size())) if group is None else dist.get_process_group_ranks(group)

    def _primitive(self, kind: str, size: int, group: Any, members: list[int], root: int) -> Any:
        """The call of ``kind`` on the process group object itself (the method torch.distributed's
        function of that kind calls), with ``root`` as the group's own rank."""
        pg = self.world_pg if group is None else group
        p = len(members)
        me = members.index(self.rank)
        if kind == "BARRIER":
            return pg.barrier(_opts(dist.BarrierOptions))
        if kind == "ALL_REDUCE":
            return pg.allreduce([self._buf(size, 0)], _opts(dist.AllreduceOptions))
        if kind == "BROADCAST":
            return pg.broadcast([self._buf(size, 0)], _opts(dist.BroadcastOptions, members.index(root)))
        if kind == "REDUCE":
            return pg.reduce([self._buf(size, 0)], _opts(dist.ReduceOptions, members.index(root)))
        if kind == "ALL_GATHER":
            return pg._allgather_base(self._buf(size * p, 1), self._buf(size, 0))
        if kind == "GATHER":
            out = [[self._buf(size, 2 + j) for j in range(p)]] if self.rank == root else []
            return pg.gather(out, [self._buf(size, 0)], _opts(dist.GatherOptions, members.index(root)))
        if kind == "SCATTER":
            chunks = [[self._buf(size, 2 + j) for j in range(p)]] if self.rank == root else []
            return pg.scatter([self._buf(size, 0)], chunks, _opts(dist.ScatterOptions, members.index(root)))
        if kind == "ALL_TO_ALL":
            splits = _splits(size, p, self._elem)
            received = self._buf(splits[me] * p * self._elem, 1)
            return pg.alltoall_base(received, self._buf(size, 0), [splits[me]] * p, splits,
                                    _opts(dist.AllToAllOptions))
        if size % p:
            raise NoPrimitive("reduce-scatter of a size members cannot split evenly")
        return pg._reduce_scatter_base(self._buf(size // p, 1), self._buf(size, 0), _opts(dist.ReduceScatterOptions))

    def _composed(self, kind: str, size: int, group: Any, members: list[int], root: int) -> tuple[Any, list[str]]:
        compose: dict[str, Callable[[], Any]] = {
            "REDUCE_SCATTER": lambda: self._reduce_scatter(size, group, members),
            "REDUCE_SCATTER_BLOCK": lambda: self._reduce_scatter(size, group, members),
            "ALL_TO_ALL": lambda: self._all_to_all(size, members),
            "GATHER": lambda: self._to_root(size, members, root),
            "SCATTER": lambda: self._from_root(size, members, root),
            "REDUCE": lambda: self._all_reduce(self._buf(size, 0), group),
            "ALL_REDUCE": lambda: self._all_reduce_p2p(size, members),
            "ALL_GATHER": lambda: self._all_gather_p2p(size, members),
            "BROADCAST": lambda: self._from_root(size, members, root, whole=True),
            "BARRIER": lambda: self._all_reduce(self._buf(4, 0), group),
        }
        used = {"REDUCE_SCATTER": ["allreduce"], "REDUCE_SCATTER_BLOCK": ["allreduce"],
                "ALL_TO_ALL": ["send", "recv"], "GATHER": ["send", "recv"], "SCATTER": ["send", "recv"],
                "REDUCE": ["allreduce"], "ALL_REDUCE": ["send", "recv"], "ALL_GATHER": ["send", "recv"],
                "BROADCAST": ["send", "recv"], "BARRIER": ["allreduce"]}
        return compose[kind](), used[kind]

    def _all_reduce(self, buf: torch.Tensor, group: Any) -> Any:
        return (self.world_pg if group is None else group).allreduce([buf], _opts(dist.AllreduceOptions))

    def _reduce_scatter(self, size: int, group: Any, members: list[int]) -> Any:
        return self._all_reduce(self._buf(size, 0), group)

    def _all_to_all(self, size: int, members: list[int]) -> Any:
        """Each member's piece of the buffer (:func:`_splits`, as the primitive splits it) sent to
        it, and this rank's piece received from every other member."""
        p, me = len(members), members.index(self.rank)
        splits = _splits(size, p, self._elem)
        works = []
        for j, peer in enumerate(members):
            if peer == self.rank:
                continue
            if splits[me]:
                works.append(self.world_pg.recv([self._buf(splits[me] * self._elem, 2 + j)], peer, _TAG))
            if splits[j]:
                works.append(self.world_pg.send([self._buf(splits[j] * self._elem, 2 + p + j)], peer, _TAG))
        return _Many(works)

    def _to_root(self, size: int, members: list[int], root: int) -> Any:
        if self.rank != root:
            return self.world_pg.send([self._buf(size, 0)], root, _TAG)
        return _Many([self.world_pg.recv([self._buf(size, 2 + j)], peer, _TAG)
                      for j, peer in enumerate(members) if peer != root])

    def _from_root(self, size: int, members: list[int], root: int, whole: bool = False) -> Any:
        if self.rank != root:
            return self.world_pg.recv([self._buf(size, 0)], root, _TAG)
        return _Many([self.world_pg.send([self._buf(size, 0 if whole else 2 + j)], peer, _TAG)
                      for j, peer in enumerate(members) if peer != root])

    def _all_reduce_p2p(self, size: int, members: list[int]) -> Any:
        works = []
        for j, peer in enumerate(members):
            if peer != self.rank:
                works.append(self.world_pg.recv([self._buf(size, 2 + j)], peer, _TAG))
                works.append(self.world_pg.send([self._buf(size, 0)], peer, _TAG))
        return _Many(works)

    def _all_gather_p2p(self, size: int, members: list[int]) -> Any:
        return self._all_reduce_p2p(size, members)

    def p2p(self, send: bool, spec: dict[str, Any], observe: bool = True) -> tuple[Any, dict[str, Any] | None]:
        """Start a send or a receive of ``spec`` on the world's process group (global ranks);
        returns (work, what was observed of the call, or None unless ``observe``)."""
        size, peer, tag = int(spec["size"]), int(spec["peer"]), int(spec["tag"])
        self._elem = 4 if size % 4 == 0 else 1
        buf = self._buf(size, 1_000_000 + (0 if send else 1))
        work = self.world_pg.send([buf], peer, tag) if send else self.world_pg.recv([buf], peer, tag)
        if not observe:
            return work, None
        seen = {"kind": "SEND" if send else "RECV", "bytes": _nbytes(buf),
                "peer": peer, "tag": tag, "primitives": ["send" if send else "recv"], "composed": False}
        return work, seen


#: the tag of composed collectives' messages (the traces' own tags are int32 and non-negative)
_TAG = 2**31 - 7


def _opts(cls: Any, root: int | None = None) -> Any:
    """An options object of a process-group call, with its root (the group's own rank)."""
    opts = cls()
    if root is not None:
        opts.rootRank = root
    return opts


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _splits(size: int, p: int, itemsize: int) -> list[int]:
    """Elements each member gets of an all-to-all buffer of ``size`` bytes."""
    n = size // itemsize
    base = n // p
    return [base + (1 if j < n % p else 0) for j in range(p)]


def _is_unsupported(e: BaseException) -> bool:
    """Whether ``e`` says the process group lacks the primitive (torch's own class for an operation
    a backend does not implement, ours, or a backend's "not supported" message)."""
    text = str(e).lower()
    return isinstance(e, (NotImplementedError, NoPrimitive)) or "not supported" in text or "unsupported" in text \
        or "does not support" in text
