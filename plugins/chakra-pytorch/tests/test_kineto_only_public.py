"""Kineto-only traces of other teams (tests/data/public, README there): HTA's AlexNet run and
NCCL DDP rank on A100s (the latter from the shared collection of public traces when it is
there) and HTA's CPU-only gloo rank convert from Kineto alone, validate, and keep what the
trace says."""

from __future__ import annotations

import gzip
import json
import math
import warnings
from collections import Counter
from pathlib import Path

import pytest

from chakra_core import CommType, NodeType, convert, export, simulate, validate
from chakra_pytorch import PyTorchTraceWarning, open_pytorch
from chakra_pytorch.kineto_graph import convert_kineto_rank
from chakra_pytorch.kineto_only import find_kineto_ranks

ALEXNET = Path(__file__).resolve().parent / "data" / "public" / "alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
NCCL = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "public-traces" / "hta" / "nccl_kineto" / "nccl_data.json.gz"
#: rank 0 of PARAM's DLRM run: its host ET and its Kineto trace (README there)
DLRM = Path(__file__).resolve().parent / "data" / "public" / "dlrm"
DLRM_KINETO = DLRM / "worker0_step_12.1694128201545.pt.trace.json.gz"
#: HTA's rank 34 of a 300-rank gloo job: 10 gloo:all_reduce annotations and no c10d op (README there)
CPU_ONLY = Path(__file__).resolve().parent / "data" / "public" / "cpu_only" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
needs_nccl = pytest.mark.skipif(not NCCL.is_file(), reason="the shared public traces are not on this machine")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _events(path: Path) -> list[dict]:
    return [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"] if e.get("ph") == "X"]


def _convert(path: Path):
    (kr,), world = find_kineto_ranks([str(path)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convert_kineto_rank(kr.path, kr.rank, world, {}, kr.distributed), world


def _stream(n) -> int | None:
    return dict(n.attrs()).get("stream")


@pytest.mark.parametrize("path", [pytest.param(NCCL, marks=needs_nccl), ALEXNET], ids=["nccl_kineto", "alexnet"])
def test_converts_from_kineto_alone_and_validates(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(path.parent)])
        assert [str(f) for f in validate(ts)] == []


@pytest.mark.parametrize("path", [pytest.param(NCCL, marks=needs_nccl), ALEXNET], ids=["nccl_kineto", "alexnet"])
def test_every_gpu_activity_is_a_node_launched_by_a_cpu_op(path):
    g, _ = _convert(path)
    by_id = {n.id: n for n in g.nodes}
    gpu = [n for n in g.nodes if not n.cpu and n.name != "[idle]"]
    events = [e for e in _events(path) if e.get("cat") in GPU_CATS]
    assert len(gpu) == len(events)
    # the launch: through the runtime call with the activity's correlation (AlexNet's older
    # Kineto gives runtime calls their correlation as External id, so only nesting finds the op)
    assert all(any(by_id[d].cpu and by_id[d].name != "[idle]" for d in n.ctrl) for n in gpu)
    assert sum(n.dur for n in gpu) == pytest.approx(sum(e["dur"] for e in events), abs=len(events))


@needs_nccl
def test_nccl_rank_collectives_sizes_groups_and_kernel_times():
    g, world = _convert(NCCL)
    assert (g.rank, world) == (0, 2)  # distributedInfo
    kernels = sorted((e for e in _events(NCCL) if e.get("cat") == "kernel" and e["name"].startswith("nccl")),
                     key=lambda e: e["ts"])
    comms = [n for n in g.nodes if n.type == NodeType.COMM_COLL_NODE]
    comms.sort(key=lambda n: n.start)
    assert len(comms) == len(kernels) == 21
    for n, k in zip(comms, kernels):
        a = dict(n.attrs())
        kind = CommType.ALL_REDUCE if "AllReduce" in k["name"] else CommType.BROADCAST
        # record_param_comms' In msg nelems x dtype (the NCCL kernel repeats them)
        size = k["args"]["In msg nelems"] * {"Float": 4, "Long": 8}[k["args"]["dtype"]]
        assert (a["comm_type"], a["comm_size"], a["pg_name"]) == (kind, size, "0")
        assert abs(n.dur - k["dur"]) <= 1 and not n.cpu
    assert Counter(dict(n.attrs())["comm_type"] for n in comms) == {CommType.ALL_REDUCE: 15, CommType.BROADCAST: 6}


@needs_nccl
def test_nccl_stream_waits_from_event_record_and_wait_calls():
    """No cuda_sync events in this trace: each cudaStreamWaitEvent is paired with the
    cudaEventRecord before it on its thread; the NCCL stream waits for the compute stream before
    each collective and the compute stream for the NCCL stream after it."""
    g, _ = _convert(NCCL)
    by_id = {n.id: n for n in g.nodes}
    compute, nccl_stream = 7, 40
    for n in g.nodes:
        if n.type == NodeType.COMM_COLL_NODE:
            assert any(_stream(by_id[d]) == compute for d in n.ctrl)
            assert any(n.id in m.ctrl and _stream(m) == compute for m in g.nodes)
    assert {_stream(n) for n in g.nodes if n.type == NodeType.COMM_COLL_NODE} == {nccl_stream}


def test_alexnet_stream_waits_from_cuda_sync_events():
    g, world = _convert(ALEXNET)
    assert world == 1
    by_id = {n.id: n for n in g.nodes}
    waits = [n for n in g.nodes if _stream(n) == 20 and any(_stream(by_id[d]) == 7 for d in n.ctrl)]
    assert waits  # "Stream Wait Event": stream 20 waits on stream 7


def _comm_sizes(ts) -> list[tuple[int, int]]:
    """(comm_type, comm_size) of each collective of rank 0, in node order."""
    attrs = [{a.name: a.int64_val for a in n.attr} for n in ts[0].nodes() if n.type == NodeType.COMM_COLL_NODE]
    return [(a["comm_type"], a["comm_size"]) for a in attrs]


def test_dlrm_nccl_ops_sized_as_by_the_host_et_of_the_same_run():
    # its c10d::allreduce_ events record a tensor list with empty dims: they were sized 0, with a
    # warning to profile with record_shapes=True, which the trace was ('record_shapes': 1); their
    # nccl:all_reduce annotations give the tensors' dims and dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings("error", ".*no size in the trace")
        from_kineto = _comm_sizes(open_pytorch([str(DLRM_KINETO)]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_host_et = _comm_sizes(open_pytorch([str(DLRM / "dlrm_eg_0.json.gz")]))
    assert from_kineto == from_host_et
    annotated = [4 * math.prod(e["args"]["Input Dims"][0]) for e in sorted(_events(DLRM_KINETO), key=lambda e: e["ts"])
                 if e["name"] == "nccl:all_reduce" and e["args"]["Input type"] == ["float"]]
    assert [size for kind, size in from_kineto if kind == CommType.ALL_REDUCE] == annotated
    assert len(annotated) == 3 and 394241 * 4 in annotated


def test_record_shapes_is_suggested_only_to_a_trace_without_shapes(tmp_path):
    # the trace recorded shapes: an op left unsized (its annotation's dims taken away here) is
    # not blamed on record_shapes
    doc = json.loads(gzip.decompress(DLRM_KINETO.read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("name") == "nccl:all_reduce":
            del e["args"]["Input Dims"]
    (tmp_path / "k.json").write_text(json.dumps(doc))
    with pytest.warns(PyTorchTraceWarning, match="3 communication op.* dims are empty") as got:
        list(open_pytorch([str(tmp_path / "k.json")])[0].nodes())
    assert not any("profile with record_shapes" in str(w.message) for w in got)


def _lone_annotations() -> list[dict]:
    """The cpu_only trace's gloo annotations, in start order (no c10d op issued them)."""
    return sorted((e for e in _events(CPU_ONLY) if e["name"].startswith("gloo:")), key=lambda e: (e["ts"], e["tid"]))


def _annotation_bytes(e: dict) -> int:
    """An annotation's one tensor: its Input Dims x its Input type's size."""
    (dims,), (dtype,) = e["args"]["Input Dims"], e["args"]["Input type"]
    return math.prod(dims) * {"float": 4}[dtype]


def test_cpu_only_gloo_annotations_without_an_op_are_collectives():
    lone = _lone_annotations()
    assert len(lone) == 10 and not any(e["name"].startswith("c10d::") for e in _events(CPU_ONLY))
    g, _ = _convert(CPU_ONLY)
    comms = sorted((n for n in g.nodes if n.type == NodeType.COMM_COLL_NODE),
                   key=lambda n: (n.start, dict(n.attrs())["tid"]))
    assert len(comms) == len(lone)
    for n, e in zip(comms, lone):
        a = dict(n.attrs())
        assert (n.name, a["comm_type"], a["comm_size"], a["pg_name"]) == (e["name"], CommType.ALL_REDUCE,
                                                                         _annotation_bytes(e), "0")
        assert abs(n.dur - e["dur"]) <= 1 and a["tid"] == e["tid"]


def test_cpu_only_lone_annotations_are_said_in_one_warning():
    lone = _lone_annotations()
    unnamed = sum(1 for e in lone if "Process Group Name" not in e["args"])
    with pytest.warns(PyTorchTraceWarning) as got:
        list(open_pytorch([str(CPU_ONLY)])[34].nodes())
    said = [str(w.message) for w in got if "with no communication op in the trace" in str(w.message)]
    assert len(said) == 1
    assert f"{len(lone)} gloo:/nccl: work annotation(s)" in said[0]
    assert f"{sum(e['dur'] for e in lone):.3f} us of work in all" in said[0]
    assert f"{unnamed} name no process group: put on the default group '0'" in said[0]


def _as_ranks(tmp_path: Path, ranks: int) -> Path:
    """The cpu_only trace as each of ``ranks`` ranks (its ``distributedInfo`` rank, world and
    groups' members rewritten, its events and group names kept): the job's other 299 traces are
    not public, and a simulator needs every rank of the set."""
    doc = json.loads(gzip.decompress(CPU_ONLY.read_bytes()))
    tmp_path.mkdir()
    info = doc["distributedInfo"]
    info["world_size"] = ranks
    for group in info["pg_config"]:
        group["ranks"], group["pg_size"] = list(range(ranks)), ranks
    for r in range(ranks):
        info["rank"] = r
        (tmp_path / f"kineto.{r}.json").write_text(json.dumps(doc))
    return tmp_path


def test_cpu_only_set_validates_simulates_and_exports_with_its_groups(tmp_path):
    pytest.importorskip("chakra_simpy")
    pytest.importorskip("chakra_astrasim")
    lone = _lone_annotations()
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"network": [{"topology": "Ring", "npus_count": 2, "bandwidth": 50, "latency": 500}]}))
    names = {str(g["pg_name"]) for g in json.loads(gzip.decompress(CPU_ONLY.read_bytes()))["distributedInfo"]["pg_config"]}
    assert any(not name.isdigit() for name in names)  # c180dae7743d700d8e30df1902fc6b1e_0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = validate(open_pytorch([str(CPU_ONLY)]))
        assert [(f.rule, f.severity) for f in alone] == [("partial-set", "warning")]  # rank 34 of 300
        convert([str(_as_ranks(tmp_path / "in", 2))], tmp_path / "et", format="pytorch")
        assert [str(f) for f in validate(str(tmp_path / "et"))] == []
        sim = simulate(str(tmp_path / "et"), "simpy", system=str(system))
        exported = export(str(tmp_path / "et"), "astrasim", tmp_path / "astra", system=str(system))
    (coll,) = sim.summary["collectives"]
    total = sum(map(_annotation_bytes, lone))
    assert (coll["collective"], coll["count"], coll["bytes"]) == ("ALL_REDUCE", len(lone), total)
    report = exported.summary["report"]
    assert set(report["groups"]) == names - {"0"} and "collective_on_one_rank" not in report["removed"]


def test_cpu_only_annotations_name_their_group_or_are_left_out(tmp_path):
    # edited: one thread's annotations become receives (no peer: left out), the other's name a
    # group of the trace (the one that is not a decimal name): their collectives are on it
    doc = json.loads(gzip.decompress(CPU_ONLY.read_bytes()))
    group = next(str(g["pg_name"]) for g in doc["distributedInfo"]["pg_config"] if not str(g["pg_name"]).isdigit())
    lone = [e for e in doc["traceEvents"] if e.get("name", "").startswith("gloo:")]
    recv_tid = lone[0]["tid"]
    for e in lone:
        if e["tid"] == recv_tid:
            e["name"] = "gloo:recv"
        else:
            e["args"]["Process Group Name"] = group
    (tmp_path / "rank34.json").write_text(json.dumps(doc))
    with pytest.warns(PyTorchTraceWarning) as got:
        nodes = list(open_pytorch([str(tmp_path / "rank34.json")])[34].nodes())
    left = [e for e in lone if e["tid"] == recv_tid]
    said = [str(w.message) for w in got if "with no communication op in the trace" in str(w.message)]
    assert len(said) == 2 and "default group" not in said[0]
    assert f"{len(left)} gloo:/nccl: work annotation(s)" in said[1] and "left out" in said[1]
    assert f"{sum(e['dur'] for e in left):.3f} us of work in all" in said[1]
    comms = [n for n in nodes if n.type == NodeType.COMM_COLL_NODE]
    assert len(comms) == len(lone) - len(left)
    assert {a.string_val for n in comms for a in n.attr if a.name == "pg_name"} == {group}


def test_nccl_annotation_outside_every_op_is_a_collective_not_the_previous_ops_work(tmp_path):
    # edited: DLRM's last c10d::allreduce_ renamed to an annotation, as torchrec's
    # "## alltoall_fwd_single ##" encloses HTA's trace_diff traces' nccl:all_to_all (no c10d op):
    # its nccl:all_reduce is no other op's work; it and its kernel are the all-reduce
    doc = json.loads(gzip.decompress(DLRM_KINETO.read_bytes()))
    ops = sorted((e for e in doc["traceEvents"] if e.get("name") == "c10d::allreduce_"), key=lambda e: e["ts"])
    ops[-1]["name"] = "## allreduce ##"
    (tmp_path / "k.json").write_text(json.dumps(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        edited = _comm_sizes(open_pytorch([str(tmp_path / "k.json")]))
        recorded = _comm_sizes(open_pytorch([str(DLRM_KINETO)]))
    assert edited == recorded
    (work,) = [e for e in _events(DLRM_KINETO) if e["name"] == "nccl:all_reduce" and e["ts"] > ops[-1]["ts"]]
    assert edited[-1] == (CommType.ALL_REDUCE, 4 * math.prod(work["args"]["Input Dims"][0]))


def test_a_process_id_in_kineto_names_is_no_rank(tmp_path):
    """HTA's cpu_only trace, its distributedInfo taken out, under Kineto's default name
    ``HOST_PID.<ms>.pt.trace.json`` with the pid of the process that recorded it: once the
    timestamp is skipped, the pid is the number left, and it was taken for the rank (trace.1074.et)."""
    doc = json.loads(gzip.decompress(CPU_ONLY.read_bytes()))
    doc.pop("distributedInfo")
    pids = Counter(e["pid"] for e in doc["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation")
                   and isinstance(e.get("pid"), int))
    pid = pids.most_common(1)[0][0]
    name = tmp_path / f"myhost_{pid}.1733580000123.pt.trace.json"
    name.write_text(json.dumps(doc))
    assert find_kineto_ranks([str(name)])[0][0].rank == 0  # one file: rank 0, the pid not taken
    (tmp_path / f"otherhost_{pid}.1733580000456.pt.trace.json").write_text(json.dumps(doc))
    with pytest.raises(Exception, match="cannot tell the rank"):
        find_kineto_ranks(sorted(str(p) for p in tmp_path.glob("*.json")))
