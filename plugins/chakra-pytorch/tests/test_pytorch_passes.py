"""The passes of the conversion one by one, on the recorded traces, and reading each file once."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

from chakra_pytorch import convert_rank, find_rank_files, graph, hostet, kineto, open_pytorch
from chakra_pytorch.comms import kind_of_kernel

DATA = Path(__file__).resolve().parent / "data"


def _kineto_events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def _build(name: str, rank: int = 0):
    rfs, _ = find_rank_files([str(DATA / name)])
    rf = rfs[rank]
    host = hostet.read_host_et(rf.host)
    kt = kineto.read_kineto(rf.kineto)
    return graph.RankBuild(host, kt, rf.rank, len(rfs), {}, next_id=10**6), Path(rf.kineto)


def test_place_on_grid_takes_the_profiler_step_and_the_earliest_start():
    b, path = _build("mlp")
    graph.place_on_grid(b)
    events = _kineto_events(path)
    step = next(e for e in events if e["name"].startswith("ProfilerStep#"))
    assert b.step is not None and b.step[0] == step["ts"] and abs(b.step[1] - step["dur"]) < 1e-3
    assert b.t0 <= step["ts"] and b.grid(step["ts"]) >= 0
    # every host op Kineto recorded has its span, rounded on the grid
    recorded = {e["args"]["Record function id"] for e in events if "Record function id" in e.get("args", {})}
    assert {op.id for op in b.host.ops if op.rf_id in recorded} == set(b.span)


def test_gpu_owners_are_the_launching_host_ops():
    b, _ = _build("nccl")
    owners, comm_owners = graph.gpu_owners(b)
    names = {op.id: op.name for op in b.host.ops}
    assert b.kt is not None and len(owners) == len(b.kt.gpu)
    for g, owner in zip(b.kt.gpu, owners):
        if kind_of_kernel(g.name) is not None:  # NCCL kernels: launched by their c10d op
            assert names[owner].startswith("c10d::") and owner in comm_owners
    assert {names[o] for o in comm_owners} == {"c10d::allreduce_", "c10d::_allgather_base_", "c10d::send"}


def test_distributed_info_is_the_objects_of_the_file():
    for name in ("ddp", "collectives", "nccl"):
        for path in sorted((DATA / name).glob("kineto.*")):
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt") as f:
                want = json.load(f)["distributedInfo"]
            assert kineto.read_distributed_info(str(path)) == want


def test_each_file_is_read_through_once(monkeypatch):
    passes: list[str] = []
    for module in (hostet, kineto):
        real = module.iter_items

        def counted(path, key, decode=None, real=real):
            passes.append(Path(path).name)
            return real(path, key, decode)
        monkeypatch.setattr(module, "iter_items", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(DATA / "ddp")])
        for rt in ts:
            list(rt.nodes())
    # distributedInfo lists the groups: rank 0's host ET is not scanned for them beforehand
    assert sorted(passes) == ["kineto.0.json.gz", "kineto.1.json.gz", "pytorch_et.0.json.gz",
                              "pytorch_et.1.json.gz"]


def test_rank_files_carry_what_was_read_to_sort_them():
    rfs, dist = find_rank_files([str(DATA / "ddp")])
    assert [rf.distributed["rank"] for rf in rfs] == [0, 1] and dist["world_size"] == 2
    g = convert_rank(rfs[0])
    assert g.step_us and g.step_us > 0
