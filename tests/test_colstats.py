"""``chakra stats`` from columns (a run of nodes at a time) gives the node-by-node statistics:
known values of the golden trace and a recorded PyTorch set, and ranks with what the columnar
read must get right (non-consecutive ids, forward and missing dependencies, unknown node types,
communication attributes of every integer kind, past int64, as strings, named twice)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chakra_core.base._errors import TraceFormatError
from chakra_core.base._kernels import compiled
from chakra_core.io._etio import EtWriter
from chakra_core.io._schema import AttributeProto, GlobalMetadata, Node, NodeType
from chakra_core.trace import _pathkernel, _stats
from chakra_core.trace._attrs import make_attr
from chakra_core.trace._pathsorted import SortedPath
from chakra_core.trace._traceset import open_traceset

pytest.importorskip("numba")
from chakra_core.trace._colstats import tally_columns  # noqa: E402  (needs numba)

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden.0.et"


def _node_by_node(traces, monkeypatch) -> dict:
    with monkeypatch.context() as m:
        m.setattr(_stats, "_columnar", lambda rt, longest_path: None)
        return _stats.compute_stats(traces)


def _write(path: Path, nodes: list[Node]) -> Path:
    with EtWriter(str(path), GlobalMetadata(version="0.0.4")) as w:
        w.write_many(nodes)
    return path


def test_golden_trace_known_values(monkeypatch):
    traces = open_traceset(str(GOLDEN))
    assert tally_columns(next(iter(traces)), True) is not None
    s = _stats.compute_stats(traces)
    assert s["nodes"] == 9 and s["longest_path_us"] == 30
    assert s["collectives"] == {"ALL_REDUCE": {"count": 1, "bytes": 1048576}, "RECV": {"count": 1, "bytes": 1024},
                                "SEND": {"count": 1, "bytes": 1024}}
    assert s == _node_by_node(traces, monkeypatch)


def test_recorded_pytorch_set_known_values(tmp_path, monkeypatch):
    pytest.importorskip("chakra_pytorch")
    from chakra_core.pipeline._pipeline import load_traces

    for rt in load_traces([str(ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp")], "pytorch"):
        with EtWriter(str(tmp_path / f"ddp.{rt.rank}.et"), rt.metadata()) as w:
            w.write_many(rt.nodes())
    traces = open_traceset(str(tmp_path / "ddp.*.et"))
    s = _stats.compute_stats(traces)
    assert (s["nodes"], s["ranks"], s["longest_path_us"]) == (172, 2, 13165)
    assert s["collectives"] == {"ALL_REDUCE": {"count": 2, "bytes": 5408}, "BROADCAST": {"count": 4, "bytes": 48}}
    assert s == _node_by_node(traces, monkeypatch)


def _unusual() -> list[Node]:
    """Nodes with non-consecutive ids, unknown types and communication attributes of every kind."""
    comm = [
        [make_attr("comm_type", 0), make_attr("comm_size", 100)],
        [AttributeProto(name="comm_type", uint64_val=1), AttributeProto(name="comm_size", uint64_val=(1 << 64) - 1)],
        [AttributeProto(name="comm_type", int32_val=77), AttributeProto(name="comm_size", sint64_val=-5)],
        [AttributeProto(name="comm_size", string_val="9"), AttributeProto(name="comm_type", string_val="x")],
        [AttributeProto(name="comm_size", bool_val=True), AttributeProto(name="comm_size", int64_val=50)],
        [AttributeProto(name="comm_size", fixed64_val=1 << 63)],
        [],
    ]
    nodes = []
    for i in range(1, 400):
        kind = (NodeType.COMP_NODE, NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE,
                99, NodeType.MEM_LOAD_NODE)[i % 6]
        n = Node(id=3 * i, name=f"n{i}", type=kind, duration_micros=(i * 37) % 101)
        if i > 1:
            n.data_deps.append(3 * (i - 1))
        if i > 5:
            n.ctrl_deps.extend([3 * (i - 5), 3 * (i - 3)])
        n.attr.extend(comm[i % len(comm)])
        nodes.append(n)
    return nodes


@pytest.mark.parametrize("change", ["none", "forward", "missing", "decreasing"])
def test_unusual_ranks_same_as_node_by_node(tmp_path, monkeypatch, change):
    nodes = _unusual()
    if change == "forward":
        nodes[10].data_deps.append(nodes[20].id)
    elif change == "missing":
        nodes[10].data_deps.append(2)
    elif change == "decreasing":
        nodes[5], nodes[6] = nodes[6], nodes[5]
    _write(tmp_path / "u.0.et", nodes)
    _write(tmp_path / "u.1.et", _unusual()[:50])
    traces = open_traceset(str(tmp_path / "u.*.et"))
    for rt in traces:
        tally = tally_columns(rt, True)
        # ids out of order: the first pass of the two (its answer after the second, which fails here)
        two_passes = change == "decreasing" and rt.rank == 0
        assert tally is not None and isinstance(tally.path, SortedPath) == two_passes
        assert tally.path.ok == (change in ("none", "decreasing") or rt.rank == 1)
    s = _stats.compute_stats(traces)
    assert s == _node_by_node(traces, monkeypatch)
    assert s["unknown_types"] == {"99": 66 + 8}
    assert s["collectives"]["UNKNOWN_77"]["count"] > 0 and s["collectives"]["UNKNOWN_-1"]["count"] > 0


def test_overflow_same_error(tmp_path, monkeypatch):
    _write(tmp_path / "o.0.et", [Node(id=1, type=4, duration_micros=1 << 62), Node(id=2, type=4, data_deps=[1],
                                                                                    duration_micros=1 << 62)])
    traces = open_traceset(str(tmp_path / "o.0.et"))
    errors = []
    for run in (_stats.compute_stats, lambda t: _node_by_node(t, monkeypatch)):
        with pytest.raises(TraceFormatError) as e:
            run(traces)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "node 2" in errors[0]


@pytest.mark.parametrize("step", [1, 2, 1 << 40])
def test_path_memory_per_node(step):
    """12 bytes a node with consecutive ids, 16 with others, 20 with ids spanning 2^32 or more;
    the path of a chain is its length."""
    n = 100_000
    ids = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(step)
    path = _pathkernel.PathRuns(compile_it=True)
    for lo in range(0, n, 30_000):
        run = ids[lo:lo + 30_000]
        ptr = np.concatenate([[0], np.cumsum(run > ids[0])]).astype(np.int64)
        assert path.add(run, ptr, run[run > ids[0]] - np.uint64(step), np.full(len(run), 3, np.uint64)) == -1
    assert path.ok and path.result() == (3 * n, n)
    assert path.finish.nbytes + path.count.nbytes + path.known.nbytes == {1: 12, 2: 16}.get(step, 20) * n
    assert path.id_at(n - 1) == n * step


def test_plain_python_path_same():
    """The relaxation run as Python (the kernel itself) gives the finishes and counts of its
    compiled form."""
    ids = np.array([2, 4, 6, 8, 10], np.uint64)
    ptr = np.array([0, 0, 1, 3, 4, 6], np.int64)
    deps = np.array([2, 2, 4, 6, 4, 8], np.uint64)
    durations = np.array([5, 1, 7, 2, 9], np.uint64)
    results = []
    for kernel in (_pathkernel.relax_run, compiled(_pathkernel.relax_run)):
        finish, count = np.zeros(5, np.int64), np.zeros(5, np.int32)
        results.append((kernel(ptr, deps, durations, 0, np.uint64(2), ids - np.uint64(2), finish, count), finish.tolist(),
                        count.tolist()))
    assert results[0] == results[1]
    assert results[0][1] == [5, 6, 13, 15, 24] and results[0][2] == [1, 2, 3, 4, 5]


def _converted(tmp_path: Path, name: str, mirror: bool = False, copies: int = 1) -> Path:
    """A recorded PyTorch set converted and written as ``.et`` (its ids out of order, every
    dependency on an earlier node), each rank ``copies`` times over (copy ``k``'s ids moved up
    by ``k`` strides; ``mirror``: every id ``i`` then written as ``top - i``)."""
    from chakra_core.pipeline._pipeline import load_traces

    for rt in load_traces([str(ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / name)], "pytorch"):
        nodes = list(rt.nodes())
        stride = max(n.id for n in nodes) + 1
        out = []
        for k in range(copies):
            for n in nodes:
                m = Node.FromString(n.SerializeToString())
                m.id = _moved(n.id, k, stride, copies, mirror)
                m.data_deps[:] = [_moved(d, k, stride, copies, mirror) for d in n.data_deps]
                m.ctrl_deps[:] = [_moved(d, k, stride, copies, mirror) for d in n.ctrl_deps]
                out.append(m)
        with EtWriter(str(tmp_path / f"{name}.{rt.rank}.et"), rt.metadata()) as w:
            w.write_many(out)
    return tmp_path


def _moved(i: int, k: int, stride: int, copies: int, mirror: bool) -> int:
    """Id ``i`` of copy ``k`` (moved up by ``k`` strides; ``mirror``: then taken from the top)."""
    return stride * copies - (i + k * stride) if mirror else i + k * stride


@pytest.mark.parametrize("name,mirror,copies", [("ddp", False, 1), ("pipeline_dp", False, 1), ("transformer", False, 1),
                                                 ("transformer", False, 60), ("transformer", True, 60)])
def test_ids_out_of_order_take_two_passes_with_the_graphs_answer(tmp_path, monkeypatch, name, mirror, copies):
    """Converted ranks (ids out of order; 60 copies: several runs of columns, ids ascending or
    descending from copy to copy) get the node-by-node statistics from the columns, the path in
    a second pass; the recorded DDP set's known path."""
    pytest.importorskip("chakra_pytorch")
    traces = open_traceset(str(_converted(tmp_path, name, mirror, copies) / f"{name}.*.et"))
    for rt in traces:
        tally = tally_columns(rt, True)
        path = tally.path
        assert isinstance(path, SortedPath) and path.ok
        assert _stats._path(rt, tally) == (*path.result()[:2], 0) and path.ok and tally.path is None
    monkeypatch.setattr(_stats, "COLUMNS_FROM", 0)
    s = _stats.compute_stats(traces)
    assert s == _node_by_node(traces, monkeypatch)
    if name == "ddp":
        assert (s["nodes"], s["longest_path_us"]) == (172, 13165)
    if copies > 1:
        assert s["nodes"] == 274 * copies and Path(traces[0].file).stat().st_size > 2 << 20


@pytest.mark.parametrize("change", ["repeated", "missing", "later", "overflow"])
def test_ids_out_of_order_not_in_dependency_order_get_the_graphs_answer(tmp_path, monkeypatch, change):
    """A converted rank with a repeated id, a missing dependency, one on a later node or a path
    past 2^63-1 us: the second pass gives up and the graph answers (or words the error) as the
    node-by-node statistics do."""
    pytest.importorskip("chakra_pytorch")
    _converted(tmp_path, "transformer")
    path = tmp_path / "transformer.0.et"
    nodes = [n for b in open_traceset(str(path))[0].batches() for n in b]
    if change == "repeated":
        nodes[200].id = nodes[100].id
    elif change == "missing":
        nodes[150].data_deps.append(10 ** 9)
    elif change == "later":
        nodes[120].data_deps.append(nodes[180].id)
    else:
        nodes[130].duration_micros, nodes[-1].duration_micros = 1 << 62, 1 << 62
        nodes[-1].data_deps.append(nodes[130].id)
        nodes[-2].duration_micros = (1 << 63) - 1
        nodes[-2].data_deps.append(nodes[130].id)
    _write(path, nodes)
    traces = open_traceset(str(path))
    tally = tally_columns(traces[0], True)
    assert isinstance(tally.path, SortedPath) and tally.path.ok
    monkeypatch.setattr(_stats, "COLUMNS_FROM", 0)
    got = []
    for run in (_stats.compute_stats, lambda t: _node_by_node(t, monkeypatch)):
        try:
            got.append(run(traces))
        except TraceFormatError as e:
            got.append(str(e))
    assert got[0] == got[1]
    assert (change == "overflow") == isinstance(got[0], str)


@pytest.mark.parametrize("step", [4, 1 << 40])
def test_sorted_path_memory_per_node(step):
    """16 bytes a node (offsets of 4 bytes, finish, path length) while the ids span less than
    2^32, 20 past it; descending ids: a chain's path is its length."""
    n = 100_000
    ids = np.arange(n, 0, -1, dtype=np.uint64) * np.uint64(step)
    path = SortedPath(ids[:30_000])
    for lo in range(30_000, n, 30_000):
        path.collect(ids[lo:lo + 30_000])
    path.seal()
    assert path.keys.nbytes + path.finish.nbytes + path.count.nbytes == (16 if step == 4 else 20) * n
    for lo in range(0, n, 30_000):
        run = ids[lo:lo + 30_000]
        ptr = np.concatenate([[0], np.cumsum(run < ids[0])]).astype(np.int64)
        path.relax(run, ptr, run[run < ids[0]] + np.uint64(step), np.full(len(run), 3, np.uint64))
    assert path.ok and path.result() == (3 * n, n)
