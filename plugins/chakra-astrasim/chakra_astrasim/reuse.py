"""Convert each distinct rank once, and ranks that differ only in their groups cheaply.

A rank's conversion depends on its rank number only through point-to-point peers and group
membership.  Ranks are compared by their role (:class:`chakra_core.RoleKey`, hashed while the
rank is read); for ranks without send/recv:

- a rank with an earlier rank's whole role key (equal traces: same digest, groups and peers)
  reuses that rank's converted bytes and report counts, if it belongs to the same groups;
- a rank with an earlier rank's digest only (equal traces up to a consistent relabelling of
  ``pg_name``: the usual case of hybrid-parallel sets, where each rank talks to its own model-
  and data-parallel groups) reuses that rank's conversion as a template: only its collective
  nodes are re-written with this rank's group ids, provided each group has the same size
  (sizes decide rewrites and removals) and contains the rank.  Anything else is converted in
  full.
"""

from __future__ import annotations

from collections.abc import Iterable, Sized
from dataclasses import dataclass, field
from typing import Protocol

from google.protobuf.message import DecodeError

from chakra_core import (
    AttributeProto,
    Node,
    RankTrace,
    RoleHasher,
    RoleKey,
    TraceFormatError,
    TraceSet,
    encode_varint,
    get_str,
    ranks_compiled_worthwhile,
)

from .plan import Plan
from .report import ExportReport
from .spill import NodeSpill, PatchedNodes
from .workload import RankInput, RankOutput, convert_rank, read_rank

__all__ = ["Converted", "RankReuse", "keys_compiled", "KEYS_COMPILED_FROM"]

#: how many conversions of each kind (exact, template) are kept for reuse.
CACHE_LIMIT = 16
#: how many bytes of converted ranks (on disk, see :mod:`.spill`) are kept for reuse in all.
CACHE_BYTES = 1 << 31
#: the role keys of a set whose .et files hold at least this many bytes are taken by compiled loops
#: (as Python about 25 ms a MB; loading numba and its first calls 0.35-1 s of CPU)
KEYS_COMPILED_FROM = 16 << 20


def keys_compiled(traces: TraceSet, ranks: list[int]) -> bool:
    """Whether the role keys of ``ranks`` of ``traces`` are taken by compiled loops:
    :func:`chakra_core.ranks_compiled_worthwhile` with :data:`KEYS_COMPILED_FROM` (so a small set
    loads no numba)."""
    return ranks_compiled_worthwhile(traces, ranks, KEYS_COMPILED_FROM)


class SerializedNodes(Sized, Iterable[bytes], Protocol):
    """Serialized nodes: a list of bytes, a :class:`NodeSpill` or :class:`PatchedNodes`."""


@dataclass
class Converted:
    """One converted rank as written: serialized nodes, collectives per group, p2p messages,
    the groups its collectives named, and its report counts."""

    raw: SerializedNodes
    collectives: dict[str, list[tuple[int, int, int]]]
    sends: list[tuple[int, int, int, int]]
    recvs: list[tuple[int, int, int, int]]
    delta: ExportReport
    groups_used: set[str] = field(default_factory=set)


@dataclass
class _Template:
    """A converted rank and, per input collective, (input position, group, group size,
    output positions); ``kinds`` maps an output position to (node id, comm_type, comm_size),
    ``splices`` to its bytes around the group (see :func:`_splice`)."""

    conv: Converted
    colls: list[tuple[int, str, int, list[int]]]
    kinds: dict[int, tuple[int, int, int]]
    splices: dict[int, tuple[bytes, bytes] | bytes]


def _pg_of(raw: bytes, where: str, pos: int) -> str:
    """The ``pg_name`` of a serialized node (the ``pos``-th of ``where``, counted from 0)."""
    try:
        node = Node.FromString(raw)
    except DecodeError as e:
        raise TraceFormatError(f"not a Chakra node message ({e})", where, f"node #{pos + 1}") from None
    return get_str(node, "pg_name", "") or ""


def _with_group(raw: bytes, group: str) -> bytes:
    """A written collective node with its ``pg_name`` set to ``group`` (absent for "")."""
    node = Node.FromString(raw)
    attrs = [a for a in node.attr if a.name != "pg_name"]
    if group:
        attrs.insert(3, AttributeProto(name="pg_name", string_val=group))  # after comm_size
    del node.attr[:]
    node.attr.extend(attrs)
    return node.SerializeToString()


def _group_entry(group: str) -> bytes:
    """The bytes of a ``pg_name`` attribute holding ``group`` as one element of ``Node.attr``
    (nothing for "")."""
    if not group:
        return b""
    attr = AttributeProto(name="pg_name", string_val=group).SerializeToString()
    return _ATTR_TAG + encode_varint(len(attr)) + attr


_ATTR_TAG = encode_varint(Node.DESCRIPTOR.fields_by_name["attr"].number << 3 | 2)
#: a group name no trace holds, whose attribute marks where a collective's group goes.
_MARK = "\x00chakra-astrasim:group\x00"


def _splice(raw: bytes) -> tuple[bytes, bytes] | bytes:
    """(head, tail) such that ``head + _group_entry(g) + tail == _with_group(raw, g)`` for
    every group ``g``, or ``raw`` itself where the mark cannot be told apart from the node's
    own bytes.

    The attributes of a node are serialized one after the other, so the one holding the group
    can be replaced without decoding the node again.
    """
    full = _with_group(raw, _MARK)
    entry = _group_entry(_MARK)
    at = full.find(entry)
    if at < 0 or full.find(entry, at + 1) >= 0:
        return raw
    return full[:at], full[at + len(entry):]


class RankReuse:
    """Converts ranks, reusing earlier conversions (at most ``limit`` of each kind kept);
    ``compile_it``: role keys by compiled loops (numba), else as Python (the same keys)."""

    def __init__(self, plan: Plan, report: ExportReport, compile_it: bool, limit: int | None = None):
        self.plan = plan
        self.report = report
        self.compile_it = compile_it
        self.limit = CACHE_LIMIT if limit is None else limit
        self.exact: dict[RoleKey, Converted] = {}
        self.templates: dict[bytes, _Template] = {}
        self.cached_bytes = 0
        self.reused = 0
        self.retargeted = 0

    def convert(self, rank: int, rt: RankTrace) -> Converted:
        """The converted ``rank`` (``raw`` is empty when no node is left)."""
        hasher = RoleHasher(rank, self.compile_it)
        inp = read_rank(rt, hasher.add)
        role = hasher.key()
        try:
            return self._convert(rank, rt, inp, role, role.digest)
        finally:
            inp.spill.discard()

    def _convert(self, rank: int, rt: RankTrace, inp: RankInput, key: RoleKey, shape: bytes) -> Converted:
        hit = self.exact.get(key)
        if hit is not None and all(rank in self.plan.members[g] for g in hit.groups_used):
            self.report.absorb(hit.delta)
            self.reused += 1
            return hit
        tpl = self.templates.get(shape)
        if tpl is not None:
            out = self._retarget(rank, tpl, inp.pg_raws, rt.label)
            if out is not None:
                self.report.absorb(out.delta)
                self.retargeted += 1
                return out
        delta = ExportReport()
        res = convert_rank(rank, rt, inp, self.plan, delta)
        out = Converted(res.nodes, res.collectives, res.sends, res.recvs, delta,
                        {g for _, g, _, _ in res.coll_inputs})
        self.report.absorb(delta)
        if out.raw and not out.sends and not out.recvs and self._room(res.nodes):
            if len(self.exact) < self.limit:
                self.exact[key] = out
            if len(self.templates) < self.limit and shape not in self.templates:
                self.templates[shape] = self._template(out, res)
        return out

    def _room(self, nodes: NodeSpill) -> bool:
        """Whether the cache may keep ``nodes`` (counted against :data:`CACHE_BYTES` if so)."""
        size = nodes.size
        if self.cached_bytes + size > CACHE_BYTES:
            return False
        self.cached_bytes += size
        return True

    @staticmethod
    def _template(out: Converted, res: RankOutput) -> _Template:
        pos_of = res.coll_pos
        colls = [(i, g, size, [pos_of[x] for x in ids]) for i, g, size, ids in res.coll_inputs]
        kinds = {pos_of[nid]: (nid, k, s) for seq in res.collectives.values() for nid, k, s in seq}
        splices = {p: _splice(raw) for p, raw in enumerate(res.nodes) if p in kinds}
        return _Template(out, colls, kinds, splices)

    def _retarget(self, rank: int, tpl: _Template, pg_raws: dict[int, bytes], where: str) -> Converted | None:
        """``tpl`` with this rank's groups, or None when the groups do not fit it."""
        collectives: dict[str, list[tuple[int, int, int]]] = {}
        regroup: dict[int, str] = {}
        fits: dict[tuple[str, int], str | None] = {}
        used = set()
        kinds = tpl.kinds
        for in_pos, tgroup, size, outs in tpl.colls:
            pg = _pg_of(pg_raws[in_pos], where, in_pos) if in_pos in pg_raws else ""
            group = fits[pg, size] if (pg, size) in fits else fits.setdefault((pg, size), self._fit(rank, pg, size))
            if group is None:
                return None
            used.add(group)
            for p in outs:
                if group != tgroup:
                    regroup[p] = group
                collectives.setdefault(group, []).append(kinds[p])
        base = tpl.conv.raw
        assert isinstance(base, NodeSpill)
        patches = {}
        entries: dict[str, bytes] = {}
        for p, group in regroup.items():
            cut = tpl.splices[p]
            if isinstance(cut, bytes):
                patches[p] = _with_group(cut, group)
                continue
            if group not in entries:
                entries[group] = _group_entry(group)
            patches[p] = cut[0] + entries[group] + cut[1]
        return Converted(PatchedNodes(base, patches), collectives, [], [], tpl.conv.delta, used)

    def _fit(self, rank: int, pg: str, size: int) -> str | None:
        """The group a collective of ``rank`` naming ``pg`` goes to, or None when that is not
        a group of ``size`` ranks containing ``rank``."""
        plan = self.plan
        group = plan.world_pg if pg in ("", "0") else plan.group_map.get(pg)
        if group is None:
            return None
        members = plan.members[group]
        return group if rank in members and len(members) == size else None
