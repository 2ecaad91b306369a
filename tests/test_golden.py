"""The committed golden trace decodes with a plain protobuf parse, and our writer (and the JSON
round trip) reproduce its bytes exactly."""

from __future__ import annotations

from google.protobuf.internal.decoder import _DecodeVarint32

from chakra_core.io._etio import EtReader, write_et
from chakra_core.io._jsonform import read_json, write_json
from chakra_core.io._proto import et_def_pb2 as pb
from chakra_core.trace._attrs import attr_value, get_int, get_str


def _plain_parse(data: bytes):
    pos = 0
    msgs = []
    while pos < len(data):
        ln, pos = _DecodeVarint32(data, pos)
        msgs.append(data[pos:pos + ln])
        pos += ln
    return pb.GlobalMetadata.FromString(msgs[0]), [pb.Node.FromString(m) for m in msgs[1:]]


def test_plain_protobuf_parse_gives_expected_values(golden_path):
    meta, nodes = _plain_parse(golden_path.read_bytes())
    assert meta.version == "0.0.4"
    assert [(a.name, a.WhichOneof("value")) for a in meta.attr] == [("schema", "string_val"), ("pid", "uint64_val")]
    assert [n.id for n in nodes] == list(range(1, 10))
    assert [n.type for n in nodes] == [1, 4, 2, 3, 4 + 1, 6, 7, 4, 0]
    comp = nodes[1]
    assert (comp.name, comp.duration_micros, comp.start_time_micros) == ("aten::mm", 15, 100)
    assert list(comp.ctrl_deps) == [1] and list(nodes[3].data_deps) == [3] and list(nodes[3].ctrl_deps) == [2]
    assert comp.inputs.values == "[[5, 6, 0, 1, 4, 'cpu']]"
    slots = {a.name: a.WhichOneof("value") for a in comp.attr}
    assert slots["is_cpu_op"] == "bool_val" and slots["num_ops"] == "int64_val"
    assert slots["tensor_size"] == "uint64_val"
    send, recv, coll = nodes[4], nodes[5], nodes[6]
    assert (get_int(send, "comm_dst"), get_int(send, "comm_tag"), get_int(send, "comm_size")) == (1, 3, 1024)
    assert {a.name: a.WhichOneof("value") for a in send.attr}["comm_dst"] == "int32_val"
    assert (get_int(recv, "comm_src"), get_int(recv, "comm_tag")) == (1, 4)
    assert get_int(coll, "comm_type") == pb.ALL_REDUCE and get_int(coll, "comm_size") == 1 << 20
    assert get_str(coll, "pg_name") == "0"
    kinds = {a.name[2:]: attr_value(a) for a in nodes[7].attr}
    assert len(kinds) == 30
    assert kinds["uint64_val"] == ("uint64_val", 1 << 63)
    assert kinds["sint64_list"] == ("sint64_list", [-(1 << 50), 7])
    assert kinds["string_list"] == ("string_list", ["a", "", "ü"])
    assert kinds["bytes_val"] == ("bytes_val", b"\x00\xffraw")
    assert kinds["float_list"] == ("float_list", [0.25, 4.0])


def test_our_reader_agrees_with_plain_parse(golden_path):
    meta, nodes = _plain_parse(golden_path.read_bytes())
    r = EtReader(golden_path)
    assert r.metadata == meta
    assert list(r) == nodes


def test_writer_reproduces_bytes(golden_path, tmp_path):
    meta, nodes = _plain_parse(golden_path.read_bytes())
    out = tmp_path / "copy.0.et"
    assert write_et(out, meta, nodes) == 9
    assert out.read_bytes() == golden_path.read_bytes()


def test_json_round_trip_is_byte_identical(golden_path, tmp_path):
    r = EtReader(golden_path)
    for name in ("g.json", "g.jsonl"):
        js = tmp_path / name
        write_json(js, r.metadata, r, rank=0)
        meta, it, rank = read_json(js)
        back = tmp_path / (name + ".0.et")
        write_et(back, meta, it)
        assert rank == 0
        assert back.read_bytes() == golden_path.read_bytes(), name


def test_json_is_valid_json(golden_path, tmp_path):
    import json

    r = EtReader(golden_path)
    js = tmp_path / "g.json"
    write_json(js, r.metadata, r)
    doc = json.loads(js.read_text())
    assert len(doc["nodes"]) == 9 and doc["metadata"]["version"] == "0.0.4"
    jl = tmp_path / "g.jsonl"
    write_json(jl, r.metadata, r)
    assert [json.loads(line) for line in jl.read_text().splitlines()][1]["id"] == "1"
