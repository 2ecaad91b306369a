"""Collectives and point-to-point messages of a worker (imported by workers only: needs torch).

Each collective node becomes the torch.distributed call of its kind on its group, with buffers
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

__all__ = ["Comms"]

#: Chakra kind -> the torch.distributed primitive tried first
_PRIMITIVE = {
    "ALL_REDUCE": "all_reduce", "REDUCE": "reduce", "ALL_GATHER": "all_gather_into_tensor",
    "GATHER": "gather", "SCATTER": "scatter", "BROADCAST": "broadcast",
    "ALL_TO_ALL": "all_to_all_single", "REDUCE_SCATTER": "reduce_scatter_tensor",
    "REDUCE_SCATTER_BLOCK": "reduce_scatter_tensor", "BARRIER": "barrier",
}


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

    def collective(self, spec: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Start the collective of ``spec``; returns (work with ``wait()``, observed)."""
        kind, size = spec["type"], int(spec["size"])
        group, members = self._group(spec["pg"])
        if self.rank not in members:
            raise RuntimeError(f"rank {self.rank} issues a {kind} on group {spec['pg'] or '0'!r}, "
                               f"whose members are {members}")
        root = spec.get("root")
        if root is None or root not in members:
            root = members[0]
        call = _PRIMITIVE[kind]
        self._elem = 4 if size % 4 == 0 else 1
        composed = call in self.unsupported or kind in self.compose
        work = None
        if not composed:
            try:
                work, used = self._primitive(kind, size, group, members, root), [call]
            except (RuntimeError, NotImplementedError) as e:
                if not _is_unsupported(e):
                    raise
                self.unsupported.add(call)
                composed = True
        if composed:
            work, used = self._composed(kind, size, group, members, root)
        observed = {"kind": kind, "bytes": 0 if kind == "BARRIER" else _nbytes(self._buf(size, 0)),
                    "group": self._members(group), "root": root if kind in _ROOTED else None,
                    "primitives": used, "composed": composed}
        return work, observed

    def _members(self, group: Any) -> list[int]:
        """The global ranks of ``group`` as torch.distributed knows them."""
        return list(range(dist.get_world_size())) if group is None else dist.get_process_group_ranks(group)

    def _primitive(self, kind: str, size: int, group: Any, members: list[int], root: int) -> Any:
        p = len(members)
        me = members.index(self.rank)
        if kind == "BARRIER":
            return dist.barrier(group=group, async_op=True)
        if kind == "ALL_REDUCE":
            return dist.all_reduce(self._buf(size, 0), group=group, async_op=True)
        if kind == "BROADCAST":
            return dist.broadcast(self._buf(size, 0), src=root, group=group, async_op=True)
        if kind == "REDUCE":
            return dist.reduce(self._buf(size, 0), dst=root, group=group, async_op=True)
        if kind == "ALL_GATHER":
            return dist.all_gather_into_tensor(self._buf(size * p, 1), self._buf(size, 0), group=group,
                                               async_op=True)
        if kind == "GATHER":
            out = [self._buf(size, 2 + j) for j in range(p)] if self.rank == root else None
            return dist.gather(self._buf(size, 0), out, dst=root, group=group, async_op=True)
        if kind == "SCATTER":
            chunks = [self._buf(size, 2 + j) for j in range(p)] if self.rank == root else None
            return dist.scatter(self._buf(size, 0), chunks, src=root, group=group, async_op=True)
        if kind == "ALL_TO_ALL":
            splits = _splits(size, p, self._elem)
            received = self._buf(splits[me] * p * self._elem, 1)
            return dist.all_to_all_single(received, self._buf(size, 0), output_split_sizes=[splits[me]] * p,
                                          input_split_sizes=splits, group=group, async_op=True)
        if size % p:
            raise NotImplementedError("reduce-scatter of a size members cannot split evenly")
        return dist.reduce_scatter_tensor(self._buf(size // p, 1), self._buf(size, 0), group=group,
                                          async_op=True)

    def _composed(self, kind: str, size: int, group: Any, members: list[int], root: int) -> tuple[Any, list[str]]:
        compose: dict[str, Callable[[], Any]] = {
            "REDUCE_SCATTER": lambda: self._reduce_scatter(size, group, members),
            "REDUCE_SCATTER_BLOCK": lambda: self._reduce_scatter(size, group, members),
            "ALL_TO_ALL": lambda: self._all_to_all(size, members),
            "GATHER": lambda: self._to_root(size, members, root),
            "SCATTER": lambda: self._from_root(size, members, root),
            "REDUCE": lambda: dist.all_reduce(self._buf(size, 0), group=group, async_op=True),
            "ALL_REDUCE": lambda: self._all_reduce_p2p(size, members),
            "ALL_GATHER": lambda: self._all_gather_p2p(size, members),
            "BROADCAST": lambda: self._from_root(size, members, root, whole=True),
            "BARRIER": lambda: dist.all_reduce(self._buf(4, 0), group=group, async_op=True),
        }
        used = {"REDUCE_SCATTER": ["all_reduce"], "REDUCE_SCATTER_BLOCK": ["all_reduce"],
                "ALL_TO_ALL": ["isend", "irecv"], "GATHER": ["isend", "irecv"], "SCATTER": ["isend", "irecv"],
                "REDUCE": ["all_reduce"], "ALL_REDUCE": ["isend", "irecv"], "ALL_GATHER": ["isend", "irecv"],
                "BROADCAST": ["isend", "irecv"], "BARRIER": ["all_reduce"]}
        return compose[kind](), used[kind]

    def _reduce_scatter(self, size: int, group: Any, members: list[int]) -> Any:
        return dist.all_reduce(self._buf(size, 0), group=group, async_op=True)

    def _all_to_all(self, size: int, members: list[int]) -> Any:
        p = len(members)
        piece = size // p
        works = []
        for j, peer in enumerate(members):
            if peer == self.rank:
                continue
            works.append(dist.irecv(self._buf(piece, 2 + j), src=peer, tag=_TAG))
            works.append(dist.isend(self._buf(piece, 2 + p + j), dst=peer, tag=_TAG))
        return _Many(works)

    def _to_root(self, size: int, members: list[int], root: int) -> Any:
        if self.rank != root:
            return dist.isend(self._buf(size, 0), dst=root, tag=_TAG)
        return _Many([dist.irecv(self._buf(size, 2 + j), src=peer, tag=_TAG)
                      for j, peer in enumerate(members) if peer != root])

    def _from_root(self, size: int, members: list[int], root: int, whole: bool = False) -> Any:
        if self.rank != root:
            return dist.irecv(self._buf(size, 0), src=root, tag=_TAG)
        return _Many([dist.isend(self._buf(size, 0 if whole else 2 + j), dst=peer, tag=_TAG)
                      for j, peer in enumerate(members) if peer != root])

    def _all_reduce_p2p(self, size: int, members: list[int]) -> Any:
        works = []
        for j, peer in enumerate(members):
            if peer != self.rank:
                works.append(dist.irecv(self._buf(size, 2 + j), src=peer, tag=_TAG))
                works.append(dist.isend(self._buf(size, 0), dst=peer, tag=_TAG))
        return _Many(works)

    def _all_gather_p2p(self, size: int, members: list[int]) -> Any:
        return self._all_reduce_p2p(size, members)

    def p2p(self, send: bool, spec: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Start a send or a receive of ``spec``; returns (work, observed)."""
        size, peer, tag = int(spec["size"]), int(spec["peer"]), int(spec["tag"])
        self._elem = 4 if size % 4 == 0 else 1
        buf = self._buf(size, 1_000_000 + (0 if send else 1))
        work = dist.isend(buf, dst=peer, tag=tag) if send else dist.irecv(buf, src=peer, tag=tag)
        seen = {"kind": "SEND" if send else "RECV", "bytes": _nbytes(buf),
                "peer": peer, "tag": tag, "primitives": ["isend" if send else "irecv"], "composed": False}
        return work, seen


_ROOTED = ("BROADCAST", "REDUCE", "GATHER", "SCATTER")
#: the tag of composed collectives' messages (the traces' own tags are int32 and non-negative)
_TAG = 2**31 - 7


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _splits(size: int, p: int, itemsize: int) -> list[int]:
    """Elements each member gets of an all-to-all buffer of ``size`` bytes."""
    n = size // itemsize
    base = n // p
    return [base + (1 if j < n % p else 0) for j in range(p)]


def _is_unsupported(e: BaseException) -> bool:
    text = str(e).lower()
    return isinstance(e, NotImplementedError) or "not supported" in text or "unsupported" in text \
        or "does not support" in text
