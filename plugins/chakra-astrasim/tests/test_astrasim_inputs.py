"""Exports of traces produced by the project's input plugins, checked against every rule.

Text workloads: small hand-written ones in every mode (no framework here writes the text
format) and the examples under examples/text/ (written by examples/text/make_examples.py).
PyTorch: the traces recorded by plugins/chakra-pytorch/recording/ (DDP on 2 ranks, every
collective and point-to-point kind on 2 ranks).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chakra_astrasim import export_astrasim
from chakra_core import CommType, NodeType, get_int, get_str, load_traces, read_et

ROOT = Path(__file__).resolve().parents[3]
TEXT = ROOT / "examples" / "text"
PYTORCH = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"
LAYERS = """l0 -1 10 ALLTOALL 100 11 ALLTOALL 101 12 ALLREDUCE 102 0
l1 -1 20 ALLREDUCE 200 21 ALLGATHER 201 22 REDUCESCATTER 202 0
l2 -1 30 NONE 0 31 ALLREDUCE 301 32 ALLREDUCE 302 0
l3 -1 40 ALLGATHER 400 41 NONE 0 42 ALLREDUCE 402 0
"""
HEADERS = {
    "MICRO": "MICRO", "DATA": "DATA", "MODEL": "MODEL",
    "HYBRID_DATA_MODEL": "HYBRID_DATA_MODEL model_parallel_NPU_group: 2",
    "HYBRID_MODEL_DATA": "HYBRID_MODEL_DATA model_parallel_NPU_group: 4",
    "HYBRID_TRANSFORMER": "HYBRID_TRANSFORMER model_parallel_NPU_group: 2",
    "HYBRID_DLRM": "HYBRID_DLRM 1",
}

pytest.importorskip("chakra_text")


def _core_errors(out: Path) -> list:
    """Errors of the core validator on the exported workload (a second, independent opinion)."""
    from chakra_core import open_traceset, validate

    return [f for f in validate(open_traceset(str(out / "workload"))) if f.severity == "error"]


def _ranks_nodes(out: Path, n: int):
    return {r: list(read_et(out / "workload" / f"trace.{r}.et")[1]) for r in range(n)}


@pytest.mark.parametrize("mode", sorted(HEADERS))
def test_text_modes_export(tmp_path, mode, astrasim_check):
    src = tmp_path / "w.txt"
    src.write_text(f"{HEADERS[mode]}\n4\n{LAYERS}")
    ts = load_traces([str(src)], "text", {"npus": 8, "passes": 2})
    res = export_astrasim(ts, tmp_path / "out", {})
    astrasim_check(tmp_path / "out")
    assert res.summary["nodes_out"] == res.summary["nodes_in"]  # nothing to remove in text traces
    groups = json.loads((tmp_path / "out" / "groups.json").read_text()) if ts.process_groups else {}
    # every trace group smaller than the network is written, numbered from 1, same members
    written = sorted(sorted(v) for v in groups.values())
    expect = sorted(sorted(v) for v in ts.process_groups.values() if len(v) < 8)
    assert written == expect


def test_hybrid_groups_follow_model_parallel_layout(tmp_path, astrasim_check):
    src = tmp_path / "w.txt"
    src.write_text(f"{HEADERS['HYBRID_DATA_MODEL']}\n4\n{LAYERS}")
    ts = load_traces([str(src)], "text", {"npus": 8})
    export_astrasim(ts, tmp_path / "out", {})
    astrasim_check(tmp_path / "out")
    groups = json.loads((tmp_path / "out" / "groups.json").read_text())
    mp = sorted(g for g in groups.values() if len(g) == 2)
    dp = sorted(g for g in groups.values() if len(g) == 4)
    assert mp == [[0, 1], [2, 3], [4, 5], [6, 7]] and dp == [[0, 2, 4, 6], [1, 3, 5, 7]]
    nodes = _ranks_nodes(tmp_path / "out", 8)
    for r in range(8):
        for n in nodes[r]:
            if n.type == NodeType.COMM_COLL_NODE and get_str(n, "pg_name"):
                assert r in groups[get_str(n, "pg_name")]


@pytest.mark.parametrize("name, npus", [("resnet50_like.txt", 16), ("dlrm_like.txt", 8),
                                        ("gpt3_like.txt", 16)])
def test_example_workloads_export(tmp_path, name, npus, astrasim_check):
    opts = {"npus": npus}
    if name.startswith("gpt3"):
        opts["mp_group"] = 8
    ts = load_traces([str(TEXT / name)], "text", opts)
    net = tmp_path / "net.yml"
    net.write_text(f"topology: [ FullyConnected, Ring ]\nnpus_count: [ 4, {npus // 4} ]\n"
                   "bandwidth: [ 200, 25 ]\nlatency: [ 100, 1000 ]\n")
    res = export_astrasim(ts, tmp_path / "out", {"network": str(net)})
    astrasim_check(tmp_path / "out")
    assert _core_errors(tmp_path / "out") == []
    assert res.summary["ranks"] == npus and res.summary["report"]["warnings"] == []


def _pytorch_set(name: str):
    pytest.importorskip("chakra_pytorch.format")
    return load_traces([str(PYTORCH / name)], "pytorch", {})


def test_pytorch_ddp_two_ranks(tmp_path, astrasim_check):
    ts = _pytorch_set("ddp")
    res = export_astrasim(ts, tmp_path, {})
    astrasim_check(tmp_path)
    assert res.summary["ranks"] == 2
    nodes = _ranks_nodes(tmp_path, 2)
    colls = [[(get_int(n, "comm_type"), get_int(n, "comm_size")) for n in nodes[r]
              if n.type == NodeType.COMM_COLL_NODE] for r in (0, 1)]
    assert colls[0] == colls[1]
    assert any(kind == 0 for kind, _ in colls[0])  # DDP: gradient all-reduces


def test_pytorch_every_collective(tmp_path, astrasim_check):
    ts = _pytorch_set("collectives")
    res = export_astrasim(ts, tmp_path, {})
    astrasim_check(tmp_path)
    assert _core_errors(tmp_path) == []
    rewritten = res.summary["report"]["rewritten"]
    for kind in ("REDUCE", "GATHER", "SCATTER", "BARRIER"):
        assert any(k.startswith(kind + "->") for k in rewritten), kind
    nodes = _ranks_nodes(tmp_path, 2)
    # recorded broadcasts have a duration (from Kineto): kept for ASTRA-sim to replay
    bcast = [n for n in nodes[0] if n.type == NodeType.COMM_COLL_NODE
             and get_int(n, "comm_type") == CommType.BROADCAST]
    assert bcast and all(n.duration_micros > 0 for n in bcast)
    assert not any(k.startswith("BROADCAST->") for k in rewritten)
    sends = [n for n in nodes[0] + nodes[1] if n.type == NodeType.COMM_SEND_NODE]
    recvs = [n for n in nodes[0] + nodes[1] if n.type == NodeType.COMM_RECV_NODE]
    assert sends and len(sends) == len(recvs)


def test_pytorch_set_on_larger_network_writes_each_group_once(tmp_path, astrasim_check):
    """The recorded 2-rank set defines group "1" = [0, 1]; on 8 NPUs its all-rank collectives
    need a group of the trace's ranks, which is the same list: one id serves both."""
    ts = _pytorch_set("collectives")
    assert ts.process_groups == {"1": [0, 1]}
    res = export_astrasim(ts, tmp_path, {"network": str(ROOT / "examples/system/astra/network.yml")})
    astrasim_check(tmp_path)
    assert json.loads((tmp_path / "groups.json").read_text()) == {"1": [0, 1]}
    assert res.summary["groups"] == 1
    assert res.summary["report"]["groups"] == {"1": "1", "(all trace ranks)": "1"}
    assert res.summary["report"]["warnings"] == []
    pgs = {get_str(n, "pg_name") for r in (0, 1) for n in _ranks_nodes(tmp_path, 2)[r]
           if n.type == NodeType.COMM_COLL_NODE}
    assert pgs == {"1"}


@pytest.mark.parametrize("name, opts", [("gpt3_like.txt", {"npus": 32, "mp_group": 8}),
                                        ("dlrm_like.txt", {"npus": 16}),
                                        ("resnet50_like.txt", {"npus": 16})])
def test_reused_conversions_equal_full_ones(tmp_path, monkeypatch, name, opts):
    """Ranks converted from an identical rank or a template are byte-identical to full conversions."""
    from chakra_astrasim import reuse

    ts = load_traces([str(TEXT / name)], "text", opts)
    fast = export_astrasim(ts, tmp_path / "fast", {})
    monkeypatch.setattr(reuse, "CACHE_LIMIT", 0)
    slow = export_astrasim(ts, tmp_path / "slow", {})
    ranks = fast.summary["report"]["ranks"]
    assert ranks["converted_once_reused"] + ranks["converted_from_template"] > 0
    assert slow.summary["report"]["ranks"]["converted_once_reused"] == 0
    assert fast.summary["report"] | {"ranks": None} == slow.summary["report"] | {"ranks": None}
    for f in sorted((tmp_path / "slow").rglob("*")):
        if f.is_file() and f.name != "report.json":
            assert f.read_bytes() == (tmp_path / "fast" / f.relative_to(tmp_path / "slow")).read_bytes(), f


@pytest.mark.parametrize("name, opts", [("resnet50_like.txt", {"npus": 8}),
                                        ("gpt3_like.txt", {"npus": 16, "mp_group": 8})])
def test_export_preserves_simulated_time(tmp_path, name, opts):
    """The simpy backend gives every rank the same finish time on the original set and on the
    exported workload (run with the exported configuration files): nothing that matters to
    timing is lost or changed when nothing needs rewriting."""
    pytest.importorskip("chakra_simpy")
    from chakra_core import get_host, open_traceset

    ts = load_traces([str(TEXT / name)], "text", opts)
    export_astrasim(ts, tmp_path, {})
    sim = get_host().registry.get("backend", "simpy")
    o = sim.check_options({k: str(tmp_path / f) for k, f in (
        ("system", "system.json"), ("network", "network.yml"), ("memory", "memory.json"))})
    before = [(r["rank"], r["finish_ns"], r["exposed_comm_ns"]) for r in sim.run(ts, o, None).ranks]
    after = [(r["rank"], r["finish_ns"], r["exposed_comm_ns"])
             for r in sim.run(open_traceset(str(tmp_path / "workload")), o, None).ranks]
    assert after == before and len(before) == opts["npus"]


def test_pytorch_ddp_export_preserves_simulated_time(tmp_path):
    """DDP on 2 ranks: its recorded BROADCASTs have durations, so the default export keeps them
    (replayed, as the simpy backend does); the only changes are removed METADATA nodes and
    cleared is_cpu_op flags on gloo collectives: simpy times it the same.  (The exporter used to
    rewrite them by default, then 4,050,094 ns against simpy's 4,763,240 ns on the original.)"""
    pytest.importorskip("chakra_simpy")
    from chakra_core import get_host, open_traceset

    ts = _pytorch_set("ddp")
    res = export_astrasim(ts, tmp_path, {})
    assert res.summary["report"]["removed"] == {"METADATA_NODE": 2}
    assert res.summary["report"]["rewritten"] == {}
    sim = get_host().registry.get("backend", "simpy")
    o = sim.check_options({"network": str(tmp_path / "network.yml")})
    before = [r["finish_ns"] for r in sim.run(ts, o, None).ranks]
    after = [r["finish_ns"] for r in sim.run(open_traceset(str(tmp_path / "workload")), o, None).ranks]
    assert after == before and min(before) > 0


#: a system.json in ASTRA-sim's own format that lists an implementation for all-reduce only
#: (hand-written: the keys as ASTRA-sim's examples/system/*.json spell them)
_ALL_REDUCE_ONLY = {"scheduling-policy": "FIFO", "collective-optimization": "baseline",
                    "preferred-dataset-splits": 1, "local-mem-bw": 50, "all-reduce-implementation": ["ring"]}


def test_kinds_a_system_file_leaves_out_are_said_as_written(tmp_path):
    """The recording of every collective kind issues all-gathers, reduce-scatters and
    all-to-alls; a system file without their lists is written with ring on every dimension,
    and the export says so for exactly those three kinds."""
    system = tmp_path / "system.json"
    system.write_text(json.dumps(_ALL_REDUCE_ONLY))
    r = export_astrasim(load_traces(str(PYTORCH / "collectives")), tmp_path / "x", {"system": str(system)})
    said = [n for n in r.notes if "-implementation' not in" in n]
    assert [n.split("'")[1] for n in said] == ["all-gather-implementation", "reduce-scatter-implementation",
                                               "all-to-all-implementation"]
    written = json.loads((tmp_path / "x" / "system.json").read_text())
    assert [written[f"{k}-implementation"] for k in ("all-gather", "reduce-scatter", "all-to-all")] == [["ring"]] * 3


def test_a_system_file_without_local_mem_bw_names_the_key(tmp_path):
    from chakra_core import ConfigError

    system = tmp_path / "system.json"
    system.write_text(json.dumps({k: v for k, v in _ALL_REDUCE_ONLY.items() if k != "local-mem-bw"}))
    with pytest.raises(ConfigError) as e:
        export_astrasim(load_traces(str(PYTORCH / "ddp")), tmp_path / "x", {"system": str(system)})
    assert str(e.value).startswith(f"{system}:key 'local-mem-bw': 'local-mem-bw' is 0 GB/s")
    assert not (tmp_path / "x").exists()
