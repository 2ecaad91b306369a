"""Unusual and corrupt values inside otherwise well-formed traces: one-line errors or a
faithful conversion, never a traceback, and no memory sized by a stray large number.

The inputs are the recorded MLP fixture (``tests/data/mlp``) with single fields changed by hand.
"""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path

import pytest

from chakra_core import TraceFormatError, get_int
from chakra_pytorch import open_pytorch
from chakra_pytorch.intmap import IntMap
from chakra_pytorch.spantable import SpanTable, spans_of

DATA = Path(__file__).resolve().parent / "data"
MLP_ET = DATA / "mlp" / "pytorch_et.0.json.gz"
MLP_KINETO = DATA / "mlp" / "kineto.0.json.gz"


def _load(path: Path) -> dict:
    return json.loads(gzip.open(path).read())


def _write(tmp_path: Path, host: dict | None = None, kineto: dict | None = None) -> list[Path]:
    h, k = tmp_path / "pytorch_et.0.json", tmp_path / "kineto.0.json"
    h.write_text(json.dumps(host if host is not None else _load(MLP_ET), indent=2))
    k.write_text(json.dumps(kineto if kineto is not None else _load(MLP_KINETO), indent=2))
    return [h, k]


def _nodes(paths):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(open_pytorch([str(p) for p in paths])[0].nodes())


def _error(paths) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as e:
        _nodes(paths)
    assert "\n" not in str(e.value)
    return e.value


def _first_cpu_op(kineto: dict) -> dict:
    return next(e for e in kineto["traceEvents"] if e.get("cat") == "cpu_op")


@pytest.mark.parametrize("field", ["id", "ctrl_deps"])
def test_huge_node_id_is_an_error_not_a_huge_array(tmp_path, field):
    # ids index arrays: 2**62 used to raise OverflowError (and 10**9 would have taken 17 GB)
    host = _load(MLP_ET)
    host["nodes"][5][field] = 2**62
    err = _error(_write(tmp_path, host))
    assert err.location == "node 5" and "far beyond the 6 nodes read so far" in err.message


def test_attribute_beyond_int64_is_not_copied(tmp_path):
    # uint64 values above 2**63-1 used to crash the writer (int64 slots); such a value is dropped
    host = _load(MLP_ET)
    for n in host["nodes"]:
        for a in n["attrs"]:
            if a["name"] == "scope":
                a["value"] = 2**63 + 5
    nodes = _nodes(_write(tmp_path, host))
    linear = next(n for n in nodes if n.name == "aten::linear")
    assert get_int(linear, "scope") is None and get_int(linear, "rf_id") == 3


def test_huge_record_function_ids_convert(tmp_path):
    # a record-function/External id far beyond the others (a counter that started high) used to
    # raise OverflowError in the id arrays; it now lands in the map's side table
    kineto = _load(MLP_KINETO)
    ev = _first_cpu_op(kineto)
    ev["args"]["External id"] = 2**62
    host_nodes = _nodes(_write(tmp_path, kineto=kineto))
    assert sum(1 for n in host_nodes if n.name == "aten::linear") == 2


@pytest.mark.parametrize("field, value", [("ts", 1e300), ("dur", 1e300), ("ts", -1e300), ("dur", "x"), ("dur", -5)])
def test_kineto_time_out_of_range_names_the_event(tmp_path, field, value):
    # a huge time used to reach the protobuf writer as an out-of-range uint64 (ValueError); a
    # negative duration was taken as it came (other spans, other nodes)
    kineto = _load(MLP_KINETO)
    ev = _first_cpu_op(kineto)
    ev[field] = value
    index = kineto["traceEvents"].index(ev) + 1
    err = _error(_write(tmp_path, kineto=kineto))
    assert err.location == f"event {index}" and "bad trace event" in err.message


@pytest.mark.parametrize("field, value", [("args", [1]), ("name", 5), ("cat", ["cpu_op"])])
def test_kineto_event_of_the_wrong_shape_is_ignored(tmp_path, field, value):
    # non-object args or a non-string name used to raise AttributeError
    kineto = _load(MLP_KINETO)
    ev = _first_cpu_op(kineto)
    ev[field] = value
    nodes = _nodes(_write(tmp_path, kineto=kineto))
    assert sum(1 for n in nodes if n.name == "aten::linear") == 2


def test_intmap_dense_and_far_keys():
    m = IntMap()
    m[3] = 30
    m[2**62] = 7  # far: a side table, not a 2**62-slot array
    assert (m.get(3), m.get(2**62), m.get(4), m.get(2**62 + 1, -5)) == (30, 7, -1, -5)
    # a far key that the growing array later covers keeps its value
    m2 = IntMap()
    m2[5_000_000] = 1
    for k in range(1_000_000):
        m2[k] = k
    m2[5_000_001] = 2
    assert (m2.get(5_000_000), m2.get(5_000_001), m2.get(999_999)) == (1, 2, 999_999)
    with pytest.raises(KeyError):
        m[-1] = 0


def test_intmap_set_pairs_leaves_out_negatives_and_keeps_the_last():
    m = IntMap()
    m.set_pairs([3, -1, 5, 3, 2**62, 7, 6_000_000], [30, 9, -1, 31, 8, 70, 60])
    assert [m.get(k) for k in (3, 5, 2**62, 7, 6_000_000, 4)] == [31, -1, 8, 70, 60, -1]
    m.set_pairs(range(2_000_000), range(1, 2_000_001))  # the array grows while a far key waits
    assert (m.get(6_000_000), m.get(1_999_999), m.get(3)) == (60, 2_000_000, 4)



def test_intmap_setdefault_and_get_many():
    m = IntMap()
    assert [m.setdefault(k, v) for k, v in ((4, 40), (4, 41), (2**62, 7), (2**62, 8), (0, 0))] == [40, 40, 7, 7, 0]
    keys = [4, 2**62, 0, 5, 2**63 - 1, -3]
    assert list(m.get_many(keys)) == [m.get(k) for k in keys] == [40, 7, 0, -1, -1, -1]
    assert list(m.get_many(keys, -9)) == [40, 7, 0, -9, -9, -9]


def test_span_table_reads_as_the_dict_it_replaces():
    # puts of a Kineto read (dense ids, a repeated id, a far one, negative ones): every read is
    # the dict's, except that a negative id, which no host op has, is never kept
    puts = [(3, 1.5, 2.0, 7, "a"), (9, 0.25, 1.0, 8, "b"), (3, 4.0, 0.5, 7, "c"), (2**62, 9.0, 1.0, 1, "d"),
            (-1, 5.0, 5.0, 5, "e"), (0, 0.0, 0.0, 0, "f")]
    table, want = SpanTable(), {}
    for key, *span in puts:
        table.put(key, *span)
        if key >= 0:
            want[key] = tuple(span)
    keys = [3, 9, 2**62, 0, -1, 4, 2**62 + 1]
    assert dict(table) == want and len(table) == 4 and list(table) == [3, 9, 2**62, 0]
    assert [table.get(k) for k in keys] == [want.get(k) for k in keys]
    assert [k in table for k in keys + ["3", 3.0]] == [k in want for k in keys] + [False, False]
    assert list(spans_of(table, keys)) == list(spans_of(want, keys)) == [want.get(k) for k in keys]
    with pytest.raises(KeyError):
        table[-1]


def test_first_start_at_finds_the_waiter_of_an_async_communication():
    # the waiter of a non-blocking communication: the first lane node from its position that
    # starts when it has ended (found by bisection on the running maximum of the starts)
    import itertools

    from chakra_pytorch.graph import _first_start_at
    from chakra_pytorch.outnode import OutNode

    def lane(starts):
        nodes = [OutNode(i + 1, "op", 4, start=s) for i, s in enumerate(starts)]
        return nodes, list(itertools.accumulate((n.start for n in nodes), max))

    nodes, latest = lane([0, 5, 10, 15, 20])
    assert [_first_start_at(nodes, latest, first, 12) for first in range(5)] == [3, 3, 3, 3, 4]
    assert _first_start_at(nodes, latest, 0, 21) is None
    assert _first_start_at(nodes, latest, 2, 10) == 2
    # starts out of order (a node without Kineto timing, -1, or a late node before the position)
    nodes, latest = lane([0, 30, 5, -1, 12, 40])
    assert _first_start_at(nodes, latest, 2, 12) == 4
    assert _first_start_at(nodes, latest, 2, 35) == 5
    assert _first_start_at(nodes, latest, 3, 50) is None


def test_stream_waits_tie_the_next_launch_to_the_recording_stream():
    # N collectives on stream 20, each after a "Stream Wait Event" on compute stream 7: each
    # NCCL kernel depends on the compute kernel launched just before the event
    from chakra_pytorch.deps import add_stream_waits
    from chakra_pytorch.kineto import GpuEvent, KinetoTrace, StreamWait
    from chakra_pytorch.outnode import OutNode

    kt = KinetoTrace("k", None, {}, {}, IntMap())
    streams = {(0, 7): [], (0, 20): []}
    for i in range(50):
        for stream, corr, launch, nid in ((7, 2 * i, 10.0 * i, 2 * i + 1), (20, 2 * i + 1, 10.0 * i + 6, 2 * i + 2)):
            kt.corr_ts[corr] = launch
            streams[(0, stream)].append((GpuEvent("k", launch + 1, 3, 0, stream, corr, -1), OutNode(nid, "k", 4)))
        kt.stream_waits.append(StreamWait(10.0 * i + 5.5, 0, 20, 7, -1))
    add_stream_waits(kt, streams)
    assert [n.ctrl for _, n in streams[(0, 20)]] == [[2 * i + 1] for i in range(50)]
    assert all(n.ctrl == [] for _, n in streams[(0, 7)])


def _with_distributed(info: dict) -> dict:
    kineto = _load(MLP_KINETO)
    # PyTorch writes distributedInfo before traceEvents (only there is it read)
    return {"schemaVersion": kineto.get("schemaVersion", 1), "distributedInfo": info,
            **{k: v for k, v in kineto.items() if k not in ("schemaVersion", "distributedInfo")}}


@pytest.mark.parametrize("info, words", [
    ({"rank": 0, "world_size": 2, "pg_config": [{"pg_name": "1", "ranks": ["a"]}]}, "ranks of group '1'"),
    ({"rank": 0, "world_size": 2, "pg_config": [{"pg_name": "1", "ranks": [[1]]}]}, "ranks of group '1'"),
    ({"rank": 0, "world_size": 10**12}, "world_size 1000000000000"),
    ({"rank": 0, "world_size": -3}, "world_size -3"),
    ({"rank": "0", "world_size": 2}, "rank '0'"),
    ({"rank": 0, "world_size": 2, "pg_config": {"pg_name": "1"}}, "pg_config is not a list"),
])
def test_bad_distributed_info_is_one_line(tmp_path, info, words):
    # non-integer ranks used to raise ValueError/TypeError; a world of 10**12 ranks would have
    # been listed rank by rank in the process-group node
    paths = _write(tmp_path, kineto=_with_distributed(info))
    err = _error(paths)
    assert err.where == str(paths[1]) and "bad distributedInfo" in err.message and words in err.message


def test_distributed_info_groups_are_used(tmp_path):
    info = {"rank": 0, "world_size": 4, "pg_config": [{"pg_name": "5", "ranks": [0, 2]}]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(p) for p in _write(tmp_path, kineto=_with_distributed(info))])
    assert ts.process_groups == {"5": [0, 2]}


@pytest.mark.parametrize("desc, words", [
    ('{"pg_name": "0"}', "not a list of groups"),
    ('["x"]', "a group is not an object"),
    ('[{"pg_name": "0", "ranks": [], "group_size": 1000000000000}]', "1000000000000 is not a rank"),
    ('[{"pg_name": "0", "ranks": [0, 1.5]}]', "1.5 is not a rank"),
])
def test_bad_process_group_node_is_one_line(tmp_path, desc, words):
    # a non-list description or non-object group used to raise AttributeError; a huge group
    # size became the world size, listed rank by rank
    host = _load(MLP_ET)
    host["nodes"].insert(0, {"id": 999, "name": "## process_group:init ##", "ctrl_deps": 1,
                             "inputs": {"values": [desc], "shapes": [[]], "types": ["String"]},
                             "outputs": {"values": [], "shapes": [], "types": []}, "attrs": []})
    err = _error(_write(tmp_path, host))
    assert "bad '## process_group:init ##' description" in err.message and words in err.message


def test_huge_record_param_comms_group_is_not_listed():
    from chakra_pytorch.comms import comm_from_param_comms

    attrs = {"collective_name": "allreduce", "dtype": "Float", "in_msg_nelems": 4, "out_msg_nelems": 4,
             "pg_name": "3", "pg_size": 2**40, "global_rank_start": 0, "global_rank_stride": 1}
    assert comm_from_param_comms(attrs, []).group_ranks() is None
    attrs["pg_size"] = 4
    assert comm_from_param_comms(attrs, []).group_ranks() == range(0, 4)


def test_c10d_peer_beyond_the_ranks_names_the_node(tmp_path):
    # the recorded 2-rank set with rank 0's send given peer 2**41 and tag 2**40 (a corrupt
    # file): it used to crash writing the int32 comm_dst; now a one-line error names the node
    host = _load(DATA / "collectives" / "pytorch_et.0.json.gz")
    index = next(i for i, n in enumerate(host["nodes"]) if n["name"] == "c10d::send")
    host["nodes"][index]["inputs"]["values"][2:4] = [2**41, 2**40]
    p = tmp_path / "pytorch_et.0.json"
    p.write_text(json.dumps(host, indent=2))
    err = _error([p])
    assert err.location == f"node {index}" and "c10d::send: peer rank 2199023255552" in err.message


@pytest.mark.parametrize("inputs, part, got", [({"values": 7, "shapes": [], "types": []}, "inputs.values", "int"),
                                                ("abc", "inputs", "str"), (5, "inputs", "int")])
def test_inputs_of_the_wrong_shape_name_the_node(tmp_path, inputs, part, got):
    # a c10d op whose input values are not a list used to raise TypeError (len of an int), then
    # was read as empty: an all-reduce of 0 bytes, silently
    host = _load(DATA / "collectives" / "pytorch_et.0.json.gz")
    index, node = next((i, n) for i, n in enumerate(host["nodes"]) if n["name"] == "c10d::allreduce_")
    node["inputs"] = inputs
    p = tmp_path / "pytorch_et.0.json"
    p.write_text(json.dumps(host, indent=2))
    err = _error([p])
    assert err.location == f"node {index}" and f"{part!r} must be a list, not {got}" in err.message


def test_a_node_that_is_its_own_parent_names_the_node(tmp_path):
    # PyTorch's process node is its own parent; any other such node would be dropped with its
    # subtree (a corrupt file)
    host = _load(DATA / "collectives" / "pytorch_et.0.json.gz")
    index, node = next((i, n) for i, n in enumerate(host["nodes"]) if n["name"] == "c10d::allreduce_")
    node["ctrl_deps"] = node["id"]
    p = tmp_path / "pytorch_et.0.json"
    p.write_text(json.dumps(host, indent=2))
    err = _error([p])
    assert err.location == f"node {index}" and f"node id {node['id']} (c10d::allreduce_) is its own parent" in err.message


def _deep_inputs(tmp_path, name: str, depth: int) -> tuple[list[Path], int]:
    """The MLP recording with the first ``name`` op's first input value nested ``depth`` deep
    (a corrupt file: orjson reads 300 levels but writes at most 254, and reads at most 1,024);
    the files and the op's index."""
    host = _load(MLP_ET)
    index, node = next((i, n) for i, n in enumerate(host["nodes"]) if n["name"] == name)
    node["inputs"]["values"][0] = "DEEP"
    text = json.dumps(host, indent=2).replace('"DEEP"', "[" * depth + "]" * depth, 1)
    h, k = _write(tmp_path)
    h.write_text(text)
    return [h, k], index


@pytest.mark.parametrize("depth", [300, 5000])
def test_inputs_nested_deeper_than_orjson_writes_name_the_node(tmp_path, depth):
    # a host ET string nested 300 deep ended in orjson's "Recursion limit reached" (internal
    # error); aten::linear is a node of its own in the MLP (its inputs are written)
    paths, index = _deep_inputs(tmp_path, "aten::linear", depth)
    err = _error(paths)
    assert err.location == f"node {index}" and "inputs/outputs cannot be kept" in err.message


@pytest.mark.parametrize("depth", [253, 254])
def test_inputs_as_deep_as_orjson_writes_are_kept(tmp_path, depth):
    # each of an op's six lists is written by orjson on its own (chakra_pytorch/iotext.py): the
    # input values holding a value nested 253 deep (254 levels, the most orjson writes) are kept
    # and written as Python prints them; one level deeper is the error naming the node
    paths, index = _deep_inputs(tmp_path, "aten::linear", depth)
    if depth == 254:
        err = _error(paths)
        assert err.location == f"node {index}" and "inputs/outputs cannot be kept" in err.message
        return
    linear = next(n for n in _nodes(paths) if n.name == "aten::linear")
    assert linear.inputs.values.startswith("[" + "[" * depth + "]" * depth + ", [")


@pytest.mark.parametrize("depth", [300, 5000])
def test_inputs_of_a_folded_op_are_not_read(tmp_path, depth):
    # aten::addmm runs inside aten::linear, which it is folded into: its inputs are never
    # written, so they are not read either, however deep (the rest converts as recorded)
    paths, _index = _deep_inputs(tmp_path, "aten::addmm", depth)
    (tmp_path / "plain").mkdir()
    names = [n.name for n in _nodes(paths)]
    assert names == [n.name for n in _nodes(_write(tmp_path / "plain"))]
    assert "aten::addmm" not in names and names.count("aten::linear") == 2


def test_invalid_utf8_in_a_host_et_string_names_the_place(tmp_path):
    h, k = _write(tmp_path)
    h.write_bytes(h.read_bytes().replace(b'"aten::addmm"', b'"aten::addmm\xff"', 1))
    err = _error([h, k])
    assert "invalid bytes in UTF8" in err.message and err.location.startswith("after node")


@pytest.mark.parametrize("kineto", [DATA / "ddp_steps" / "kineto.0.json.gz",  # the same program, another run
                                    DATA / "ddp" / "kineto.1.json.gz"])  # the other rank of the same run
def test_a_kineto_trace_of_another_process_is_refused(tmp_path, kineto):
    # both find every host op of rank 0 by record function id and name; only the pid tells them
    # apart (one process writes both files of a pair), and they used to convert with its spans
    shutil.copy(DATA / "ddp" / "pytorch_et.0.json.gz", tmp_path / "pytorch_et.0.json.gz")
    shutil.copy(kineto, tmp_path / "kineto.0.json.gz")
    with pytest.raises(TraceFormatError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rank in open_pytorch([str(tmp_path)]):  # the lone host ET takes the Kineto trace's rank
            list(rank.nodes())
    assert "Kineto trace is from another run" in e.value.message and "host ET pid 5893" in e.value.message


def test_an_empty_file_among_the_traces_is_refused_not_skipped(tmp_path):
    # skipped, it left rank 0 without durations beside a rank 1 with them
    for f in (DATA / "ddp").iterdir():
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "kineto.0.json.gz").unlink()
    (tmp_path / "kineto.0.json").write_bytes(b"")
    err = _error([tmp_path])
    assert err.where == str(tmp_path / "kineto.0.json") and "empty" in err.message


@pytest.mark.parametrize("cat, key, in_args", [("cpu_op", "External id", True), ("cpu_op", "tid", False),
                                              ("cpu_op", "Record function id", True)])
def test_kineto_id_of_the_wrong_type_names_the_event(tmp_path, cat, key, in_args):
    # such a value was taken for an absent one: an op lost its timing or its launch edge, a
    # kernel its stream
    kineto = _load(MLP_KINETO)
    ev = next(e for e in kineto["traceEvents"] if e.get("cat") == cat and e.get("ph") == "X")
    (ev["args"] if in_args else ev)[key] = "x"
    index = kineto["traceEvents"].index(ev) + 1
    err = _error(_write(tmp_path, kineto=kineto))
    assert err.location == f"event {index}" and f"{key} 'x' is not an integer" in err.message


def test_host_op_rf_id_of_the_wrong_type_names_the_node(tmp_path):
    # it used to read as no rf_id: the op lost its Kineto span and its kernels
    host = _load(MLP_ET)
    index, node = next((i, n) for i, n in enumerate(host["nodes"]) if n["name"] == "aten::linear")
    for attr in node["attrs"]:
        if attr["name"] == "rf_id":
            attr["value"] = "abc"
    err = _error(_write(tmp_path, host=host))
    assert err.location == f"node {index}" and "rf_id must be an integer, not str" in err.message


@pytest.mark.parametrize("alone", [False, True])
def test_a_trace_event_that_is_not_an_object_names_the_event(tmp_path, alone):
    # the recorded MLP rank's Kineto trace with one operator's event replaced by "" (or a number):
    # the event was skipped, and its operator lost without a word; with the host ET and alone
    kineto = _load(MLP_KINETO)
    index = next(i for i, e in enumerate(kineto["traceEvents"]) if e.get("name", "").startswith("aten::"))
    kineto["traceEvents"][index] = ""
    paths = _write(tmp_path, kineto=kineto)
    err = _error([p for p in paths if "kineto" in p.name] if alone else paths)
    assert err.where.endswith("kineto.0.json") and err.location == f"event {index + 1}"
    assert "an event that is not a JSON object (str)" in err.message


def test_kernel_stream_of_the_wrong_type_names_the_event(tmp_path):
    # the kernel used to land on stream 0 and lose its stream's order
    for f in (DATA / "nccl").iterdir():
        shutil.copy(f, tmp_path / f.name)
    name = "kineto.0.json"  # plain JSON in this folder
    kineto = json.loads((tmp_path / name).read_text())
    ev = next(e for e in kineto["traceEvents"] if e.get("cat") == "kernel")
    ev["args"]["stream"] = "x"
    index = kineto["traceEvents"].index(ev) + 1
    (tmp_path / name).write_text(json.dumps(kineto))
    err = _error([tmp_path])
    assert err.where == str(tmp_path / "kineto.0.json") and err.location == f"event {index}"
    assert "stream 'x' is not an integer" in err.message


@pytest.mark.parametrize("value, words", [([1, 2], "'ctrl_deps' names 2 parents"),
                                          (True, "'ctrl_deps' must be a node id, not bool"),
                                          (-3, "'ctrl_deps' must be a node id (or -1: none), not -3")])
def test_a_parent_that_is_not_one_node_id_names_the_node(tmp_path, value, words):
    # a list of two parents used to be read as its first, a boolean as node 1
    host = _load(MLP_ET)
    host["nodes"][5]["ctrl_deps"] = value
    err = _error(_write(tmp_path, host))
    assert err.location == "node 5" and words in err.message


def test_a_parent_that_is_not_in_the_file_names_the_node(tmp_path):
    # the recorded MLP rank with one operator's parent id pointing past every node: the operator
    # was taken as a top-level one, its time counted beside its parent's, which holds it
    host = _load(MLP_ET)
    node = next(n for n in host["nodes"] if n["name"].startswith("aten::") and n["ctrl_deps"] > 1)
    missing = max(n["id"] for n in host["nodes"]) + 1000
    node["ctrl_deps"] = missing
    err = _error(_write(tmp_path, host))
    assert err.location == f"node id {node['id']}"
    assert f"names parent {missing} (ctrl_deps), which the host ET does not have" in err.message


@pytest.mark.parametrize("values, words", [([5], "first input is 5"), ([None], "first input is null"),
                                           ([], "first input is missing")])
def test_a_process_group_node_without_its_description_names_the_node(tmp_path, values, words):
    # the recorded ddp rank's groups node with its JSON text replaced: the groups were ignored
    host = _load(DATA / "ddp" / "pytorch_et.0.json.gz")
    index, node = next((i, n) for i, n in enumerate(host["nodes"]) if n["name"] == "## process_group:init ##")
    node["inputs"]["values"] = values
    p = tmp_path / "pytorch_et.0.json"
    p.write_text(json.dumps(host, indent=2))
    err = _error([p])
    assert err.location == f"node {index}" and "bad '## process_group:init ##' description" in err.message
    assert words in err.message


@pytest.mark.parametrize("value, shown", [("x", '"x"'), (None, "null"), (1024.0, "1024.0"), (True, "true")])
def test_a_message_size_that_is_not_a_count_names_the_node(tmp_path, value, shown):
    # the hand-made NCCL fixture (tests/data/README.md) with its all-reduce's in_msg_nelems
    # replaced: the size used to fall back silently on the c10d op's tensors
    host = json.loads((DATA / "nccl" / "pytorch_et.0.json").read_text())
    index, node = next((i, n) for i, n in enumerate(host["nodes"]) if n["name"] == "record_param_comms")
    next(a for a in node["attrs"] if a["name"] == "in_msg_nelems")["value"] = value
    p = tmp_path / "pytorch_et.0.json"
    p.write_text(json.dumps(host, indent=2))
    err = _error([p])
    assert err.location == f"node {index}" and f"in_msg_nelems {shown} is not a count of elements" in err.message
