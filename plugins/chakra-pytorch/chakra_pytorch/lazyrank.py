"""A rank of a TraceSet converted when its nodes are read, serialized one node at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from chakra_core import GeneratedRank, GlobalMetadata

from .outnode import ConvertedRank, attr_records

__all__ = ["LazyRank"]


class LazyRank(GeneratedRank):
    """A rank whose graph ``convert()`` builds on each read.

    ``raw()`` hands each node's message to the writer as soon as it is serialized and lets the
    compact node go, so writing a rank holds one protobuf node at a time and the graph shrinks as
    it is written (``batches()``, for readers that want Node objects, gathers them 4096 at a
    time).
    """

    def __init__(self, rank: int, metadata: GlobalMetadata, convert: Callable[[], ConvertedRank],
                 path: str | None = None):
        super().__init__(rank, metadata, lambda: convert().protobuf_nodes(), path=path)
        self._convert = convert

    def raw(self) -> Iterator[bytes]:
        """The serialized node messages, in the order :meth:`nodes` yields them."""
        nodes = self._convert().nodes
        nodes.reverse()  # taken from the end: each node is let go once it is serialized
        records = attr_records()
        while nodes:
            yield nodes.pop().serialized(records)
