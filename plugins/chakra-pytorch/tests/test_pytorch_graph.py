"""Graph rules on real CPU traces recorded by recording/record_mlp.py and record_transformer.py."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from chakra_core import NodeType, get_bool, get_int, validate
from chakra_pytorch import PyTorchTraceWarning, convert_rank, find_rank_files, open_pytorch

DATA = Path(__file__).resolve().parent / "data"


def _graph(name: str, **kw):
    (rf,), _ = find_rank_files([str(DATA / name)])
    return convert_rank(rf, **kw)


def _lane(graph):
    """Host-thread nodes (real ops and [idle]) of the main thread, in order."""
    return [n for n in graph.nodes if n.type == NodeType.COMP_NODE]


def test_mlp_selects_top_level_ops_once():
    g = _graph("mlp")
    names = [n.name for n in g.nodes if n.name != "[idle]"]
    # forward of Linear -> ReLU -> Linear as three top-level ops; their nested aten ops folded
    assert names[:3] == ["aten::linear", "aten::relu", "aten::linear"]
    assert "aten::addmm" not in names and "aten::t" in names  # addmm only ever runs inside linear
    # SGD step without foreach: one aten::add_ per parameter tensor (4)
    assert names.count("aten::add_") == 4
    assert len(names) == len(set(n.id for n in g.nodes if n.name != "[idle]"))


@pytest.mark.parametrize("name", ["mlp", "transformer"])
def test_durations_sum_to_the_profiler_step(name):
    g = _graph(name)
    lane = _lane(g)
    # one host thread: every node of the lane runs back to back; together they fill the step
    assert g.step_us and g.step_us > 0
    assert abs(sum(n.dur for n in lane) - g.step_us) <= 1  # tolerance: 1 us of rounding
    # ... and nothing overlaps: each starts where the one it depends on ended
    for prev, n in zip(lane, lane[1:]):
        assert n.ctrl == [prev.id]
        assert n.start == prev.end


@pytest.mark.parametrize("name", ["mlp", "transformer"])
def test_idle_gaps_are_nodes_or_folded(name):
    g = _graph(name, min_idle_us=5)
    idle = [n for n in g.nodes if n.name == "[idle]"]
    assert idle and all(n.dur >= 5 for n in idle[1:-1])
    g2 = _graph(name, idle_gaps=False)
    assert not [n for n in g2.nodes if n.name == "[idle]"]
    assert sum(n.dur for n in _lane(g2)) < g.step_us


def test_exclusive_durations_not_double_counted():
    g = _graph("transformer")
    ops = [n for n in g.nodes if n.name != "[idle]" and n.type == NodeType.COMP_NODE]
    # no op of the converted graph contains another: intervals are disjoint
    spans = sorted((n.start, n.end) for n in ops)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    assert all(get_bool(n.to_node(), "is_cpu_op") for n in ops)
    # attention in_proj and out_proj, feed-forward linear1 and linear2: one top-level linear each
    assert [n.name for n in ops].count("aten::linear") == 4


def test_without_kineto_structure_same_durations_missing():
    with_k = _graph("mlp")
    (rf,), _ = find_rank_files([str(DATA / "mlp" / "pytorch_et.0.json.gz")])
    assert rf.kineto is None
    with pytest.warns(PyTorchTraceWarning, match="durations are missing"):
        ts = open_pytorch([str(DATA / "mlp" / "pytorch_et.0.json.gz")])
    nodes = list(ts[0].nodes())
    real = [n.name for n in with_k.nodes if n.name != "[idle]"]
    assert [n.name for n in nodes] == real
    assert all(n.duration_micros == 0 for n in nodes)


def test_attributes_copied_from_the_host_et():
    g = _graph("mlp")
    lin = next(n for n in g.nodes if n.name == "aten::linear").to_node()
    assert get_int(lin, "rf_id") > 0 and get_int(lin, "tid") == 1
    assert lin.inputs.values.startswith("[[") and "'cpu'" in lin.inputs.values
    assert lin.inputs.shapes == "[[8, 16], [32, 16], [32]]"


def test_data_deps_link_producer_to_consumer():
    g = _graph("mlp", data_deps=True)
    by_name = {}
    for n in g.nodes:
        by_name.setdefault(n.name, []).append(n)
    relu = by_name["aten::relu"][0]
    first_linear = by_name["aten::linear"][0]
    # relu consumes the output of the first linear layer (its ctrl dep is an idle node or linear)
    assert first_linear.id in relu.data or first_linear.id in relu.ctrl


@pytest.mark.parametrize("name", ["mlp", "transformer"])
def test_validates(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(DATA / name)])
    assert [f for f in validate(ts) if f.severity == "error"] == []


def test_hand_off_between_threads():
    # recording/record_threads.py: forward on the main thread, loss.backward() on a second
    # thread that the main thread joins, then the SGD step on the main thread
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyTorchTraceWarning)  # every op has its Kineto event
        g = _graph("threads")
    tid = {n.id: get_int(n.to_node(), "tid") for n in g.nodes if n.name != "[idle]"}
    main, worker = 1, next(t for t in tid.values() if t != 1)
    by_id = {n.id: n for n in g.nodes}
    back = [n for n in g.nodes if tid.get(n.id) == worker]
    assert back[0].name == "aten::ones_like" and back[-1].name == "aten::detach"

    def waits_for(n):  # dependencies, looking through the [idle] node in front
        out = set(n.ctrl)
        for d in n.ctrl:
            if by_id[d].name == "[idle]":
                out |= set(by_id[d].ctrl)
        return out

    loss = next(n for n in g.nodes if n.name == "aten::mse_loss")
    assert loss.id in waits_for(back[0])  # the backward thread starts after the loss
    first_step = next(n for n in g.nodes if n.name == "aten::add_")
    assert back[-1].id in waits_for(first_step) and tid[first_step.id] == main  # the join


def _critical_path(graph) -> int:
    finish: dict[int, int] = {}
    for n in graph.nodes:  # topological order
        finish[n.id] = max((finish[d] for d in (*n.ctrl, *n.data) if d in finish), default=0) + n.dur
    return max(finish.values())


@pytest.mark.parametrize("name", ["mlp", "transformer", "threads"])
def test_critical_path_reproduces_the_step(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = _graph(name)
    # single process: the longest dependency path is the observed step, within 1 us of rounding
    assert abs(_critical_path(g) - g.step_us) <= 1


@pytest.mark.parametrize("rank", [0, 1])
def test_critical_path_of_a_ddp_rank_excludes_peer_waits(rank):
    rfs, _ = find_rank_files([str(DATA / "ddp")])
    g = convert_rank(rfs[rank])
    # waiting for the other rank is not local work: a rank's own path is shorter than its step
    # but covers most of it (the recorded all-reduce waits about 6 ms of a 12-13 ms step)
    assert 0.5 * g.step_us < _critical_path(g) <= g.step_us


@pytest.mark.parametrize("records", [4096, 0])
@pytest.mark.parametrize("name", ["mlp", "transformer", "threads", "public/pt2", "ddp"])
def test_serialized_nodes_are_the_protobuf_bytes(monkeypatch, name, records):
    # the writer appends the encoded records of repeating host attributes (kept or not kept,
    # ``records`` of them per name): the bytes must be protobuf's own, node by node
    from chakra_pytorch import outnode

    monkeypatch.setattr(outnode, "_MAX_RECORDS", records)
    rank_files, _ = find_rank_files([str(DATA / name)])
    for rf in rank_files:
        nodes = convert_rank(rf).nodes
        assert any(n.host is not None for n in nodes)
        table = outnode.attr_records()
        assert [n.serialized(table) for n in nodes] == [n.to_node().SerializeToString() for n in nodes]
        printed = table.pop(outnode._PRINTED)  # the printed shapes and types: tests/test_iotext.py
        assert printed or not any(n.io for n in nodes)
        assert sum(map(len, table.values())) == (0 if records == 0 else len(
            {(k, v) for n in nodes if n.host is not None and not n.extra for k, v in n.attrs() if k in table}))
