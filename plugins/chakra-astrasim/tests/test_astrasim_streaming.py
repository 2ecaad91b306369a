"""The exporter streams each rank through temporary files (chakra_astrasim.spill): a file order
that is not topological is re-ordered window by window, nothing is left behind on success or
failure, and the written ranks are what the rules say."""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest

from chakra_astrasim import export_astrasim, spill
from chakra_core import (
    CommType,
    EtReader,
    GlobalMetadata,
    Node,
    NodeType,
    TraceFormatError,
    open_traceset,
    set_attr,
    write_et,
)


def _chain(count: int) -> list[Node]:
    """ids 1..count, each after the previous; every 5th a 0-duration CPU op (removed), every
    7th a REDUCE (rewritten to an ALL_REDUCE)."""
    nodes = []
    for nid in range(1, count + 1):
        if nid % 7 == 0:
            n = Node(id=nid, name=f"r{nid}", type=NodeType.COMM_COLL_NODE)
            set_attr(n, "comm_type", int(CommType.REDUCE))
            set_attr(n, "comm_size", 64)
        else:
            n = Node(id=nid, name=f"c{nid}", type=NodeType.COMP_NODE, duration_micros=0 if nid % 5 == 0 else 3)
            set_attr(n, "is_cpu_op", nid % 5 == 0)
        if nid > 1:
            n.data_deps.append(nid - 1)
        nodes.append(n)
    return nodes


@pytest.fixture
def spill_dir(tmp_path, monkeypatch):
    d = tmp_path / "spills"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


@pytest.mark.parametrize("window, in_memory", [(3, 4), (1 << 18, 4), (3, 1 << 14)])
def test_reversed_file_order_is_written_in_dependency_order(tmp_path, spill_dir, monkeypatch, astrasim_check,
                                                            window, in_memory):
    monkeypatch.setattr(spill, "REORDER_WINDOW", window)
    monkeypatch.setattr(spill, "MEMORY_NODES", in_memory)
    count = 50
    for r in (0, 1):
        write_et(tmp_path / "in" / f"trace.{r}.et", GlobalMetadata(), _chain(count)[::-1])
    res = export_astrasim(open_traceset(tmp_path / "in"), tmp_path / "out")
    astrasim_check(tmp_path / "out")
    out = list(EtReader(tmp_path / "out" / "workload" / "trace.0.et"))
    kept = [i for i in range(1, count + 1) if i % 5 or i % 7 == 0]
    assert [n.name for n in out] == [f"r{i}" if i % 7 == 0 else f"c{i}" for i in kept]
    # each node depends on the one before it: removed CPU ops are bridged
    assert all(list(b.data_deps) == [a.id] for a, b in zip(out, out[1:]))
    assert res.summary["removed"] == 2 * len([i for i in range(1, count + 1) if i % 5 == 0 and i % 7])
    assert list(spill_dir.iterdir()) == []


def test_failed_rank_leaves_no_temporary_files(tmp_path, spill_dir, monkeypatch):
    monkeypatch.setattr(spill, "MEMORY_NODES", 4)
    nodes = _chain(20)
    nodes[3].data_deps.append(10)  # 4 -> 10 -> ... -> 4: a cycle
    write_et(tmp_path / "in" / "trace.0.et", GlobalMetadata(), nodes)
    with pytest.raises(TraceFormatError, match="cycle"):
        export_astrasim(open_traceset(tmp_path / "in"), tmp_path / "out")
    assert list(spill_dir.iterdir()) == []


def test_spills_of_dead_processes_are_removed(tmp_path, spill_dir, monkeypatch):
    monkeypatch.setattr(spill, "MEMORY_NODES", 4)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = [spill_dir / f"chakra-astrasim-{dead.pid}-abc.et", spill_dir / f".chakra-astrasim-{dead.pid}-x.et.y.tmp"]
    live = spill_dir / f"chakra-astrasim-{os.getppid()}-abc.et"
    for p in [*stale, live]:
        p.write_bytes(b"")
    write_et(tmp_path / "in" / "trace.0.et", GlobalMetadata(), _chain(20))
    export_astrasim(open_traceset(tmp_path / "in"), tmp_path / "out")
    assert list(spill_dir.iterdir()) == [live]
