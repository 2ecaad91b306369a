"""Public traces made by other teams (HTA, PARAM, MLCommons Chakra): every PyTorch version's
ET(+Kineto) converts or is refused for the documented reason; ranks come from the traces."""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from collections import Counter
from pathlib import Path

import pytest

from chakra_core import CommType, NodeType, TraceFormatError, detect_format, load_traces, validate
from chakra_pytorch import PyTorchTraceWarning, find_rank_files, open_pytorch

PUBLIC = Path(__file__).resolve().parent / "data" / "public"
#: the shared public traces, beside the repository (../shared), as every developer and CI has them
SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "public-traces"
SIMPLE_ADD = PUBLIC / "simple_add"
PT2 = PUBLIC / "pt2" / "pt2_et.json.gz"
PT102 = PUBLIC / "pytorch_102" / "1.0.2-chakra.0.0.4.json.gz"
COMM = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)


def _shared(rel: str) -> Path:
    p = SHARED / rel
    if not p.exists():
        pytest.skip(f"{p} is not on this machine")
    return p


def _nodes(paths):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = load_traces([str(p) for p in paths])
        return ts, {r: list(ts[r].nodes()) for r in ts.ranks}


def _kernels(kineto: Path) -> list[tuple[str, float]]:
    doc = json.loads(gzip.open(kineto).read())
    return [(e["name"], e["dur"]) for e in doc["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def _iterations(kineto: Path) -> list[tuple[int, float]]:
    """(activities, microseconds) of the GPU work launched between consecutive optimizer steps."""
    events = json.loads(gzip.open(kineto).read())["traceEvents"]
    ends = sorted(e["ts"] + e["dur"] for e in events
                  if e.get("ph") == "X" and e.get("name", "").startswith("Optimizer.step"))
    launch = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime"}
    gpu = [(launch[e["args"]["correlation"]], e["dur"]) for e in events
           if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    return [(sum(1 for t, _d in gpu if a < t <= b), sum(d for t, d in gpu if a < t <= b))
            for a, b in zip(ends, ends[1:])]


def _gpu_nodes(nodes):
    return [n for n in nodes if n.type == NodeType.COMP_NODE and any(a.name == "stream" for a in n.attr)]


def _attr(node, name):
    return next(a for a in node.attr if a.name == name)


def test_simple_add_links_by_external_id():
    # HTA's pair: Kineto without "Record function id", ET rf_id = Kineto External id; older
    # Kineto writes each kernel's External id as its correlation id
    ts, nodes = _nodes([SIMPLE_ADD])
    assert ts.ranks == [0]
    gpu = _gpu_nodes(nodes[0])
    kernels = _kernels(SIMPLE_ADD / "benchmark_simple_add_trace.json.gz")
    assert len(gpu) == len(kernels) == 4
    assert sum(n.duration_micros for n in gpu) == sum(d for _n, d in kernels) == 16
    # every kernel hangs on the host op that launched it (a CPU node), not on its stream alone
    by_id = {n.id: n for n in nodes[0]}
    launched = [n for n in gpu if any(by_id[d].name.startswith("aten::") for d in n.ctrl_deps)]
    assert len(launched) == 4
    assert validate([str(SIMPLE_ADD)]).errors == 0
    # each CPU node lasts as long as Kineto's op whose External id is the node's rf_id (HTA's rule)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu = [n for n in open_pytorch([str(SIMPLE_ADD)], idle_gaps=False)[0].nodes()
               if n.type == NodeType.COMP_NODE and not any(a.name == "stream" for a in n.attr)]
    doc = json.loads(gzip.open(SIMPLE_ADD / "benchmark_simple_add_trace.json.gz").read())
    dur = {e["args"]["External id"]: e["dur"] for e in doc["traceEvents"] if e.get("cat") == "cpu_op"}
    assert len(cpu) == 10
    assert [n.duration_micros for n in cpu] == [dur[_attr(n, "rf_id").int64_val] for n in cpu]



def _syncs_outside_ops(kineto: Path) -> list[tuple[str | None, str | None]]:
    """For each cudaDeviceSynchronize that no cpu_op encloses: (the next cpu_op on its thread,
    the last kernel launched before it), as the trace has them."""
    events = [e for e in json.loads(gzip.open(kineto).read())["traceEvents"] if e.get("ph") == "X"]
    ops = sorted((e for e in events if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
    launch = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime"}
    kernels = sorted((launch[e["args"]["correlation"]], e["name"]) for e in events if e.get("cat") == "kernel")
    out = []
    for sy in (e for e in events if e["name"] == "cudaDeviceSynchronize"):
        if any(o["tid"] == sy["tid"] and o["ts"] <= sy["ts"] <= o["ts"] + o["dur"] for o in ops):
            continue
        after = next((o["name"] for o in ops if o["tid"] == sy["tid"] and o["ts"] >= sy["ts"]), None)
        before = [name for ts, name in kernels if ts < sy["ts"]]
        out.append((after, before[-1] if before else None))
    return out


def test_sync_outside_every_op_holds_the_next_op(tmp_path):
    # torch.cuda.synchronize() from Python (in PARAM's annotations, no operator around it) was
    # dropped: the next op on the thread now waits for the kernel the sync waited for
    want = _syncs_outside_ops(SIMPLE_ADD / "benchmark_simple_add_trace.json.gz")
    placed = [w for w in want if w[0] is not None]
    assert len(want) == 5 and len(placed) == 3
    with pytest.warns(PyTorchTraceWarning, match=f"{len(want)} GPU sync call.* {len(placed)} given to the next"):
        nodes = list(open_pytorch([str(SIMPLE_ADD)], idle_gaps=False)[0].nodes())
    by_id = {n.id: n for n in nodes}
    gpu = {n.id for n in _gpu_nodes(nodes)}
    waits = [(n.name, by_id[d].name) for n in nodes if n.id not in gpu for d in n.ctrl_deps if d in gpu]
    assert waits == placed


def _simple_add_shifted(folder: Path, drop: int | None) -> list:
    """HTA's simple_add pair with the host ET's rf_ids two below Kineto's External ids (so the
    External-id alignment has an offset), the ``drop``-th ``aten::add`` without rf_id; its nodes."""
    folder.mkdir()
    shutil.copy(SIMPLE_ADD / "benchmark_simple_add_trace.json.gz", folder)
    doc = json.loads(gzip.open(SIMPLE_ADD / "benchmark_simple_add_et.json.gz").read())
    for n in doc["nodes"]:
        if n.get("rf_id", 0) >= 2:
            n["rf_id"] -= 2
        elif n.get("rf_id") == 1:
            n.pop("rf_id")
    if drop is not None:
        [n for n in doc["nodes"] if n["name"] == "aten::add"][drop].pop("rf_id")
    with gzip.open(folder / "benchmark_simple_add_et.json.gz", "wt") as f:
        json.dump(doc, f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(open_pytorch([str(folder)], idle_gaps=False)[0].nodes())


def test_an_op_without_rf_id_takes_no_kineto_span_by_external_id(tmp_path):
    # the op is looked for by External id = rf_id + offset; without an rf_id it has no External
    # id, so it is untimed (duration 0, after the node before it), and the other nodes keep the
    # times they have without it
    # (an earlier version gave every such op the span of the event at External id -1 + offset,
    # which also moved the trace's origin and so every start)
    whole = _simple_add_shifted(tmp_path / "whole", None)
    dropped = _simple_add_shifted(tmp_path / "dropped", 1)
    adds = [n for n in dropped if n.name == "aten::add"]
    assert len(adds) == 2 and adds[1].duration_micros == 0 and not any(a.name == "rf_id" for a in adds[1].attr)
    assert adds[0].duration_micros > 0
    timed = {n.id: (n.start_time_micros, n.duration_micros) for n in whole}
    others = [n for n in dropped if n is not adds[1]]  # its kernel, whose launcher is unknown now, is left out
    assert len(others) == len(whole) - 2 and {n.id for n in others} <= set(timed)
    assert [(n.start_time_micros, n.duration_micros) for n in others] == [timed[n.id] for n in others]

def test_param_linear_links_one_iteration_of_several():
    # ET schema 1.0.1 of one iteration; the Kineto trace holds 13; per-thread External id blocks
    d = _shared("param/linear")
    ts, nodes = _nodes([d])
    gpu = _gpu_nodes(nodes[0])
    kernels = Counter(_kernels(d / "linear_kineto.json.gz"))
    assert len(kernels) > 0 and not Counter((n.name, n.duration_micros) for n in gpu) - kernels
    # the iteration's kernels: those launched between two Optimizer.step ends of the profile
    # (261 per iteration, 8,826 .. 9,780 us); the host ET holds the one whose CPU ops carry its
    # autograd sequence numbers (Kineto's "Sequence number" is the ET's seq_id; every iteration
    # has the same names, and the ET's rf_ids start from 1 whichever one it recorded)
    iteration, linear = _iteration_of_sequence_numbers(d)
    assert iteration > 0  # not the first: the shortest or earliest match would be wrong
    assert (len(gpu), sum(n.duration_micros for n in gpu)) == _iterations(d / "linear_kineto.json.gz")[iteration]
    first = next(n for n in nodes[0] if n.name == "aten::linear" and _attr(n, "rf_id").int64_val == 1)
    assert first.duration_micros == linear
    assert validate([str(d)]).errors == 0


def _iteration_of_sequence_numbers(d: Path) -> tuple[int, float]:
    """The index (in :func:`_iterations`) of the iteration whose CPU ops have the host ET's
    (name, seq_id) pairs, and the duration of its op that has rf_id 1's."""
    host = json.loads(gzip.open(d / "linear_et.json.gz").read())["nodes"]
    seqs = {(n["name"], n["seq_id"]) for n in host if n.get("seq_id", -1) >= 0}
    first = next((n["name"], n["seq_id"]) for n in host if n.get("rf_id") == 1)
    events = json.loads(gzip.open(d / "linear_kineto.json.gz").read())["traceEvents"]
    ops = [e for e in events if e.get("cat") == "cpu_op" and (e["name"], e["args"].get("Sequence number")) in seqs]
    start = min(e["ts"] for e in ops)
    ends = sorted(e["ts"] + e["dur"] for e in events
                  if e.get("ph") == "X" and e.get("name", "").startswith("Optimizer.step"))
    linear = next(e["dur"] for e in ops if (e["name"], e["args"]["Sequence number"]) == first)
    return next(i for i, (a, b) in enumerate(zip(ends, ends[1:])) if a < start <= b), linear


def test_param_resnet_pair_of_two_runs_is_refused_naming_the_evidence():
    d = _shared("param/resnet")
    with pytest.raises(TraceFormatError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(d)])
        list(ts[0].nodes())
    msg = str(e.value)
    assert "another run" in msg and "pid 23442" in msg and "host ET pid 1734239" in msg
    assert "of 3705 host ops" in msg


def test_resnet_2gpu_comm_kinds_and_sizes_as_recorded():
    ts, nodes = _nodes([_shared("param/resnet_2gpu/resnet_2gpu_et.json.gz")])
    assert ts.ranks == [1]
    kinds = Counter(_attr(n, "comm_type").int64_val for n in nodes[1] if n.type in COMM)
    assert kinds == {CommType.ALL_REDUCE: 15, CommType.BROADCAST: 6}


def test_resnet_2gpu_rank_is_not_its_broadcast_root(tmp_path):
    # rank 1 of the job (its tensors are on cuda:1, its all-reduces and waits record 1) was read
    # as rank 0 from its first record_param_comms, DDP's broadcast, whose slot holds the root
    from chakra_pytorch.hostrank import scan_rank

    et = _shared("param/resnet_2gpu/resnet_2gpu_et.json.gz")
    doc = json.loads(gzip.open(et).read())
    devices = {t[5] for n in doc["nodes"] if n["name"] == "record_param_comms"
               for v in n["inputs"]["values"] if isinstance(v, list) for t in v
               if isinstance(t, list) and len(t) == 6}
    assert devices == {"cuda:1"}
    told = scan_rank(str(et))
    assert told is not None and (told.rank, told.world) == (1, 2)
    shutil.copy(et, tmp_path / "et_rank1.json.gz")
    shutil.copy(PT102, tmp_path / "et_rank0.json.gz")  # a rank 0 of 2 (its all_gather says so)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs, _ = find_rank_files([str(tmp_path)])
    assert [(p.rank, Path(p.host).name) for p in pairs] == [(0, "et_rank0.json.gz"), (1, "et_rank1.json.gz")]
    # with its broadcasts alone it does not tell its rank
    doc["nodes"] = [n for n in doc["nodes"] if n["name"] != "record_param_comms"
                    or "broadcast" in n["inputs"]["values"]]
    (tmp_path / "bcast.json").write_text(json.dumps(doc))
    assert scan_rank(str(tmp_path / "bcast.json")) is None


def test_pt2_keeps_its_triton_kernel_ops():
    _ts, nodes = _nodes([PT2])
    names = [n.name for n in nodes[0]]
    assert names == ["aten::mm", "triton_poi_fused_add_cos_neg_sin_0"] * 2


def test_rank_from_the_trace_not_from_a_version_number_in_the_name():
    with pytest.warns(PyTorchTraceWarning, match="says rank 0"):
        (rf,), _ = find_rank_files([str(PT102)])
    assert rf.rank == 0
    ts, nodes = _nodes([PT102])
    assert ts.ranks == [0]
    comms = [n for n in nodes[0] if n.type in COMM]
    assert len(comms) == 10
    assert {(_attr(n, "comm_type").int64_val, _attr(n, "comm_size").int64_val) for n in comms} == \
        {(CommType.ALL_GATHER, 4)}


def test_two_files_claiming_one_rank_is_an_error(tmp_path):
    # both files say rank 0 in their record_param_comms, whatever their names
    shutil.copy(PT102, tmp_path / "et.0.json.gz")
    shutil.copy(PT102, tmp_path / "et.1.json.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TraceFormatError, match="two host traces claim rank 0"):
            find_rank_files([str(tmp_path)])


def test_rank_outside_the_world_size_is_an_error(tmp_path):
    doc = json.loads(gzip.open(PT102).read())
    for n in doc["nodes"]:
        if n["name"] == "record_param_comms":
            n["inputs"]["values"][3] = 5  # rank 5 of a world of 2
    p = tmp_path / "et.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match="rank 5 is outside the world size 2"):
        find_rank_files([str(p)])


def test_cli_rank_outside_the_world_exits_2(tmp_path, chakra_cli):
    doc = json.loads(gzip.open(PT102).read())
    doc["nodes"] = [n for n in doc["nodes"] if n["name"] != "record_param_comms"]
    p = tmp_path / "et.4.json"  # the name says rank 4; the process group says 2 ranks
    p.write_text(json.dumps(doc))
    status, _out, err = chakra_cli("convert", str(p), "-o", str(tmp_path / "o"))
    assert status == 2 and "rank 4 is outside the world size 2" in err and "Traceback" not in err


def test_folder_skips_files_that_are_not_traces(tmp_path):
    for f in SIMPLE_ADD.iterdir():
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "expected.0.json").write_text('{"nodes": 3}')
    (tmp_path / "a_notes.json").write_text("[1, 2]")
    assert detect_format([str(tmp_path)]) == "pytorch"
    with pytest.warns(PyTorchTraceWarning) as rec:
        find_rank_files([str(tmp_path)])
    skipped = [str(w.message) for w in rec if "skipped" in str(w.message)]
    assert len(skipped) == 1 and "a_notes.json" in skipped[0] and "expected.0.json" in skipped[0]
    _ts, nodes = _nodes([tmp_path])
    assert len(_gpu_nodes(nodes[0])) == 4


def test_cli_format_pytorch_skips_a_stray_file(tmp_path, chakra_cli):
    for f in SIMPLE_ADD.iterdir():
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "expected.0.json").write_text('{"nodes": 3}')
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        status, _out, err = chakra_cli("convert", str(tmp_path), "--format", "pytorch", "-o", str(tmp_path / "o"))
    assert status == 0, err
    # the CLI prints the warnings it held (to stderr), or leaves them to the caller's filter
    said = [line for line in err.splitlines() + [str(w.message) for w in rec] if "skipped 1 file(s)" in line]
    assert len(said) == 1 and "expected.0.json" in said[0]


def test_invalid_utf8_op_name_is_a_located_error(tmp_path, chakra_cli):
    raw = json.dumps(json.loads(gzip.open(PT2).read()), indent=2)
    p = tmp_path / "bad.json"
    p.write_text(raw.replace('"aten::mm"', '"\\udc80ten::mm"', 1))
    status, _out, err = chakra_cli("convert", str(p), "-o", str(tmp_path / "o"))
    assert status == 2 and "not valid UTF-8" in err and str(p) in err and "Traceback" not in err
