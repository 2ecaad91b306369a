"""Edge cases found in review: outputs never lost or half-published, one-line errors instead of
tracebacks, and no false findings on legal inputs."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from chakra_core import DepGraph
from chakra_core.base._errors import ConfigError, TraceFormatError
from chakra_core.io._etio import EtWriter, write_et
from chakra_core.io._jsonform import read_json, write_json
from chakra_core.io._schema import CommType, GlobalMetadata, Node, NodeType
from chakra_core.trace._attrs import make_attr, set_attr
from chakra_core.trace._traceset import MemoryRank, TraceSet, open_traceset
from chakra_core.validation._validate import validate


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
    from chakra_core.hookspecs import hookimpl
    from chakra_core.host._plugins import PluginWarning
    from chakra_core.pipeline._pipeline import run_pipeline

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
    from chakra_core.builtin.backends import EtExporter

    with pytest.raises(ConfigError, match=match):
        EtExporter().check_options(opts)


@pytest.mark.parametrize("key, message", [
    # a close name is the hint; the et exporter's options are prefix and compress
    ("prefx", "unknown option 'prefx' (did you mean 'prefix'?)"),
    ("level", "unknown option 'level'; accepted: compress, prefix"),
])
def test_unknown_options_name_a_close_one_or_every_one(key, message):
    from chakra_core.builtin.backends import EtExporter

    with pytest.raises(ConfigError) as caught:
        EtExporter().check_options({key: 1})
    assert str(caught.value).split(": ", 1)[1] == message


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "nan"])
def test_non_finite_numbers_are_refused(value):
    from chakra_core.builtin.transforms import ScaleTransform

    with pytest.raises(ConfigError, match="finite"):
        ScaleTransform().check_options({"compute_speedup": value})


def test_scale_overflow_is_an_error_and_source_is_not_modified(dp_set):
    from chakra_core.builtin.transforms import ScaleTransform

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


# -- strict, bounded reading (issue 10: every signature of the fuzz campaign) ---------------------

def _frame(data: bytes) -> bytes:
    from chakra_core import encode_varint

    return encode_varint(len(data)) + data


_META = GlobalMetadata(version="0.0.4").SerializeToString()
_GOOD = Node(id=1, name="a", type=NodeType.COMP_NODE, duration_micros=5).SerializeToString()
#: id 2, name b"\xff\xfe" (not UTF-8), type COMP_NODE
_BAD_NAME = b"\x08\x02\x12\x02\xff\xfe\x18\x04"


def _one_line_error(result, *words):
    status, _, err = result
    assert status == 2, err
    assert err.count("\n") == 1 and "internal error" not in err and "Traceback" not in err
    for w in words:
        assert w in err, err
    return err


def _bad_name_set(tmp_path, name: bytes = b"\xff\xfe"):
    node = b"\x08\x02\x12" + bytes([len(name)]) + name + b"\x18\x04"
    for r in range(2):
        (tmp_path / f"t.{r}.et").write_bytes(_frame(_META) + _frame(_GOOD) + _frame(node))
    return tmp_path / "t"


@pytest.mark.parametrize("command", [
    ["convert", "-o", "OUT/"], ["validate"], ["stats"], ["jsonize", "-o", "OUT/"], ["simulate"],
    ["export", "--to", "astrasim", "-o", "OUT"],
])
@pytest.mark.parametrize("name", [b"\xff\xfe", b"## process_group:init ##\xff"])
def test_node_name_not_utf8_is_an_error_in_every_command(tmp_path, chakra_cli, command, name):
    # a plain bad name and one that process-group discovery decodes (it looks for that name)
    prefix = _bad_name_set(tmp_path, name)
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in command]
    err = _one_line_error(chakra_cli(argv[0], prefix, *argv[1:]), "t.0.et:byte 18", "node #1", "UTF-8")
    assert "node #1 is not a Chakra node message" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.et"))


def test_convert_never_copies_an_undecodable_node(tmp_path, chakra_cli):
    prefix = _bad_name_set(tmp_path)
    _one_line_error(chakra_cli("convert", prefix, "-o", tmp_path / "copy"), "t.0.et:byte 18")
    assert not list(tmp_path.glob("copy*"))


def test_empty_node_frames_are_refused_at_once(tmp_path, chakra_cli):
    # a 195 KB .et.gz of 201 million zero-length frames kept validate busy for minutes
    import gzip

    p = tmp_path / "zero.0.et.gz"
    p.write_bytes(gzip.compress(_frame(_META) + b"\x00" * (8 << 20)))
    _one_line_error(chakra_cli("validate", p), "zero.0.et.gz:byte 8", "node #0", "zero-length")


def test_dependency_count_per_node_is_bounded(tmp_path, chakra_cli, monkeypatch):
    # one node of 50 million dependencies in a 48 KB .et.gz needed 1.8 GB; 2 million here
    import gzip

    from chakra_core import encode_varint

    n = 2_000_000
    packed = b"\x08\x01\x2a" + encode_varint(n) + b"\x01" * n
    p = tmp_path / "deps.0.et.gz"
    p.write_bytes(gzip.compress(_frame(_META) + _frame(_GOOD) + _frame(packed)))
    err = _one_line_error(chakra_cli("stats", p), "deps.0.et.gz:byte", "node #1",
                          f"dependency count {n} exceeds the limit of {1 << 20}", "CHAKRA_MAX_DEPS=")
    import re

    assert int(re.search(r"raise it with CHAKRA_MAX_DEPS=(\d+)", err).group(1)) >= n
    # unpacked encoding (one field per dependency) counts the same way
    unpacked = b"\x08\x01" + b"\x20\x01" * 300
    q = tmp_path / "few.0.et"
    q.write_bytes(_frame(_META) + _frame(unpacked))
    monkeypatch.setenv("CHAKRA_MAX_DEPS", "100")
    _one_line_error(chakra_cli("validate", q), "node #0", "exceeds the limit of 100")
    monkeypatch.setenv("CHAKRA_MAX_DEPS", "300")
    status, _, err = chakra_cli("stats", q, "--json")
    assert status == 0, err


def test_gzip_inflation_is_bounded(tmp_path, chakra_cli, monkeypatch):
    import gzip

    big = Node(id=1, name="x" * 4000, type=NodeType.COMP_NODE).SerializeToString()
    p = tmp_path / "bomb.0.et.gz"
    p.write_bytes(gzip.compress(_frame(_META) + _frame(big) * 20_000, 9))  # 80 MB in about 0.2 MB
    _one_line_error(chakra_cli("stats", p, "--no-longest-path"), "bomb.0.et.gz:byte",
                    "gzip data expands by a factor of", "CHAKRA_MAX_INFLATION=")
    monkeypatch.setenv("CHAKRA_MAX_INFLATION", "100000")
    status, out, err = chakra_cli("stats", p, "--no-longest-path", "--json")
    assert status == 0 and json.loads(out)["nodes"] == 20_000, err


def test_group_discovery_searches_the_bytes_within_the_inflation_limit(tmp_path, monkeypatch):
    import gzip

    big = Node(id=1, name="x" * 4000, type=NodeType.COMP_NODE).SerializeToString()
    p = tmp_path / "bomb.0.et.gz"
    p.write_bytes(gzip.compress(_frame(_META) + _frame(big) * 20_000, 9))
    with pytest.raises(TraceFormatError, match="gzip data expands by a factor of"):
        open_traceset(str(p)).process_groups  # noqa: B018  (the property reads the file)
    monkeypatch.setenv("CHAKRA_MAX_INFLATION", "100000")
    assert open_traceset(str(p)).process_groups == {}


@pytest.mark.parametrize("name, content, words", [
    ("s.yaml", b"endpoint-delay: 10\n\xff\n", ["s.yaml:line 2", "not UTF-8 text"]),
    ("s.yaml", b"network: " + b"[" * 5000 + b"]" * 5000 + b"\n",
     ["s.yaml:line 1", "nesting depth 101 exceeds the limit of 100", "CHAKRA_MAX_DEPTH="]),
    ("s.json", b'{"network": ' + b"[" * 100000 + b"]" * 100000 + b"}",
     ["s.json", "exceeds the limit of 100", "CHAKRA_MAX_DEPTH="]),
    ("s.yaml", b"endpoint-delay: !!int abc\n", ["s.yaml:line 1", "bad YAML value", "'abc'"]),
    ("s.yaml", b"endpoint-delay: 10\nx: \x7f\n", ["s.yaml:line 2", "malformed YAML", "#x007f"]),
    ("s.json", b'{"endpoint-delay": NaN}', ["s.json", "NaN is not JSON"]),
    ("s.yaml", b"endpoint-delay: 9223372036854775807\n",
     ["key 'endpoint-delay'", "must be <= 2147483647", "32-bit"]),
    ("s.yaml", b"network:\n  - {topology: Ring, npus_count: 2147483648, bandwidth: 50, latency: 1}\n",
     ["npus_count 2147483648 exceeds the limit", "CHAKRA_MAX_NPUS"]),
])
def test_bad_system_files(tmp_path, dp_set, chakra_cli, name, content, words):
    dp_set.write(tmp_path / "job")
    (tmp_path / name).write_bytes(content)
    _one_line_error(chakra_cli("simulate", tmp_path / "job", "--system", tmp_path / name), *words)


def test_yaml_aliases_are_walked_once(tmp_path):
    from chakra_core.base._yamlparse import parse_yaml

    # 3^40 paths through shared lists: a walk that does not remember them would never end
    text = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}]\n" for i in range(1, 41))
    assert parse_yaml(text, "x.yaml")["a40"][0][0][0] is not None


def test_simulated_time_past_int64_is_an_error(tmp_path, dp_set, chakra_cli):
    dp_set.write(tmp_path / "job")
    (tmp_path / "lat.yaml").write_text("network:\n  - {topology: Ring, npus_count: 2, bandwidth: 50, latency: 9.0e+18}\n")
    _one_line_error(chakra_cli("simulate", tmp_path / "job", "--system", tmp_path / "lat.yaml"),
                    "job.0.et", "simulated time passes 2**63-1 ns")


def test_raised_depth_limit_past_the_parser_is_still_one_line(tmp_path, dp_set, chakra_cli, monkeypatch):
    dp_set.write(tmp_path / "job")
    (tmp_path / "s.yaml").write_bytes(b"network: " + b"[" * 5000 + b"]" * 5000 + b"\n")
    monkeypatch.setenv("CHAKRA_MAX_DEPTH", "100000")
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # what the parser runs out of (another test may have raised it)
    try:
        result = chakra_cli("simulate", tmp_path / "job", "--system", tmp_path / "s.yaml")
    finally:
        sys.setrecursionlimit(old)
    _one_line_error(result, "s.yaml", "nested deeper than the parser can read")
    monkeypatch.setenv("CHAKRA_MAX_DEPTH", "lots")
    _one_line_error(chakra_cli("simulate", tmp_path / "job", "--system", tmp_path / "s.yaml"),
                    "CHAKRA_MAX_DEPTH must be a positive whole number")


def test_deep_pipeline(tmp_path, chakra_cli):
    p = tmp_path / "p.yaml"
    p.write_bytes(b"input: " + b"[" * 5000 + b"]" * 5000 + b"\n")
    _one_line_error(chakra_cli("run", p), "p.yaml:line 1", "exceeds the limit of 100")
    p.write_bytes(b"input: {}\n\x7f\n")
    _one_line_error(chakra_cli("run", p), "p.yaml:line 2", "#x007f")


_HEADER = '{"format": "chakra-et-json", "version": 1, "rank": 0, "metadata": {}, "nodes": ['


@pytest.mark.parametrize("node, words", [
    ('{"id": "1", "name": "\\ud800", "type": "COMP_NODE"}', ["line 2", "surrogate"]),
    ('{"id": "1", "\\udfff": 1}', ["line 2", "surrogate"]),  # in a key: upb raised SystemError
    ('{"id": "1", "attr": [{"name": "x", "foo_list": {"values": [1]}}]}', ["line 2", "foo_list"]),
    ('{"id": "1", "attr": [{"name": "x", "double_val": Infinity}]}', ["line 2", "Infinity is not JSON"]),
    ('{"id": "1", "attr": [{"name": "x", "double_val": NaN}]}', ["line 2", "NaN is not JSON"]),
    ('{"id": "1", "type": 1e300}', ["line 2", "not a Chakra Node", "..."]),
])
def test_bad_json_form_nodes(tmp_path, chakra_cli, node, words):
    p = tmp_path / "n.json"
    p.write_text(_HEADER + "\n" + node + "\n]}\n")
    err = _one_line_error(chakra_cli("validate", p), "n.json:", *words)
    assert len(err) < 600


def test_json_form_double_infinity_as_a_string_is_kept(tmp_path, chakra_cli):
    # protobuf's JSON mapping writes infinity as the string "Infinity": that is valid
    p = tmp_path / "n.json"
    p.write_text(_HEADER + '\n{"id": "1", "type": "COMP_NODE", "attr": [{"name": "x", "double_val": "Infinity"}]}\n]}\n')
    meta, nodes, _ = read_json(p)
    assert [n.attr[0].double_val for n in nodes] == [float("inf")]


def test_rank_numbers_are_bounded(tmp_path, chakra_cli, monkeypatch):
    # trace.1000000000000.et made a set of range(10**12): MemoryError
    for r in (0, 1_000_000_000_000):
        (tmp_path / f"trace.{r}.et").write_bytes(_frame(_META) + _frame(_GOOD))
    err = _one_line_error(chakra_cli("validate", tmp_path), "trace.1000000000000.et",
                          "rank 1000000000000 exceeds the limit of 1048575", "CHAKRA_MAX_RANK")
    assert "at most" in err
    (tmp_path / "trace.1000000000000.et").rename(tmp_path / "trace.1500000.et")
    monkeypatch.setenv("CHAKRA_MAX_RANK", "2000000")
    _one_line_error(chakra_cli("validate", tmp_path), "missing ranks 1, 2, 3", "found 2 of 1500001")
    long = tmp_path / ("trace." + "9" * 200 + ".et")
    (tmp_path / "trace.1500000.et").rename(long)
    _one_line_error(chakra_cli("stats", long), "(200 digits) exceeds the limit")


def test_rank_of_a_json_header_is_bounded(tmp_path, chakra_cli):
    p = tmp_path / "r.json"
    p.write_text(_HEADER.replace('"rank": 0', '"rank": 1000000000000') + "\n]}\n")
    _one_line_error(chakra_cli("validate", p), "r.json:line 1", '"rank" 1000000000000 exceeds the limit')


def test_only_ascii_digits_make_a_rank(tmp_path):
    from chakra_core.trace._traceset import _rank_of

    assert _rank_of("trace.\u0663.et") is None and _rank_of("trace.3.et") == ("trace", 3)


def test_text_workload_npus_is_bounded(tmp_path, chakra_cli):
    # -I npus=2147483648 ended in SIGSEGV inside protobuf (comm_dst is an int32)
    from pathlib import Path

    text = Path(__file__).parent.parent / "examples" / "text" / "resnet50_like.txt"
    _one_line_error(chakra_cli("validate", text, "-I", "npus=2147483648"),
                    "resnet50_like.txt", "npus 2147483648 exceeds the limit of 1048576", "CHAKRA_MAX_NPUS")


def test_process_groups_nested_too_deeply(tmp_path, chakra_cli):
    # found by the long fuzz campaign: json.loads of the attribute raised RecursionError
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.append(make_attr("process_groups", "[" * 100000 + "]" * 100000))
    write_et(tmp_path / "t.0.et", meta, _chain(2))
    _one_line_error(chakra_cli("jsonize", tmp_path / "t.0.et", "-o", tmp_path / "x.json"),
                    "t.0.et", "bad process-group description")


def test_durations_past_int64_ns_are_an_error_even_without_validation(tmp_path, chakra_cli):
    nodes = _chain(2)
    nodes[1].duration_micros = 1 << 62  # 2^62 us is 2^62 * 1000 ns: past int64
    write_et(tmp_path / "big.0.et", None, nodes)
    _one_line_error(chakra_cli("simulate", tmp_path / "big.0.et", "--no-validate"),
                    "big.0.et", "node 2: duration of", "passes 2**63-1 ns")
