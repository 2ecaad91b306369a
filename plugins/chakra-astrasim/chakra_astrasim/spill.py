"""Serialized nodes kept on disk instead of in memory.

A :class:`NodeSpill` is appended to once, then read back any number of times, as raw bytes or
as decoded batches.  Its first :data:`MEMORY_NODES` nodes stay in memory; beyond that it is a
temporary ``.et`` file (in the directory ``tempfile`` picks: ``TMPDIR``, else ``/tmp``) read by
the core's streaming reader, removed when the spill is discarded or garbage collected, and when
writing it fails; the spills of a process that was killed are removed by the next one that
spills (their names carry the process id).  The exporter keeps each rank's input and output
here, so that its memory does not grow with the size of a rank.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from chakra_core import EtReader, EtWriter, Node

__all__ = ["NodeSpill", "PatchedNodes"]

#: nodes held in memory at once while a spill is put into another order.
REORDER_WINDOW = 1 << 18
#: a spill of at most this many nodes stays in memory.
MEMORY_NODES = 1 << 14


_PREFIX = "chakra-astrasim-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(directory: str) -> None:
    """Remove the spills (and their writers' temporary files) of processes that no longer run:
    a killed export cannot remove its own."""
    for p in [*Path(directory).glob(f"{_PREFIX}*.et"), *Path(directory).glob(f".{_PREFIX}*.tmp")]:
        pid = p.name.lstrip(".")[len(_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            p.unlink(missing_ok=True)


def _remove(path: Path, writer: EtWriter, state: dict) -> None:
    if state["open"]:
        state["open"] = False
        writer.__exit__(RuntimeError, None, None)  # discards the writer's temporary file
    path.unlink(missing_ok=True)


class NodeSpill:
    """Serialized nodes: :meth:`append`, :meth:`close`, then read."""

    def __init__(self) -> None:
        self.count = 0
        self.path: Path | None = None
        self._memory: list[bytes] | None = []
        self._writer: EtWriter | None = None
        self._state = {"open": False}

    def append(self, data: bytes) -> None:
        """Add one serialized node."""
        if self._memory is not None:
            self._memory.append(data)
            if len(self._memory) > MEMORY_NODES:
                self._to_disk()
        else:
            assert self._writer is not None
            self._writer.write_raw(data)
        self.count += 1

    def extend(self, data: list[bytes]) -> None:
        """Add serialized nodes."""
        if self._memory is not None and len(self._memory) + len(data) <= MEMORY_NODES:
            self._memory.extend(data)
            self.count += len(data)
        else:
            for d in data:
                self.append(d)

    def _to_disk(self) -> None:
        remove_stale(tempfile.gettempdir())
        fd, name = tempfile.mkstemp(prefix=f"{_PREFIX}{os.getpid()}-", suffix=".et")
        os.close(fd)
        self.path = Path(name)
        self._writer = EtWriter(self.path)
        self._state["open"] = True
        self._writer.__enter__()
        self._remove = weakref.finalize(self, _remove, self.path, self._writer, self._state)
        assert self._memory is not None
        for data in self._memory:
            self._writer.write_raw(data)
        self._memory = None

    def close(self) -> NodeSpill:
        """Finish writing (the spill can be read from now on); returns the spill."""
        if self._state["open"]:
            self._state["open"] = False
            assert self._writer is not None
            self._writer.__exit__(None, None, None)
        return self

    def discard(self) -> None:
        """Drop the nodes now (and remove the file)."""
        if self._memory is not None:
            self._memory = []
        else:
            self._remove()

    @property
    def in_memory(self) -> bool:
        """Whether the nodes are held in memory (at most :data:`MEMORY_NODES`)."""
        return self._memory is not None

    @property
    def size(self) -> int:
        """Bytes held (in memory, or on disk)."""
        if self._memory is not None:
            return sum(map(len, self._memory))
        assert self.path is not None
        return self.path.stat().st_size

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[bytes]:
        """Each node's serialized bytes, in order."""
        if self._memory is not None:
            return iter(self._memory)
        assert self.path is not None
        return EtReader(self.path).raw()

    def batches(self) -> Iterator[Iterable[Node]]:
        """The nodes decoded, in batches, in order."""
        if self._memory is None:
            assert self.path is not None
            return EtReader(self.path).batches()
        memory = self._memory
        return ([Node.FromString(b) for b in memory[i:i + 4096]] for i in range(0, len(memory), 4096))

    def reordered(self, order: np.ndarray) -> NodeSpill:
        """A new spill holding node ``order[k]`` of this one at position ``k``.

        Reads this spill once per :data:`REORDER_WINDOW` nodes of the result and holds one
        window's bytes in memory at a time.
        """
        at = np.empty(len(order), dtype=np.int64)
        at[order] = np.arange(len(order), dtype=np.int64)
        out = NodeSpill()
        for lo in range(0, len(order), REORDER_WINDOW):
            hi = min(lo + REORDER_WINDOW, len(order))
            src = np.flatnonzero((at >= lo) & (at < hi))  # ascending positions in this spill
            dst = (at[src] - lo).tolist()
            wanted = iter(src.tolist())
            window: list[bytes] = [b""] * (hi - lo)
            k, nxt = 0, next(wanted)
            for pos, data in enumerate(self):
                if pos == nxt:
                    window[dst[k]] = data
                    k += 1
                    nxt = next(wanted, -1)
                    if nxt < 0:
                        break
            for data in window:
                out.append(data)
        return out.close()


class PatchedNodes:
    """The nodes of a spill with some positions replaced: ``len()`` and iteration as a spill."""

    def __init__(self, base: NodeSpill, patches: dict[int, bytes]):
        self.base = base
        self.patches = patches

    def __len__(self) -> int:
        return len(self.base)

    def __iter__(self) -> Iterator[bytes]:
        if self.base.in_memory:
            nodes = list(self.base)
            for pos, data in self.patches.items():
                nodes[pos] = data
            return iter(nodes)
        return self._patched()

    def _patched(self) -> Iterator[bytes]:
        patches = self.patches
        for pos, data in enumerate(self.base):
            yield patches.get(pos, data)
