"""A rank of a TraceSet converted when its nodes are read, serialized one node at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from chakra_core import GeneratedRank, GlobalMetadata

from .outnode import ConvertedRank

__all__ = ["LazyRank"]


class LazyRank(GeneratedRank):
    """A rank whose graph ``convert()`` builds on each read.

    ``raw()`` hands each node's message to the writer as soon as it is serialized, so writing a
    rank never holds more than one protobuf node besides the compact graph (``batches()``, for
    readers that want Node objects, gathers them 4096 at a time).
    """

    def __init__(self, rank: int, metadata: GlobalMetadata, convert: Callable[[], ConvertedRank],
                 path: str | None = None):
        super().__init__(rank, metadata, lambda: convert().protobuf_nodes(), path=path)
        self._convert = convert

    def raw(self) -> Iterator[bytes]:
        """The serialized node messages, in the order :meth:`nodes` yields them."""
        for n in self._convert().protobuf_nodes():
            yield n.SerializeToString()
