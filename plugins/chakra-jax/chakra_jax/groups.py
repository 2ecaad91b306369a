"""Replica groups and source-target pairs of HLO collectives, as sets of global device ids.

``replica_groups`` comes in three syntaxes, all read here:

- explicit lists ``{{0,1},{2,3}}`` (``{}`` means one group of everything);
- the iota form ``[G,S]<=[d0,d1,...]`` with an optional transpose ``T(p0,p1,...)``: the ids
  ``0..prod(d)-1`` reshaped to ``d``, transposed by ``p``, reshaped to ``G`` rows of ``S``;
- the mesh-axes form ``mesh['a'=2,'b'=4] {'b'}`` (optionally ``, device_ids=(...)`` after the
  axis list, and sub-axes ``'a':(pre)size``): the mesh's devices grouped along the listed axes.

Which ids the groups name depends on the instruction (XLA's collective group mode): without
``channel_id`` they are replica ids and each partition has its own copy of every group
(cross-replica); with ``channel_id`` and ``use_global_device_ids=true`` they are global device
ids (flattened); with ``channel_id`` on an op that has ``use_global_device_ids`` (all-reduce,
all-gather, reduce-scatter) but not set, they are replica ids and a group spans every partition
of those replicas (cross-replica-and-partition); with ``channel_id`` on the other ops (all-to-all,
collective-permute, collective-broadcast) they are partition ids within each replica
(cross-partition). A device is ``replica * num_partitions + partition``.

A program of more replicas than its module states (option ``devices``) is copies of the module's
devices: groups that name ids (replica ids, or the flattened global ids) and the source-target
pairs of replicas are repeated in each copy, offset by one copy's ids; ``{}`` (every device)
spans all copies.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["parse_replica_groups", "parse_pairs", "device_groups", "permute_pairs", "GroupError"]

_INTS = re.compile(r"-?\d+")
_IOTA = re.compile(r"^\[([\d,\s]+)\]\s*<=\s*\[([\d,\s]+)\]\s*(?:T\(([\d,\s]+)\))?$")
_MESH = re.compile(r"^mesh\[(?P<axes>[^\]]*)\](?:\s*,\s*device_ids=\((?P<ids>.*)\))?\s*\{(?P<sel>[^}]*)\}$")
_IOTA_IDS = re.compile(r"^\[([\d,\s]+)\]\s*(?:T\(([\d,\s]+)\))?$")
_AXIS = re.compile(r"^'?([^'=]+?)'?\s*=\s*(\d+)$")
_SEL = re.compile(r"^'?([^':]+?)'?(?::\((\d+)\)(\d+))?$")

#: ops whose groups follow ``use_global_device_ids`` (the others are cross-partition with a channel).
_GLOBAL_IDS_OPS = ("all-reduce", "all-gather", "reduce-scatter")


class GroupError(ValueError):
    """Replica groups or pairs that cannot be read."""


def _ints(text: str) -> list[int]:
    return [int(x) for x in _INTS.findall(text)]


def parse_replica_groups(text: str | None) -> list[list[int]] | None:
    """The groups of a ``replica_groups`` value (None when the value is absent or ``{}``)."""
    if text is None:
        return None
    s = text.strip()
    if s.startswith("mesh"):
        return _mesh_groups(s)
    if s.startswith("["):
        return _iota_groups(s)
    if not (s.startswith("{") and s.endswith("}")):
        raise GroupError(f"unknown replica_groups syntax {s[:60]!r}")
    inner = s[1:-1].strip()
    if not inner:
        return None
    groups = []
    for part in inner.split("}"):
        part = part.strip().lstrip(",").strip()
        if not part:
            continue
        if not part.startswith("{"):
            raise GroupError(f"bad replica_groups {s[:60]!r}")
        groups.append(_ints(part))
    return groups


def _iota_groups(s: str) -> list[list[int]]:
    m = _IOTA.match(s)
    if m is None:
        raise GroupError(f"bad iota replica_groups {s[:60]!r}")
    shape = _ints(m.group(1))
    dims = _ints(m.group(2))
    perm = _ints(m.group(3)) if m.group(3) else list(range(len(dims)))
    total = int(np.prod(dims))
    if len(shape) != 2 or shape[0] * shape[1] != total or sorted(perm) != list(range(len(dims))):
        raise GroupError(f"inconsistent iota replica_groups {s[:60]!r}")
    ids = np.arange(total).reshape(dims).transpose(perm).reshape(shape)
    return ids.tolist()


def _mesh_groups(s: str) -> list[list[int]]:
    m = _MESH.match(s)
    if m is None:
        raise GroupError(f"bad mesh replica_groups {s[:60]!r}")
    names, sizes = [], []
    for item in m.group("axes").split(","):
        a = _AXIS.match(item.strip())
        if a is None:
            raise GroupError(f"bad mesh axis {item.strip()!r}")
        names.append(a.group(1))
        sizes.append(int(a.group(2)))
    total = int(np.prod(sizes))
    devices = np.arange(total) if m.group("ids") is None else _device_ids(m.group("ids").strip())
    if devices.size != total:
        raise GroupError(f"mesh device_ids lists {devices.size} devices for a mesh of {total}")
    selected = [x.strip() for x in m.group("sel").split(",") if x.strip()]
    reshape: list[int] = []
    offset: list[int] = []
    per_axis: dict[int, list[tuple[int, int]]] = {}
    parsed = []
    for item in selected:
        a = _SEL.match(item)
        if a is None or a.group(1) not in names:
            raise GroupError(f"mesh replica group names unknown axis {item!r}")
        axis = names.index(a.group(1))
        pre, size = (int(a.group(2)), int(a.group(3))) if a.group(2) else (1, sizes[axis])
        parsed.append((axis, pre, size))
        per_axis.setdefault(axis, []).append((pre, size))
    axis_dims: dict[int, list[tuple[int, int]]] = {}
    for axis, full in enumerate(sizes):
        offset.append(len(reshape))
        pieces = sorted(per_axis.get(axis, []))
        dims, done = [], 1
        for pre, size in pieces:
            if pre < 1 or size < 1 or pre % done:
                raise GroupError(f"mesh sub-axes of {names[axis]!r} overlap or are empty")
            if pre != done:
                dims.append((pre // done, -1))
                done = pre
            dims.append((size, pre))
            done *= size
        if full % done:
            raise GroupError(f"mesh sub-axes of {names[axis]!r} span {done} devices, which does not divide its {full}")
        if done != full:
            dims.append((full // done, -1))
        axis_dims[axis] = dims
        reshape.extend(d for d, _ in dims)
    grouped = []
    for axis, pre, size in parsed:
        index = next(i for i, (d, p) in enumerate(axis_dims[axis]) if p == pre and d == size)
        grouped.append(offset[axis] + index)
    rest = [i for i in range(len(reshape)) if i not in grouped]
    per_group = int(np.prod([reshape[i] for i in grouped])) if grouped else 1
    arranged = devices.reshape(reshape).transpose(rest + grouped).reshape(-1, per_group)
    return arranged.tolist()


def _device_ids(text: str) -> np.ndarray:
    """A mesh's device order: an iota ``[d0,d1]T(1,0)`` (ids reshaped, transposed, flattened)
    or an explicit list of ids."""
    m = _IOTA_IDS.match(text)
    if m is None:
        return np.array(_ints(text))
    dims = _ints(m.group(1))
    perm = _ints(m.group(2)) if m.group(2) else list(range(len(dims)))
    if sorted(perm) != list(range(len(dims))):
        raise GroupError(f"bad mesh device_ids transpose {text!r}")
    return np.arange(int(np.prod(dims))).reshape(dims).transpose(perm).reshape(-1)


def parse_pairs(text: str | None) -> list[tuple[int, int]]:
    """``source_target_pairs={{0,1},{1,2}}`` as ``[(0, 1), (1, 2)]``."""
    if not text:
        return []
    groups = parse_replica_groups(text) or []
    if any(len(g) != 2 for g in groups):
        raise GroupError(f"source_target_pairs must be pairs: {text[:60]!r}")
    return [(g[0], g[1]) for g in groups]


def _mode(opcode: str, has_channel: bool, global_ids: bool) -> str:
    base = opcode.removesuffix("-start")
    if not has_channel:
        return "cross_replica"
    if base in _GLOBAL_IDS_OPS:
        return "flattened" if global_ids else "cross_replica_and_partition"
    return "cross_partition"


def _repeat(groups: list[list[int]], copies: int, block: int) -> list[list[int]]:
    """``groups`` once per copy of ``block`` ids, each copy's ids offset by ``block``."""
    return [[i + c * block for i in g] for c in range(copies) for g in groups]


def device_groups(opcode: str, groups: list[list[int]] | None, has_channel: bool, global_ids: bool,
                  replicas: int, partitions: int, module_replicas: int | None = None) -> list[list[int]]:
    """The groups of global device ids an instruction forms (see the module docstring); with
    ``module_replicas`` (the module's own count) below ``replicas``, groups that name ids are
    repeated in each whole copy of the module's devices."""
    mode = _mode(opcode, has_channel, global_ids)
    base = module_replicas or replicas
    copies = replicas // base
    if mode == "flattened":
        if groups is None:
            return [list(range(replicas * partitions))]
        return _repeat(groups, copies, base * partitions)
    if mode == "cross_partition":
        ids = groups if groups is not None else [list(range(partitions))]
        return [[r * partitions + p for p in g] for r in range(replicas) for g in ids]
    ids = _repeat(groups, copies, base) if groups is not None else [list(range(replicas))]
    if mode == "cross_replica":
        return [[r * partitions + p for r in g] for p in range(partitions) for g in ids]
    return [[r * partitions + p for r in g for p in range(partitions)] for g in ids]


def permute_pairs(pairs: list[tuple[int, int]], has_channel: bool, replicas: int,
                  partitions: int, module_replicas: int | None = None) -> list[tuple[int, int]]:
    """Source-target pairs in global device ids: partition ids per replica with a channel
    (cross-partition), replica ids per partition without one (cross-replica; repeated in each
    whole copy of the module's ``module_replicas`` replicas)."""
    if has_channel:
        return [(r * partitions + s, r * partitions + t) for r in range(replicas) for s, t in pairs]
    base = module_replicas or replicas
    copies = [(s + c * base, t + c * base) for c in range(replicas // base) for s, t in pairs]
    return [(s * partitions + p, t * partitions + p) for p in range(partitions) for s, t in copies]
