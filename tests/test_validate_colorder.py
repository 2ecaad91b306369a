"""The compiled validation of ranks whose ids do not ascend (the PyTorch converter writes its
nodes in dependency order with ids out of order): the columnar scan takes them, with the record
of the per-node scan, and broken ones are left to the per-node path, with the same findings.

The inputs are the PyTorch plugin's recordings, converted and written as ``.et``; the larger
ones are 40 copies of the converted transformer rank (more than one 1 MiB run), copy ``k`` with
every id and dependency moved up by ``k`` strides, as recorded or mirrored (descending ids).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from chakra_core.io._schema import GlobalMetadata, Node
from chakra_core.pipeline._pipeline import load_traces
from chakra_core.trace._traceset import MemoryRank, TraceSet, open_traceset
from chakra_core.validation import _colscan
from chakra_core.validation import _validate as V
from chakra_core.validation._rank_rules import RankCheck

pytest.importorskip("chakra_pytorch")
pytest.importorskip("numba")

DATA = Path(__file__).resolve().parents[1] / "plugins" / "chakra-pytorch" / "tests" / "data"
COPIES = 40


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Each recording's converted nodes per rank (written and read back as ``.et``)."""
    out = tmp_path_factory.mktemp("conv")
    got = {}
    for name in ("transformer", "ddp", "pipeline_dp"):
        load_traces([str(DATA / name)], "pytorch").write(out / name)
        traces = open_traceset(str(out / name))
        got[name] = (traces, {rt.rank: list(rt.nodes()) for rt in traces})
    return got


def _moved(nodes: list[Node], f: Callable[[int], int]) -> list[Node]:
    out = []
    for n in nodes:
        m = Node.FromString(n.SerializeToString())
        m.id = f(n.id)
        m.data_deps[:] = [f(d) for d in n.data_deps]
        m.ctrl_deps[:] = [f(d) for d in n.ctrl_deps]
        out.append(m)
    return out


def _copies(nodes: list[Node], mirror: bool = False, ascending_first: int = 0) -> list[Node]:
    """``COPIES`` copies of ``nodes``, copy ``k`` moved up by ``k`` strides (``mirror``: then
    every id mapped to ``top - id``); the first ``ascending_first`` copies renumbered ``top + 1``,
    ``top + 2``, ... in file order (the ids ascend up to there, above all the others)."""
    stride = max(n.id for n in nodes) + 1
    top = stride * COPIES
    out: list[Node] = []
    for k in range(COPIES):
        off = k * stride
        if k < ascending_first:
            number = {n.id: top + len(out) + i + 1 for i, n in enumerate(nodes)}
            out += _moved(nodes, number.__getitem__)
        else:
            out += _moved(nodes, _offset(off, top if mirror else None))
    return out


def _offset(off: int, top: int | None) -> Callable[[int], int]:
    """Id ``i`` moved up by ``off`` (and mapped to ``top - i - off`` when ``top`` is given)."""
    if top is None:
        return lambda i: i + off
    return lambda i: top - i - off


def _write(tmp_path, ranks: dict[int, list[Node]], groups=None) -> str:
    TraceSet([MemoryRank(r, GlobalMetadata(version="0.0.4"), nodes) for r, nodes in ranks.items()],
             process_groups=groups).write(tmp_path / "t")
    return str(tmp_path / "t")


def _found(findings):
    return [(f.rule, f.file, f.node_id, f.message, f.severity, f.rank, f.count, f.involved) for f in findings]


def _both(prefix: str, monkeypatch) -> tuple[list, list, list[bool]]:
    """The findings of the per-node path and of the compiled loops; per rank whether the
    columnar scan gave its record."""
    taken: list[bool] = []
    real = _colscan.scan_columns
    monkeypatch.setattr(_colscan, "scan_columns", lambda rt, chk: _spy(real, taken, rt, chk))
    plain = _found(V.validate_as(open_traceset(prefix), False))
    assert taken == []
    compiled = _found(V.validate_as(open_traceset(prefix), True))
    return plain, compiled, taken


def _spy(real, taken, rt, chk):
    got = real(rt, chk)
    taken.append(got is not None)
    return got


def _same_record(prefix: str, same_scan) -> None:
    """The columnar scan of every rank gives the per-node scan's record."""
    traces = open_traceset(prefix)
    nranks = max(traces.ranks) + 1 if len(traces) > 1 else 0
    for rt in traces:
        same_scan(rt, *(RankCheck(rt.rank, rt.label, nranks, print, lambda pg: 0, rt.rank_known) for _ in range(2)))


@pytest.mark.parametrize("name", ["transformer", "ddp", "pipeline_dp"])
def test_converted_sets_take_the_columns(name, converted, tmp_path, monkeypatch, same_scan):
    traces, ranks = converted[name]
    ids = [n.id for n in ranks[0]]
    assert ids != sorted(ids)
    prefix = _write(tmp_path, ranks, traces.process_groups)
    _same_record(prefix, same_scan)
    plain, compiled, taken = _both(prefix, monkeypatch)
    assert plain == compiled == []
    assert taken == [True] * len(ranks)


@pytest.mark.parametrize("mirror,ascending_first", [(False, 0), (True, 0), (False, 15), (True, 15)])
def test_copies_over_several_runs_take_the_columns(mirror, ascending_first, converted, tmp_path, monkeypatch,
                                                    same_scan):
    """11,000 nodes in 3 runs: ids out of order from the start, or ascending for the first
    4,110 nodes (then moved to slots by id)."""
    nodes = _copies(converted["transformer"][1][0], mirror, ascending_first)
    assert len(nodes) == 274 * COPIES
    prefix = _write(tmp_path, {0: nodes})
    assert (tmp_path / "t.0.et").stat().st_size > 2 << 20
    _same_record(prefix, same_scan)
    plain, compiled, taken = _both(prefix, monkeypatch)
    assert plain == compiled == [] and taken == [True]


def test_sparse_ids_are_left_to_the_per_node_path(converted, tmp_path, monkeypatch):
    """Ids 10^6 apart and out of order: a table by id would take 4 MB a node."""
    nodes = _moved(converted["transformer"][1][0], lambda i: i * 10**6)
    plain, compiled, taken = _both(_write(tmp_path, {0: nodes}), monkeypatch)
    assert plain == compiled == [] and taken == [False]


def _duplicate(nodes):
    """Node -5 takes the id of node -300: its own id is then missing for the nodes that name it."""
    old = nodes[-5].id
    nodes[-5].id = nodes[-300].id
    return [("duplicate-id", nodes[-300].id)] + [("missing-dep", n.id) for n in nodes
                                                   if old in n.data_deps or old in n.ctrl_deps]


def _dangling(nodes):
    present = {n.id for n in nodes}
    gap = next(i for i in range(min(present), max(present)) if i not in present)
    nodes[-7].data_deps.append(gap)
    nodes[-9].ctrl_deps.append(max(present) + 5)
    return [("missing-dep", nodes[-9].id), ("missing-dep", nodes[-7].id)]


def _self_dep(nodes):
    nodes[-11].data_deps.append(nodes[-11].id)
    return [("cycle", nodes[-11].id)]


def _cycle(nodes):
    b = next(n for n in reversed(nodes) if n.ctrl_deps)
    a = next(n for n in nodes if n.id == b.ctrl_deps[0])
    a.ctrl_deps.append(b.id)
    return [("cycle", min(a.id, b.id))]


def _forward(nodes):
    """A dependency on the last node from one that it does not reach: valid, not in file order."""
    nodes[10].ctrl_deps.append(nodes[-1].id)
    return []


@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("edit", [_duplicate, _dangling, _self_dep, _cycle, _forward])
def test_broken_copies_have_the_per_node_findings(edit, mirror, converted, tmp_path, monkeypatch):
    """Broken near the end of the file: the compiled loops leave the rank to the per-node path
    and report what it reports, in its order."""
    nodes = _copies(converted["transformer"][1][0], mirror)
    want = edit(nodes)
    plain, compiled, taken = _both(_write(tmp_path, {0: nodes}), monkeypatch)
    assert compiled == plain and taken == [False]
    got = sorted((f[0], f[2]) for f in plain)
    if edit is _cycle:
        assert [f[0] for f in plain] == ["cycle"] and str(want[0][1]) in plain[0][3]
    else:
        assert got == sorted(want)


@pytest.mark.parametrize("mirror,ascending_first", [(False, 0), (True, 15), (False, 15)])
def test_the_table_widens_between_two_nodes_with_the_same_record(mirror, ascending_first, converted, tmp_path,
                                                                  monkeypatch, same_scan):
    """The frontier table's 2-byte entries held at most 40 here (65,535 in use): the scan widens
    them to 4 bytes part-way through a run (by id, or by position while the ids ascend) and gives
    the per-node scan's record."""
    from chakra_core.validation import _frontkernel as fk

    nodes = _copies(converted["ddp"][1][0], mirror, ascending_first)
    prefix = _write(tmp_path, {0: nodes})
    widths: list[str] = []
    real = fk.Frontiers.csr
    monkeypatch.setattr(fk, "ENTRY_MAX", {**fk.ENTRY_MAX, fk.np.dtype(fk.np.uint16): 40})
    monkeypatch.setattr(fk.Frontiers, "csr", lambda self: (widths.append(str(self.fid.dtype)), real(self))[1])
    _same_record(prefix, same_scan)
    assert widths == ["int32"]
