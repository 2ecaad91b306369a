"""Edge cases found in review: outputs never lost or half-published, one-line errors instead of
tracebacks, and no false findings on legal inputs."""

from __future__ import annotations

import json
import os
import stat

import pytest

from chakra_core import DepGraph
from chakra_core._attrs import make_attr, set_attr
from chakra_core._errors import ConfigError, TraceFormatError
from chakra_core._etio import EtWriter, write_et
from chakra_core._jsonform import read_json, write_json
from chakra_core._schema import CommType, GlobalMetadata, Node, NodeType
from chakra_core._traceset import MemoryRank, TraceSet, open_traceset
from chakra_core._validate import validate


def _chain(n):
    out = []
    for i in range(1, n + 1):
        node = Node(id=i, name=f"n{i}", type=NodeType.COMP_NODE, duration_micros=10)
        if i > 1:
            node.data_deps.append(i - 1)
        out.append(node)
    return out


# -- outputs -----------------------------------------------------------------------------------

def test_failed_final_flush_keeps_old_file(tmp_path, monkeypatch):
    p = tmp_path / "a.et"
    write_et(p, None, _chain(10))
    before = p.read_bytes()

    def full(self):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(EtWriter, "_flush", full)
    with pytest.raises(OSError):
        write_et(p, None, _chain(3))
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["a.et"]


def test_new_files_follow_umask_and_old_files_keep_mode(tmp_path):
    old = os.umask(0o022)
    try:
        p = tmp_path / "m.et"
        write_et(p, None, _chain(2))
        assert stat.S_IMODE(p.stat().st_mode) == 0o644
        os.chmod(p, 0o640)
        write_et(p, None, _chain(3))
        assert stat.S_IMODE(p.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_symlinked_output_keeps_the_link(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_json(link, GlobalMetadata(), _chain(2))
    assert link.is_symlink() and json.loads(real.read_text())["nodes"][1]["id"] == "2"


def test_failed_convert_keeps_the_whole_earlier_set(tmp_path, dp_set, chakra_cli):
    dp_set.write(tmp_path / "job")
    chakra_cli("convert", tmp_path / "job", "-o", tmp_path / "keep")
    before = [(tmp_path / f"keep.{r}.et").read_bytes() for r in (0, 1)]
    data = (tmp_path / "job.1.et").read_bytes()
    (tmp_path / "job.1.et").write_bytes(data[:-3])
    status, _, err = chakra_cli("convert", tmp_path / "job", "-o", tmp_path / "keep")
    assert status == 2 and "truncated" in err
    assert [(tmp_path / f"keep.{r}.et").read_bytes() for r in (0, 1)] == before
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_smaller_set_replaces_stale_ranks(tmp_path, dp_set, chakra_cli):
    dp_set.write(tmp_path / "out" / "t", compress=True)
    TraceSet([dp_set[1]]).write(tmp_path / "out" / "t")  # a library write keeps other ranks
    assert sorted(os.listdir(tmp_path / "out")) == ["t.0.et.gz", "t.1.et", "t.1.et.gz"]
    TraceSet([dp_set[0]]).write(tmp_path / "one")
    status, _, _ = chakra_cli("convert", tmp_path / "one.0.et", "-o", tmp_path / "out" / "t")
    assert status == 0 and sorted(os.listdir(tmp_path / "out")) == ["t.0.et"]


def test_unwritable_output_is_one_line(tmp_path, dp_set, chakra_cli):
    dp_set.write(tmp_path / "job")
    (tmp_path / "afile").write_text("x")
    status, _, err = chakra_cli("convert", tmp_path / "job", "-o", tmp_path / "afile" / "sub")
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err


def test_jsonize_names(tmp_path, dp_set, chakra_cli):
    TraceSet([dp_set[0]]).write(tmp_path / "one")
    chakra_cli("jsonize", tmp_path / "one.0.et", "-o", tmp_path / "x.json", "--lines")
    assert len((tmp_path / "x.json").read_text().splitlines()) == 12  # header + 11 nodes
    assert len(list(read_json(tmp_path / "x.json")[1])) == 11
    chakra_cli("jsonize", tmp_path / "one.0.et", "-o", f"{tmp_path}/newdir/")
    assert os.listdir(tmp_path / "newdir") == ["trace.0.json"]


# -- plugins -------------------------------------------------------------------------------------

def test_broken_detect_and_observer_hooks_are_isolated(tmp_path, dp_set, chakra_register, chakra_cli):
    from chakra_core._pipeline import run_pipeline
    from chakra_core._plugins import PluginWarning
    from chakra_core.hookspecs import hookimpl

    class Broken:
        @hookimpl(tryfirst=True)
        def chakra_detect_format(self, paths):
            raise RuntimeError("detector bug")

        @hookimpl
        def chakra_stage_started(self, stage, name, context):
            raise RuntimeError("observer bug")

    chakra_register(Broken(), name="broken_hooks")
    dp_set.write(tmp_path / "job")
    with pytest.warns(PluginWarning, match="broken_hooks.*detector bug"):
        status, out, _ = chakra_cli("stats", tmp_path / "job", "--json")
    assert status == 0 and json.loads(out)["nodes"] == 22
    with pytest.warns(PluginWarning, match="observer bug"):
        run_pipeline({"input": {"paths": [str(tmp_path / "job")], "format": "et"},
                      "backends": [{"name": "et", "output": str(tmp_path / "o")}]})
    assert (tmp_path / "o" / "result.json").exists()


def test_factory_errors_become_one_line(chakra_register, chakra_cli, tmp_path):
    from chakra_core.hookspecs import hookimpl

    class Bad:
        @hookimpl
        def chakra_register_formats(self, register):
            register("typo", "json:NoSuchClass")
            register("boom", lambda: 1 / 0)

    chakra_register(Bad(), name="bad_factories")
    for fmt, what in (("typo", "AttributeError"), ("boom", "ZeroDivisionError")):
        status, _, err = chakra_cli("stats", tmp_path, "--format", fmt)
        assert status == 2 and what in err and f"format {fmt!r}" in err
        assert err.count("\n") == 1


# -- options and pipelines ---------------------------------------------------------------------

@pytest.mark.parametrize("opts, match", [
    ({"prefix": None}, "wants str, got null"),
    ({"compress": None}, "wants bool, got null"),
])
def test_null_options_are_refused(opts, match):
    from chakra_core._builtin.backends import EtExporter

    with pytest.raises(ConfigError, match=match):
        EtExporter().check_options(opts)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "nan"])
def test_non_finite_numbers_are_refused(value):
    from chakra_core._builtin.transforms import ScaleTransform

    with pytest.raises(ConfigError, match="finite"):
        ScaleTransform().check_options({"compute_speedup": value})


def test_scale_overflow_is_an_error_and_source_is_not_modified(dp_set):
    from chakra_core._builtin.transforms import ScaleTransform

    t = ScaleTransform()
    out = t.apply(dp_set, t.check_options({"comm_scale": 1e30}))
    with pytest.raises(ConfigError, match="overflow"):
        list(out[0].nodes())
    twice = t.apply(dp_set, t.check_options({"compute_speedup": 2}))
    first = [n.duration_micros for n in twice[0].nodes()]
    again = [n.duration_micros for n in twice[0].nodes()]
    assert first == again and [n.duration_micros for n in dp_set[0].nodes()][0] == 10


@pytest.mark.parametrize("content, match", [
    (b"input: !!int x\n", "bad YAML value"),
    (b"input: \xff\xfe\n", "not UTF-8"),
])
def test_bad_pipeline_files(tmp_path, chakra_cli, content, match):
    p = tmp_path / "p.yaml"
    p.write_bytes(content)
    status, _, err = chakra_cli("run", p)
    assert status == 2 and match in err and err.count("\n") == 1


# -- JSON input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, content, match", [
    ("h.jsonl", '{"format": "chakra-et-json", "version": 1, "rank": "abc"}\n', "non-negative integer"),
    ("h.jsonl", '{"format": "chakra-et-json", "version": 1, "rank": -1}\n', "non-negative integer"),
    ("d.json", "[" * 100000, "nesting depth 101 exceeds the limit of 100"),
    ("t.json", '{"format": "chakra-et-json", "version": 1, "metadata": {}, "nodes": [\n{"id": "1"}\n]}\ngarbage\n',
     "text after the end"),
])
def test_bad_json_inputs(tmp_path, name, content, match):
    p = tmp_path / name
    p.write_text(content)
    with pytest.raises(TraceFormatError, match=match):
        list(read_json(p)[1])


def test_invalid_utf8_late_in_json(tmp_path):
    p = tmp_path / "late.json"
    write_json(p, GlobalMetadata(), _chain(2000))
    data = bytearray(p.read_bytes())
    data[-100] = 0xFF
    p.write_bytes(bytes(data))
    with pytest.raises(TraceFormatError, match="not UTF-8"):
        list(read_json(p)[1])


def test_jsonl_without_header_keeps_every_node(tmp_path):
    p = tmp_path / "nohdr.jsonl"
    p.write_text('{"id": "1", "type": "COMP_NODE"}\n{"id": "2", "type": "COMP_NODE", "data_deps": ["1"]}\n')
    meta, nodes, rank = read_json(p)
    assert [n.id for n in nodes] == [1, 2] and rank is None


def test_json_rank_gap_is_an_error(tmp_path, chakra_cli):
    for r in (0, 2):
        write_json(tmp_path / f"j{r}.json", GlobalMetadata(), _chain(2), rank=r)
    status, _, err = chakra_cli("stats", tmp_path)
    assert status == 2 and "missing ranks 1" in err


# -- no false findings -------------------------------------------------------------------------------

def test_huge_uint64_ids(tmp_path):
    nodes = [Node(id=(1 << 63) + i, type=NodeType.COMP_NODE) for i in range(3)]
    nodes[2].data_deps.append(1 << 63)
    nodes[1].data_deps.append((1 << 64) - 1)
    g = DepGraph.build([nodes])
    assert g.missing == [((1 << 63) + 1, (1 << 64) - 1)]
    small = [Node(id=i, type=NodeType.COMP_NODE) for i in range(3)]
    small[1].data_deps.append((1 << 64) - 1)
    small[2].data_deps.append((1 << 63) + 5)
    assert DepGraph.build([small]).missing == [(1, (1 << 64) - 1), (2, (1 << 63) + 5)]
    write_et(tmp_path / "u.0.et", None, nodes)
    assert [f.rule for f in validate(open_traceset(tmp_path / "u.0.et"))] == ["missing-dep"]


def test_unranked_file_sending_to_rank_0(tmp_path):
    send = Node(id=1, type=NodeType.COMM_SEND_NODE)
    for k, v in (("comm_dst", 0), ("comm_tag", 1), ("comm_size", 8)):
        set_attr(send, k, v)
    write_et(tmp_path / "rank3.et", None, [send])
    assert validate(open_traceset(tmp_path / "rank3.et")) == []


def _coll(nid, pg=None, pg_slot=None):
    n = Node(id=nid, type=NodeType.COMM_COLL_NODE)
    set_attr(n, "comm_type", int(CommType.ALL_REDUCE))
    set_attr(n, "comm_size", 64)
    if pg is not None:
        n.attr.append(make_attr("pg_name", pg, slot=pg_slot))
    return n


def test_group_names_that_mean_the_same():
    meta = GlobalMetadata()
    ts = TraceSet([MemoryRank(0, meta, [_coll(1, "0")]), MemoryRank(1, meta, [_coll(1)])])
    assert validate(ts) == []
    ts = TraceSet([MemoryRank(0, meta, [_coll(1, "1")]), MemoryRank(1, meta, [_coll(1, 1, "int64_val")])],
                  process_groups={"1": [0, 1]})
    assert validate(ts) == []


def test_pytorch_empty_rank_list_means_every_rank(tmp_path):
    pg = Node(id=1, name="## process_group:init ##", type=NodeType.METADATA_NODE)
    pg.inputs.values = "['" + json.dumps([{"pg_name": "0", "ranks": [0, 1]}, {"pg_name": "1", "ranks": []}]) + "']"
    for r in (0, 1):
        write_et(tmp_path / f"t.{r}.et", None, [pg, _coll(2, "1")])
    ts = open_traceset(str(tmp_path / "t"))
    assert ts.group_members("1") == [0, 1] and validate(ts) == []
