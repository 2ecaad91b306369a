"""Host ETs linked by the MLCommons ``chakra_trace_link`` ("ET+") convert alone.

The linked files are produced here by the rules of that tool from our recordings (host ET +
Kineto of ``mlp/``) and from the hand-made ``nccl/`` fixture (for the GPU nodes): node ids
renumbered in id order, each host node Kineto recorded given ``ts``, ``inclusive_dur``,
``exclusive_dur`` and ``inter_thread_dep``, each GPU activity added as a copy of the host op that
launched it with ``cat``, ``name``, ``ph``, ``ts``, ``inclusive_dur``, ``exclusive_dur`` and
``stream``, written as one JSON document indented by 4.
"""

from __future__ import annotations

import copy
import gzip
import json
import warnings
from pathlib import Path

import pytest

from chakra_core import NodeType, get_int
from chakra_pytorch import PyTorchTraceWarning, RankFiles, convert_rank, find_rank_files

DATA = Path(__file__).resolve().parent / "data"
GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def _load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def _attr(node: dict, name: str):
    return next((a["value"] for a in node.get("attrs", []) if a["name"] == name), None)


def _link(host_path: Path, kineto_path: Path, out: Path) -> Path:
    """The linked host ET chakra_trace_link writes for this pair."""
    host, events = _load(host_path), _load(kineto_path)["traceEvents"]
    xs = [e for e in events if e.get("ph") == "X"]
    by_rf = {e["args"]["Record function id"]: e for e in xs
             if e.get("cat") in ("cpu_op", "user_annotation") and "Record function id" in e.get("args", {})}
    ext_of_corr = {e["args"]["correlation"]: e["args"].get("External id") for e in xs
                   if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    rf_of_ext = {e["args"]["External id"]: rf for rf, e in by_rf.items() if "External id" in e["args"]}
    nodes = sorted(host["nodes"], key=lambda n: n["id"])
    new_id = {n["id"]: i for i, n in enumerate(nodes)}
    launched: dict[int, list[dict]] = {}
    for e in sorted((e for e in xs if e.get("cat") in GPU), key=lambda e: e["ts"]):
        rf = rf_of_ext.get(e["args"].get("External id", ext_of_corr.get(e["args"].get("correlation"))))
        launched.setdefault(rf, []).append(e)
    out_nodes = []
    for n in nodes:
        k = by_rf.get(_attr(n, "rf_id"))
        if k is not None:
            n.update(ts=k["ts"], inclusive_dur=k["dur"], exclusive_dur=k["dur"], inter_thread_dep=None)
        out_nodes.append(n)
        for e in launched.get(_attr(n, "rf_id"), []) if k is not None else []:
            gpu = copy.deepcopy(n)
            gpu.update(id=len(new_id) + len(out_nodes), ctrl_deps=n["id"], cat=e["cat"], name=e["name"], ph="X",
                       ts=e["ts"], inclusive_dur=e["dur"], exclusive_dur=e["dur"], stream=e["args"].get("stream"))
            out_nodes.append(gpu)
    for n in out_nodes:
        if n.get("cat") not in GPU:
            n["id"] = new_id[n["id"]]
        n["ctrl_deps"] = new_id.get(n["ctrl_deps"], n["ctrl_deps"])
    host["nodes"] = sorted(out_nodes, key=lambda n: n["id"])
    out.write_text(json.dumps(host, indent=4))
    return out


def _summary(graph):
    """Per node: (name, type, start, duration); ids and dependencies aside."""
    return [(n.name, n.type, n.start, n.dur) for n in graph.nodes if n.type != NodeType.METADATA_NODE]


def test_linked_cpu_trace_converts_alone_as_host_plus_kineto(tmp_path):
    (rf,), _ = find_rank_files([str(DATA / "mlp")])
    linked = _link(Path(rf.host), Path(rf.kineto), tmp_path / "mlp_et_plus.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyTorchTraceWarning)  # linked: no "durations missing"
        (alone,), _ = find_rank_files([str(linked)])
        got = convert_rank(alone)
    want = convert_rank(rf)
    assert _summary(got) == _summary(want)
    assert got.step_us == want.step_us > 0
    assert sum(n.dur for n in got.nodes) == sum(n.dur for n in want.nodes) > 0


@pytest.mark.parametrize("rank", [0, 1])
def test_linked_gpu_nodes_keep_kernels_streams_and_launchers(tmp_path, rank):
    host, kineto = DATA / "nccl" / f"pytorch_et.{rank}.json", DATA / "nccl" / f"kineto.{rank}.json"
    linked = _link(host, kineto, tmp_path / f"et_plus.{rank}.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = convert_rank(RankFiles(rank, str(linked)), world=2)
        want = convert_rank(RankFiles(rank, str(host), str(kineto)), world=2)
    gpu = [(n.name, n.type, n.start, n.dur, get_int(n.to_node(), "stream")) for n in got.nodes if not n.cpu]
    assert gpu == [(n.name, n.type, n.start, n.dur, get_int(n.to_node(), "stream"))
                   for n in want.nodes if not n.cpu]
    assert any(n.type == NodeType.COMM_COLL_NODE for n in got.nodes if not n.cpu)  # NCCL kernels
    by_id = {n.id: n for n in got.nodes}
    for n in got.nodes:
        if not n.cpu:  # each kernel after the host op that launched it
            assert any(by_id[d].cpu for d in n.ctrl)
