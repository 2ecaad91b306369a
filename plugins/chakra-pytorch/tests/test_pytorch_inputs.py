"""Schema strings, old node shapes, detection, file pairing and malformed inputs."""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path

import pytest

from chakra_core import TraceFormatError, detect_format, load_traces
from chakra_pytorch import KNOWN_SCHEMAS, PyTorchTraceWarning, open_pytorch
from chakra_pytorch.sniff import rank_from_name, sniff_kind

DATA = Path(__file__).resolve().parent / "data"
MLP_ET = DATA / "mlp" / "pytorch_et.0.json.gz"
MLP_KINETO = DATA / "mlp" / "kineto.0.json.gz"


def _load(path: Path) -> dict:
    return json.loads(gzip.open(path).read())


def _names_durations(paths) -> list[tuple[str, int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(p) for p in paths])
        return [(n.name, n.duration_micros) for n in ts[0].nodes()]


def _with_schema(tmp_path: Path, schema: str) -> Path:
    doc = _load(MLP_ET)
    doc["schema"] = schema
    p = tmp_path / "et.0.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("schema", KNOWN_SCHEMAS)
def test_every_known_schema_string_converts_without_warning(tmp_path, schema):
    p = _with_schema(tmp_path, schema)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyTorchTraceWarning)
        ts = open_pytorch([str(p), str(MLP_KINETO)])
        names = [n.name for n in ts[0].nodes()]
    assert names.count("aten::linear") == 2


def test_newer_schema_converts_with_a_warning(tmp_path):
    p = _with_schema(tmp_path, "1.2.0-chakra.1.1.0")
    with pytest.warns(PyTorchTraceWarning, match="newer than the newest known"):
        ts = open_pytorch([str(p), str(MLP_KINETO)])
    assert _names_durations([p, MLP_KINETO]) == _names_durations([MLP_ET, MLP_KINETO])
    assert len(list(ts[0].nodes())) > 0


def test_schema_1_0_1_flat_node_shape(tmp_path):
    # the 1.0.1 shape, made from the recorded trace: attributes as keys of the node, "parent"
    # instead of "ctrl_deps", inputs as a list beside input_shapes/input_types
    doc = _load(MLP_ET)
    doc["schema"] = "1.0.1"
    flat = []
    for n in doc["nodes"]:
        m = {"id": n["id"], "name": n["name"], "parent": n["ctrl_deps"],
             "inputs": n["inputs"]["values"], "input_shapes": n["inputs"]["shapes"],
             "input_types": n["inputs"]["types"], "outputs": n["outputs"]["values"],
             "output_shapes": n["outputs"]["shapes"], "output_types": n["outputs"]["types"]}
        m.update({a["name"]: a["value"] for a in n["attrs"] if a["name"] != "kernel_backend"})
        flat.append(m)
    doc["nodes"] = flat
    p = tmp_path / "old.0.json"
    p.write_text(json.dumps(doc))
    assert _names_durations([p, MLP_KINETO]) == _names_durations([MLP_ET, MLP_KINETO])


def test_sniff_and_detect(tmp_path):
    assert sniff_kind(str(MLP_ET)) == "host" and sniff_kind(str(MLP_KINETO)) == "kineto"
    assert detect_format([str(DATA / "ddp")]) == "pytorch"
    assert detect_format([str(MLP_ET), str(MLP_KINETO)]) == "pytorch"
    other = tmp_path / "x.json"
    other.write_text('{"nodes": []}')
    assert sniff_kind(str(other)) is None
    ts = load_traces([str(DATA / "ddp")])
    assert ts.ranks == [0, 1]


def test_rank_from_name():
    assert rank_from_name("a/pytorch_et.3.json.gz") == 3
    assert rank_from_name("rank12_et.json") == 12
    assert rank_from_name("et.json") is None
    assert rank_from_name("resnet50_et.json", strict=True) is None
    assert rank_from_name("resnet50_et.7.json", strict=True) == 7
    assert rank_from_name("trace_rank_2.json.gz", strict=True) == 2
    # the number after "rank" wins over other numbers (it used to be the last integer: 10)
    assert rank_from_name("et_rank1_step10.json") == 1
    assert rank_from_name("kineto_rank0_iter3.json.gz", strict=True) == 0
    assert rank_from_name("gpt3_et.5.json") == 5


def test_ranks_named_before_a_step_number(tmp_path):
    # a set named like et_rank{R}_step10.json used to fail: "two host traces for rank 10"
    for r in (0, 1):
        for kind, name in (("pytorch_et", "et"), ("kineto", "kineto")):
            src = DATA / "collectives" / f"{kind}.{r}.json.gz"
            (tmp_path / f"{name}_rank{r}_step10.json").write_bytes(gzip.open(src).read())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(tmp_path)])
    assert ts.ranks == [0, 1]
    assert [Path(ts[r].path).name for r in ts.ranks] == ["et_rank0_step10.json", "et_rank1_step10.json"]


def test_rank_from_name_skips_millisecond_timestamps():
    # tensorboard_trace_handler names a trace HOST_PID.<ms since 1970>.pt.trace.json: the
    # timestamp is no rank, the number before it may be
    assert rank_from_name("et_0.1694128201545.json") == 0
    assert rank_from_name("worker3_step_12.1694128201557.pt.trace.json") == 12
    assert rank_from_name("node7_18690.1733580000123.pt.trace.json.gz") == 18690
    assert rank_from_name("et_0.1694128201545.json", strict=True) is None
    assert rank_from_name("1733580000123.pt.trace.json") is None


def test_timestamped_names_convert_as_the_originals(tmp_path):
    # the DDP recording under PyTorch's default names (host ETs et_0.<ms>.json, Kineto traces
    # node7_<pid>.<ms>.pt.trace.json.gz) stopped with "the number 1733580000123 in the name is
    # not a rank" although each Kineto trace says its rank
    from chakra_pytorch.kineto import scan_process_pid

    src = DATA / "ddp"
    for r in (0, 1):
        pid = scan_process_pid(str(src / f"kineto.{r}.json.gz"))
        shutil.copy(src / f"pytorch_et.{r}.json.gz", tmp_path / f"et_{r}.1694128201545.json.gz")
        shutil.copy(src / f"kineto.{r}.json.gz", tmp_path / f"node7_{pid}.1733580000123.pt.trace.json.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither the timestamps nor the pids are read as ranks
        renamed = open_pytorch([str(tmp_path)])
    original = open_pytorch([str(src)])
    assert renamed.ranks == original.ranks == [0, 1]
    for r in original.ranks:
        assert [n.SerializeToString() for n in renamed[r].nodes()] == \
            [n.SerializeToString() for n in original[r].nodes()]


def test_lone_host_et_with_two_kineto_traces_pairs_by_rank(tmp_path):
    # one host ET (rank 1) beside the Kineto traces of ranks 0 and 1: it used to take the first
    # Kineto trace (rank 0's) and fail as "from another run"; now they pair by rank
    from chakra_pytorch import find_rank_files

    for name in ("pytorch_et.1.json.gz", "kineto.0.json.gz", "kineto.1.json.gz"):
        shutil.copy(DATA / "collectives" / name, tmp_path / name)
    err = _first_error([tmp_path])
    assert err.where == str(tmp_path / "kineto.0.json.gz")
    assert "Kineto trace of rank 0 has no host execution trace" in err.message
    (tmp_path / "kineto.0.json.gz").unlink()
    (pair,), _ = find_rank_files([str(tmp_path)])
    assert (pair.rank, Path(pair.kineto).name) == (1, "kineto.1.json.gz")


def test_lone_rank_takes_the_kineto_rank(tmp_path):
    from chakra_pytorch import find_rank_files

    shutil.copy(DATA / "ddp" / "pytorch_et.1.json.gz", tmp_path / "resnet50_et.json.gz")
    shutil.copy(DATA / "ddp" / "kineto.1.json.gz", tmp_path / "profile.json.gz")
    (pair,), dist = find_rank_files([str(tmp_path)])
    assert pair.rank == 1 == dist["rank"] and pair.kineto.endswith("profile.json.gz")
    (pair,), _ = find_rank_files([str(tmp_path / "resnet50_et.json.gz")])
    assert pair.rank == 0 and pair.kineto is None


def test_kineto_rank_from_distributed_info(tmp_path):
    # names without ranks for the Kineto files: distributedInfo.rank pairs them
    for r in (0, 1):
        shutil.copy(DATA / "ddp" / f"pytorch_et.{r}.json.gz", tmp_path / f"host_{r}.json.gz")
        shutil.copy(DATA / "ddp" / f"kineto.{r}.json.gz", tmp_path / f"prof_{'ab'[r]}.json.gz")
    from chakra_pytorch import find_rank_files

    pairs, dist = find_rank_files([str(tmp_path)])
    assert [(p.rank, Path(p.kineto).name) for p in pairs] == [(0, "prof_a.json.gz"), (1, "prof_b.json.gz")]
    assert dist["world_size"] == 2 and dist["backend"] == "gloo"


def test_files_named_by_pid_pair_by_their_process(tmp_path):
    # PyTorch's own file names for a profiler trace and an ExecutionTraceObserver default to the
    # host name and pid (``node7_31258.pt.trace.json``); a host ET without record_param_comms
    # took the pid in its name for its rank and its Kineto trace found no partner. The real
    # 4-rank recording renamed so: each host ET pairs with the Kineto trace of its own process.
    from chakra_pytorch import find_rank_files
    from chakra_pytorch.hostet import read_header
    from chakra_pytorch.kineto import read_distributed_info

    src = DATA / "pipeline_dp"
    want = {}
    for r in range(4):
        pid = read_header(str(src / f"pytorch_et.{r}.json.gz"))["pid"]
        want[read_distributed_info(str(src / f"kineto.{r}.json.gz"))["rank"]] = pid
        shutil.copy(src / f"pytorch_et.{r}.json.gz", tmp_path / f"et_node7_{pid}.json.gz")
        shutil.copy(src / f"kineto.{r}.json.gz", tmp_path / f"node7_{pid}.pt.trace.json.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the pids in the names are not read as ranks: no warning
        pairs, dist = find_rank_files([str(tmp_path)])
    assert [p.rank for p in pairs] == sorted(want) == list(range(dist["world_size"]))
    for p in pairs:
        assert Path(p.host).name == f"et_node7_{want[p.rank]}.json.gz"
        assert Path(p.kineto).name == f"node7_{want[p.rank]}.pt.trace.json.gz"
    # two Kineto traces of one pid (processes on two machines): the pid pairs nothing
    doc = _load(tmp_path / f"node7_{want[1]}.pt.trace.json.gz")
    for ev in doc["traceEvents"]:
        if ev.get("pid") == want[1]:
            ev["pid"] = want[0]
    (tmp_path / f"node7_{want[1]}.pt.trace.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
    err = _first_error([tmp_path])
    assert err.where == str(tmp_path / f"et_node7_{want[0]}.json.gz")
    assert err.message.startswith("cannot tell the rank")


def _first_error(paths) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = open_pytorch([str(p) for p in paths])
        for rt in ts:
            list(rt.nodes())
    return e.value


def test_truncated_json(tmp_path):
    raw = gzip.open(MLP_ET).read()
    p = tmp_path / "cut.0.json"
    p.write_bytes(raw[: len(raw) // 2])
    err = _first_error([p])
    assert "truncated or malformed JSON" in str(err) and str(p) in str(err)
    assert "\n" not in str(err)


@pytest.mark.parametrize("which", ["host", "kineto"])
def test_a_number_past_64_bits_is_not_called_truncated(tmp_path, which):
    # valid JSON, a whole number of 2**64 (a node id, an event's ts): it was reported as
    # "truncated or malformed JSON (parse error: integer overflow)"
    et, kt = _load(MLP_ET), _load(MLP_KINETO)
    if which == "host":
        et["nodes"][3]["id"] = 1 << 64
    else:
        next(e for e in kt["traceEvents"] if e.get("ph") == "X")["ts"] = 1 << 64
    (tmp_path / "pytorch_et.0.json").write_text(json.dumps(et))
    (tmp_path / "kineto.0.json").write_text(json.dumps(kt))
    err = _first_error([tmp_path / "pytorch_et.0.json", tmp_path / "kineto.0.json"])
    assert "a whole number too large for 64 bits" in str(err) and "truncated" not in str(err), err
    assert f"{which if which == 'kineto' else 'pytorch_et'}.0.json" in str(err) and "\n" not in str(err)


def test_truncated_gzip(tmp_path):
    data = MLP_ET.read_bytes()
    p = tmp_path / "cut.0.json.gz"
    p.write_bytes(data[: len(data) // 2])
    assert str(p) in str(_first_error([p]))


@pytest.mark.parametrize("doc, message", [
    ({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": {"id": 1}}, "no 'nodes' list"),
    ({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [{"id": "a", "name": "x"}]}, "non-negative integer"),
    ({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [{"name": "x"}]}, "without 'id'"),
    ({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [{"id": 1, "name": "x", "ctrl_deps": "p"}]},
     "'ctrl_deps' must be a node id"),
    ({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [{"id": 1, "name": "x", "attrs": [3]}]},
     "'attrs' must be a list"),
    ({"schema": 7, "pid": 1, "nodes": [{"id": 1, "name": "x"}]}, "no 'schema' string"),
    # these three used to name the wrong field or convert silently
    ({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [{"id": 1, "name": 5}]},
     "bad.0.json:node 0: node 'name' must be a string, not int"),
    ({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [{"id": 1, "name": "x", "attrs": "x"}]},
     "bad.0.json:node 0: 'attrs' must be a list of {name, type, value}"),
    ({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [
        {"id": 1, "name": "x", "attrs": [{"name": "rf_id", "type": "uint64", "value": 1}]},
        {"id": 2, "name": "y", "attrs": [{"name": "rf_id"}]}]},
     "bad.0.json:node 1: 'attrs' must be a list of {name, type, value}"),
    ({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [{"id": 1, "name": "x", "attrs": [{"name": "a", "value": 1}]}]},
     "'attrs' must be a list of {name, type, value}"),
    ({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [{"id": True, "name": "x"}]}, "non-negative integer"),
])
def test_wrong_schema_shape(tmp_path, doc, message):
    p = tmp_path / "bad.0.json"
    p.write_text(json.dumps(doc))
    assert message in str(_first_error([p]))


@pytest.mark.parametrize("schema", [7, None, ["1.1.1"]])
def test_a_schema_that_is_not_a_string_is_one_line_and_no_warning(tmp_path, chakra_cli, schema):
    # the schema check warned "unrecognised execution-trace schema '7'; converting by feature
    # detection" before the error said the trace was none
    p = tmp_path / "bad.0.json"
    p.write_text(json.dumps({"schema": schema, "pid": 1, "nodes": [{"id": 1, "name": "x"}]}))
    status, _, err = chakra_cli("convert", str(p), "--format", "pytorch", "-o", str(tmp_path / "o"))
    assert status == 2 and "execution-trace schema" not in err
    assert [ln for ln in err.splitlines() if "warning" not in ln] == [
        f"chakra convert: error: {p}: no 'schema' string at the top: not a PyTorch execution trace"]


def test_kineto_of_another_run():
    err = _first_error([MLP_ET, DATA / "transformer" / "kineto.0.json.gz"])
    assert "Kineto trace is from another run" in str(err)


def test_cli_one_line_and_exit_2(tmp_path, chakra_cli):
    raw = gzip.open(MLP_ET).read()
    p = tmp_path / "cut.0.json"
    p.write_bytes(raw[: len(raw) - 300])
    status, out, err = chakra_cli("convert", str(p), "--format", "pytorch", "-o", str(tmp_path / "o"))
    assert status == 2
    lines = [ln for ln in err.splitlines() if ln.strip() and "warning" not in ln]
    assert len(lines) == 1 and str(p) in lines[0] and "Traceback" not in err


def test_cli_converts_and_validates(tmp_path, chakra_cli):
    status, _, err = chakra_cli("convert", str(DATA / "collectives"), "-o", str(tmp_path / "c"))
    assert status == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.0.et", "c.1.et"]
    status, out, _ = chakra_cli("validate", str(tmp_path / "c"))
    assert status == 0 and "0 error(s)" in out
