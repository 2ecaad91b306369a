"""Per-rank nodes from a stage template: the template's bytes plus the rank's own attributes.

A serialized protobuf message may be extended by appending fields, so a rank's node is its
template's bytes followed by the serialized ``pg_name`` (or ``comm_dst`` / ``comm_src``) that its
slot names; nothing is decoded or rebuilt per rank.  Runs of nodes without a slot are framed
once per template, so writing a rank joins a few hundred byte strings.
"""

from __future__ import annotations

from collections.abc import Iterator

from chakra_core import GeneratedRank, GlobalMetadata, Node, frame_nodes, make_attr

from .build import SLOTS, Template
from .layout import ParallelLayout

__all__ = ["TemplateRank", "segments"]

#: a template cut into framed runs of complete nodes (bytes) and single slotted nodes (bytes, slot)
Segments = list[tuple[bytes, int]]


def segments(template: Template) -> tuple[Segments, int]:
    """``template`` as framed runs (slot 0) and unframed slotted nodes, and its node count."""
    out: Segments = []
    run: list[bytes] = []
    for data, slot in zip(template.nodes, template.slots):
        if slot:
            if run:
                out.append((frame_nodes(run), 0))
                run = []
            out.append((data, slot))
        else:
            run.append(data)
    if run:
        out.append((frame_nodes(run), 0))
    return out, len(template.nodes)


def _suffix(attr: str, value: str | int) -> bytes:
    n = Node()
    n.attr.append(make_attr(attr, value))
    return n.SerializeToString()


class TemplateRank(GeneratedRank):
    """One generated rank: its stage's template with the rank's groups and peers filled in."""

    def __init__(self, rank: int, metadata: GlobalMetadata, template: Template, layout: ParallelLayout,
                 framed: tuple[Segments, int]):
        super().__init__(rank, metadata, self._decode)
        self._template = template
        self._layout = layout
        self._segments = framed

    def _suffixes(self) -> list[bytes]:
        out = [b""] * (max(SLOTS) + 1)
        lay = self._layout
        for slot, (attr, what) in SLOTS.items():
            if attr == "pg_name":
                name = lay.group_of[what][self.rank]
                out[slot] = _suffix(attr, name) if name else b""
            elif lay.model.pp > 1:
                out[slot] = _suffix(attr, lay.peer(self.rank, 1 if what == "next" else -1))
        return out

    def raw(self) -> Iterator[bytes]:
        """Serialized node messages of this rank, in id order."""
        sfx = self._suffixes()
        for data, slot in zip(self._template.nodes, self._template.slots):
            yield data + sfx[slot] if slot else data

    def framed(self) -> Iterator[tuple[bytes, int]]:
        """This rank's ``.et`` body in one piece: ``(bytes, node_count)``."""
        sfx = self._suffixes()
        segs, count = self._segments
        yield b"".join([data if not slot else frame_nodes([data + sfx[slot]]) for data, slot in segs]), count

    def _decode(self) -> Iterator[Node]:
        return (Node.FromString(b) for b in self.raw())
