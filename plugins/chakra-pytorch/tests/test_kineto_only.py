"""Kineto traces alone: the repo's gloo recordings converted from their Kineto files only agree
with the host ET + Kineto conversion of the same run; input detection, ranks and world size."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import warnings
from collections import Counter
from pathlib import Path

import pytest

from chakra_core import CommType, NodeType, TraceFormatError, get_int, load_traces, validate
from chakra_pytorch import convert_rank, find_rank_files, open_pytorch
from chakra_pytorch.kineto_graph import convert_kineto_rank
from chakra_pytorch.kineto_graph_comms import c10d_comm, elem_bytes, group_of
from chakra_pytorch.kineto_only import find_kineto_ranks, open_kineto_only
from chakra_pytorch.schema_version import PyTorchTraceWarning
from chakra_pytorch.sniff import kineto_only_paths

DATA = Path(__file__).resolve().parent / "data"
RECORDED = ["mlp", "transformer", "threads", "ddp", "ddp_buckets", "ddp_buckets_queued", "ddp_steps",
            "ddp_buckets_steps", "collectives", "collectives_steps"]
COMM_TYPES = (NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE)


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _both(folder: str):
    """(host ET + Kineto, Kineto alone) conversions of each rank of a recording."""
    d = DATA / folder
    kinetos = sorted(str(p) for p in d.glob("kineto.*.json*"))
    pairs, _ = find_rank_files(sorted(str(p) for p in d.glob("pytorch_et.*.json*")) + kinetos)
    ranks, world = find_kineto_ranks(kinetos)
    groups = {}
    for kr in ranks:
        for g in kr.distributed.get("pg_config") or []:
            groups[str(g["pg_name"])] = g["ranks"]
    for rf, kr in zip(pairs, ranks):
        assert rf.rank == kr.rank
        yield (_quiet(convert_rank, rf, world),
               _quiet(convert_kineto_rank, kr.path, kr.rank, world, groups, kr.distributed))


def _comms(g):
    out = Counter()
    for n in g.nodes:
        if n.type in COMM_TYPES:
            a = dict(n.attrs())
            out[(n.type, a.get("comm_type"), a.get("comm_size"), a.get("pg_name"), a.get("comm_src"),
                 a.get("comm_dst"), a.get("comm_tag"))] += 1
    return out


def _cpu_compute_us(g) -> int:
    return sum(n.dur for n in g.nodes if n.type == NodeType.COMP_NODE and n.cpu and n.name != "[idle]")


@pytest.mark.parametrize("folder", RECORDED)
def test_recordings_from_kineto_alone_match_the_host_et_conversion(folder):
    for with_host, alone in _both(folder):
        assert _comms(alone) == _comms(with_host)
        assert alone.step_us == with_host.step_us
        et_us, kineto_us = _cpu_compute_us(with_host), _cpu_compute_us(alone)
        assert abs(kineto_us - et_us) <= 0.03 * et_us
        assert abs(len(alone.nodes) - len(with_host.nodes)) <= 0.02 * len(with_host.nodes)


def test_collective_sizes_from_input_dims():
    """collectives/: record_collectives.py's sizes (float32), from Kineto's Input Dims/type."""
    (_, r0), _ = _both("collectives")
    sizes = {(get_int(n, "comm_type"), get_int(n, "comm_size")) for n in r0.protobuf_nodes()
             if n.type == NodeType.COMM_COLL_NODE}
    assert (CommType.ALL_REDUCE, 1000 * 4) in sizes
    assert (CommType.BROADCAST, 200 * 4) in sizes
    assert (CommType.ALL_GATHER, 30 * 4) in sizes  # the per-rank shard
    assert (CommType.ALL_TO_ALL, 2 * 70 * 4) in sizes  # the whole send list
    sends = [n for n in r0.nodes if n.type == NodeType.COMM_SEND_NODE]
    assert {(dict(n.attrs())["comm_dst"], dict(n.attrs())["comm_tag"]) for n in sends} >= {(1, 7), (1, 11)}


def test_folder_of_kineto_traces_opens_as_pytorch(tmp_path):
    for f in (DATA / "ddp").glob("kineto.*.json.gz"):
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "expected.0.json").write_text('{"answer": 42}')
    with pytest.warns(PyTorchTraceWarning, match="expected.0.json"):
        ts = open_pytorch([str(tmp_path)])
    assert ts.ranks == [0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [str(f) for f in validate(ts)] == []


def test_host_et_in_the_input_is_not_kineto_only():
    assert kineto_only_paths([str(DATA / "ddp")]) is None
    assert kineto_only_paths([str(DATA / "ddp" / "kineto.1.json.gz")]) == [str(DATA / "ddp" / "kineto.1.json.gz")]


def _with_rank(src: Path, dst: Path, rank: int, world: int | None = None) -> str:
    d = json.loads(gzip.decompress(src.read_bytes()))
    d["distributedInfo"]["rank"] = rank
    if world is not None:
        d["distributedInfo"]["world_size"] = world
    dst.write_text(json.dumps(d))
    return str(dst)


def test_two_traces_claiming_one_rank_are_refused(tmp_path):
    a = _with_rank(DATA / "ddp" / "kineto.0.json.gz", tmp_path / "a.json", 1)
    b = str(DATA / "ddp" / "kineto.1.json.gz")
    with pytest.raises(TraceFormatError, match="two Kineto traces claim rank 1"):
        find_kineto_ranks([a, b])


def test_rank_outside_the_world_is_refused(tmp_path):
    a = _with_rank(DATA / "ddp" / "kineto.0.json.gz", tmp_path / "a.json", 3)
    with pytest.raises(TraceFormatError, match="rank 3 is outside the world of 2"):
        find_kineto_ranks([a])


def test_rank_comes_from_distributed_info_not_the_name(tmp_path):
    a = _with_rank(DATA / "ddp" / "kineto.0.json.gz", tmp_path / "trace.7.json", 1)
    (kr,), world = find_kineto_ranks([a])
    assert (kr.rank, world) == (1, 2)


def test_sizes_missing_from_the_trace_are_warned():
    """The hand-made NCCL Kineto files carry no shapes nor message sizes."""
    with pytest.warns(PyTorchTraceWarning, match="no size in the trace"):
        ts = open_kineto_only([str(DATA / "nccl" / "kineto.0.json"), str(DATA / "nccl" / "kineto.1.json")])
        nodes = list(ts[0].nodes())
    kernels = [n for n in nodes if n.type == NodeType.COMM_COLL_NODE]
    assert sorted(n.name for n in kernels) == ["ncclDevKernel_AllGather_RING_LL",
                                               "ncclDevKernel_AllReduce_Sum_f32_RING_LL"]


def test_data_deps_cannot_be_had_from_kineto_alone():
    with pytest.warns(PyTorchTraceWarning, match="data_deps ignored"):
        open_pytorch([str(DATA / "mlp" / "kineto.0.json.gz")], data_deps=True)


def test_a_size_beyond_int64_is_a_located_error(tmp_path):
    d = json.loads(gzip.decompress((DATA / "ddp" / "kineto.0.json.gz").read_bytes()))
    op = next(e for e in d["traceEvents"] if e.get("name") == "c10d::allreduce_")
    op["args"]["Input Dims"][0] = [[1 << 40, 1 << 40]]
    (tmp_path / "kineto.0.json").write_text(json.dumps(d))
    ts = open_pytorch([str(tmp_path)])
    with pytest.raises(TraceFormatError, match=r"c10d::allreduce_: size in bytes \d+ is out of range") as e:
        list(ts[0].nodes())
    assert (e.value.where, e.value.location) == (str(tmp_path / "kineto.0.json"), f"event at ts {op['ts']:.3f} us")


@pytest.mark.parametrize("name, size", [("float", 4), ("c10::Half", 2), ("c10::BFloat16", 2), ("long int", 8),
                                        ("unsigned char", 1), ("double", 8), ("bool", 1),
                                        ("c10::complex<float>", 8), ("TensorList", None), ("Scalar", None)])
def test_element_sizes_of_kineto_input_types(name, size):
    assert elem_bytes(name) == size


def test_group_named_by_an_event():
    assert group_of({"Process Group Name": "3", "Process Group Ranks": "[1, 3]"}) == ("3", [1, 3])
    assert group_of({"Process Group Name": 5, "Process Group Ranks": [0, 2]}) == ("5", [0, 2])
    assert group_of({"Process Group Name": "3", "Process Group Ranks": "[1, -3]"}) is None
    assert group_of({"Process Group Name": "3"}) is None


def test_events_of_other_processes_are_left_out(tmp_path):
    """A dataloader worker's ops in the same trace (another pid) do not become nodes."""
    src = DATA / "mlp" / "kineto.0.json.gz"
    d = json.loads(gzip.decompress(src.read_bytes()))
    ops = [e for e in d["traceEvents"] if e.get("cat") == "cpu_op"]
    d["traceEvents"] += [{**e, "pid": e["pid"] + 1, "tid": e["tid"] + 1} for e in ops[:10]]
    (tmp_path / "kineto.0.json").write_text(json.dumps(d))
    alone = _quiet(convert_kineto_rank, str(src), 0, 1, {})
    mixed = _quiet(convert_kineto_rank, str(tmp_path / "kineto.0.json"), 0, 1, {})
    assert [(n.name, n.start, n.dur) for n in mixed.nodes] == [(n.name, n.start, n.dur) for n in alone.nodes]


def test_a_zero_dim_tensor_is_one_element():
    """``_allgather_base_`` of 0-d tensors, as Kineto writes its arguments."""
    args = {"Input Dims": [[], [], [], [], []], "Input type": ["double", "double", "", "Scalar", "Scalar"],
            "Concrete Inputs": ["", "", "", "False", "-1"]}
    info = c10d_comm("c10d::_allgather_base_", args, None)
    assert (info.kind, info.size_bytes, info.async_op) == ("all_gather", 8, False)


def test_only_communication_events_keep_their_arguments():
    # the DDP recording's rank 0: CPU events keep what the conversion reads of them in compact
    # form; their kept arguments stay only on c10d ops, record_param_comms and gloo annotations
    from chakra_pytorch.kineto_graph import kineto_host

    _host, _kt, cpu = kineto_host(str(DATA / "ddp" / "kineto.0.json.gz"), 2)
    events = cpu.events
    kept = [events.names[k] for k in events.args]
    assert kept and len(kept) < len(events) // 4
    assert all(name.startswith(("c10d::", "gloo:")) or name == "record_param_comms" for name in kept)
    linear = events.names.index("aten::linear")
    # nn.Linear(16, 32) on a batch of 8: input, weight and bias, as Kineto's args list them
    assert list(map(json.loads, events.io[linear].split(b"\n"))) == [
        ["", "", ""], [[8, 16], [32, 16], [32]], ["float"] * 3, [], [], []]
    assert events.seq[linear] >= 0 and cpu.order_id(linear) >= 0 and not events.unfinished[linear]
    # keys are start order, and an event's parent (the event around it) starts before it
    assert all(a <= b for a, b in zip(events.ts, events.ts[1:]))
    assert all(cpu.parent[k] < k and events.ts[cpu.parent[k]] <= events.ts[k]
               for k in range(len(events)) if cpu.parent[k] >= 0)


def test_events_with_the_same_inputs_share_one_copy():
    # the DDP recording's rank 0 (one step of the MLP): 175 CPU events, 97 distinct inputs;
    # equal inputs are one bytes object, so memory grows with the distinct ones, not the events
    from chakra_pytorch.kineto_graph import kineto_host

    _host, _kt, cpu = kineto_host(str(DATA / "ddp" / "kineto.0.json.gz"), 2)
    distinct = set(cpu.events.io)
    assert len(distinct) == 97 and len(cpu.events) == 175
    assert len({id(io) for io in cpu.events.io}) == len(distinct)


def _deep_dims(tmp_path, name: str, other_pid: bool = False):
    """The mlp recording's Kineto trace with the Input Dims of its first ``name`` op nested 300
    deep (a corrupt file: orjson reads it but cannot write it back), optionally moved to another
    process; the file and the event."""
    trace = json.loads(gzip.decompress((DATA / "mlp" / "kineto.0.json.gz").read_bytes()))
    ev = next(e for e in trace["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == name)
    ev["args"]["Input Dims"] = "DEEP"
    if other_pid:
        ev["pid"] = 99999
    p = tmp_path / "kineto.0.json"
    p.write_text(json.dumps(trace, indent=2).replace('"DEEP"', "[" * 300 + "]" * 300, 1))
    return p, ev


@pytest.mark.parametrize("name", ["aten::linear", "aten::t"])  # a node, and an op folded into one
def test_input_dims_nested_deeper_than_orjson_writes_name_the_event(tmp_path, name):
    # this ended in an internal error (TypeError) when the op's node was written, and passed
    # unseen inside an op folded away; it is now a one-line error naming the event, as in a host ET
    p, ev = _deep_dims(tmp_path, name)
    with pytest.raises(TraceFormatError) as got:
        _quiet(lambda: list(open_kineto_only([str(p)])[0].nodes()))
    assert got.value.message == f"{name}: inputs cannot be kept (Recursion limit reached)"
    assert got.value.location == f"event at ts {ev['ts']:.3f} us"


def test_deep_input_dims_of_another_process_are_left_out_with_it(tmp_path):
    p, _ev = _deep_dims(tmp_path, "aten::linear", other_pid=True)
    nodes = _quiet(lambda: list(open_kineto_only([str(p)])[0].nodes()))
    assert sum(n.name == "aten::linear" for n in nodes) == 1  # of the two, the traced process's


def _moved_to_the_end(src: Path, dst: Path, rank: int, world: int) -> str:
    """The recorded trace with ``distributedInfo`` (rank and world as given) written after
    ``traceEvents``, where PyTorch 2.0 writes it (HTA's simple_add trace has it there)."""
    doc = json.loads(gzip.open(src).read())
    info = {**doc.pop("distributedInfo"), "rank": rank, "world_size": world}
    doc["distributedInfo"] = info  # dicts keep their order: after traceEvents now
    text = json.dumps(doc)
    assert text.index('"traceEvents"') < text.index('"distributedInfo"')
    dst.write_text(text)
    return str(dst)


def test_distributed_info_after_the_events_gives_the_rank_and_world(tmp_path):
    # it was read only before traceEvents: such a trace was rank 0 of a world of 1, silently, and
    # two of them could not tell their ranks
    a = _moved_to_the_end(DATA / "ddp" / "kineto.1.json.gz", tmp_path / "a.json", 1, 2)
    b = _moved_to_the_end(DATA / "ddp" / "kineto.0.json.gz", tmp_path / "b.json", 0, 2)
    ranks, world = find_kineto_ranks([a, b])
    assert [(kr.rank, kr.path) for kr in ranks] == [(0, b), (1, a)] and world == 2
    (kr,), world = find_kineto_ranks([a])
    assert (kr.rank, world) == (1, 2)
    bad = _moved_to_the_end(DATA / "ddp" / "kineto.0.json.gz", tmp_path / "c.json", 3, 2)
    with pytest.raises(TraceFormatError, match="rank 3 is outside the world of 2"):
        find_kineto_ranks([bad])
    neg = _moved_to_the_end(DATA / "ddp" / "kineto.0.json.gz", tmp_path / "d.json", -1, 2)
    with pytest.raises(TraceFormatError, match="bad distributedInfo: rank -1"):
        find_kineto_ranks([neg])
    # the same key inside an event's arguments is not the trace's
    doc = json.loads(gzip.open(DATA / "ddp" / "kineto.0.json.gz").read())
    del doc["distributedInfo"]
    doc["traceEvents"].append({"ph": "i", "name": "x", "ts": 1, "args": {"distributedInfo": {"rank": 1}}})
    (tmp_path / "e.json").write_text(json.dumps(doc))
    assert find_kineto_ranks([str(tmp_path / "e.json")])[0][0].distributed == {}


@pytest.mark.parametrize("field", ["ts", "dur", "name"])
def test_a_cpu_op_without_its_time_or_name_is_a_located_error(tmp_path, field):
    # a cpu_op without ts started at 0 (a longest path of 53 years); without dur it lasted 0 and
    # the ops after it nested in others; without a name it was no op (4 nodes of 23)
    doc = json.loads(gzip.open(DATA / "mlp" / "kineto.0.json.gz").read())
    at, ev = next((i, e) for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "cpu_op")
    del ev[field]
    (tmp_path / "k.json").write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError) as err:
        _quiet(_read, tmp_path / "k.json")
    assert err.value.location == f"event {at + 1}"
    assert f"a complete 'cpu_op' event without '{field}'" in err.value.message


def test_a_trace_of_no_complete_event_is_refused(tmp_path):
    doc = json.loads(gzip.open(DATA / "mlp" / "kineto.0.json.gz").read())
    for ev in doc["traceEvents"]:
        ev.pop("ph", None)
    (tmp_path / "k.json").write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError, match=f"none of its {len(doc['traceEvents'])} trace events is a complete"):
        _quiet(_read, tmp_path / "k.json")


def _read(path: Path) -> list:
    """The nodes of the one rank of the trace at ``path`` (a rank converts when read)."""
    return list(load_traces(str(path))[0].nodes())


def _siblings(events: list[dict]) -> tuple[dict, dict]:
    """Two operators one after the other with the same parent on the first CPU thread (the
    second at least 2 us long)."""
    tid = next(e["tid"] for e in events if e.get("cat") == "cpu_op")
    mine = sorted((e for e in events if e.get("ph") == "X" and e.get("tid") == tid
                   and e.get("cat") in ("cpu_op", "user_annotation")), key=lambda e: (e["ts"], -e["dur"]))
    stack: list[dict] = []
    last_child: dict[int, dict] = {}  # id of the parent (0: none) -> its last child seen
    for e in mine:
        while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
            stack.pop()
        up = id(stack[-1]) if stack else 0
        before = last_child.get(up)
        if before is not None and "::" in before["name"] and "::" in e["name"] and e["dur"] >= 2:
            return before, e
        last_child[up] = e
        stack.append(e)
    raise AssertionError("no two sibling operators")


def test_an_operator_outlasting_the_event_it_started_in_is_not_inside_it(tmp_path):
    # an op whose end was moved into the next op: that op started inside it and was taken as its
    # child (dropped from the graph), without a word
    doc = json.loads(gzip.open(DATA / "mlp" / "kineto.0.json.gz").read())
    a, b = _siblings(doc["traceEvents"])
    (tmp_path / "k.json").write_text(json.dumps(doc))
    before = Counter(n.name for n in _quiet(_read, tmp_path / "k.json"))
    a["dur"] = b["ts"] - a["ts"] + b["dur"] / 2  # a now ends in the middle of b
    (tmp_path / "k.json").write_text(json.dumps(doc))
    with pytest.warns(PyTorchTraceWarning, match=rf"1 operator\(s\) start inside another event on their thread "
                      rf"and end after it, the first {re.escape(b['name'])} at ts {b['ts']:.3f} us inside "
                      rf"{re.escape(a['name'])} \(ending ([0-9.]+) us after it\)") as got:
        after = Counter(n.name for n in _read(tmp_path / "k.json"))
    ending = re.search(r"ending ([0-9.]+) us", str(got[0].message))
    assert ending is not None and float(ending.group(1)) == pytest.approx(b["dur"] / 2, abs=2e-3)
    assert after[b["name"]] == before[b["name"]] and after[a["name"]] == before[a["name"]]
