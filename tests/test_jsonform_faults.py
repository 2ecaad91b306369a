"""The JSON form at its edges: outputs that are not regular files, fields of a newer schema in
every message, the current ``chakra_jsonizer`` list (plain and gzip), odd but valid layouts,
and headers and node types that must be refused.

Round trips go through the wire format: the ``.et`` bytes converted back must be the ones we
started from.  Fields of a newer schema are a hand-made fixture (no framework here writes a newer
schema): protobuf messages given unknown fields with ``MergeFromString``, then serialized by
protobuf itself (``write_et``), as tests/test_forward_compat.py does.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
import threading
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict

from chakra_core import (
    AttributeProto,
    EtReader,
    GlobalMetadata,
    Node,
    NodeType,
    TraceFormatError,
    convert,
    jsonize,
    load_traces,
    make_attr,
    open_traceset,
    read_json,
    write_et,
)
from chakra_core.builtin.formats import chakra_detect_format

RECORDED = Path(__file__).resolve().parents[1] / "plugins" / "chakra-pytorch" / "tests" / "data"
#: field 40 of a message, a varint 5 (tag 40<<3|0 = 0xc0 0x02): a field of a newer schema
NEW_VARINT = bytes([0xC0, 0x02, 0x05])
#: field 41, the bytes b"ab" (tag 41<<3|2 = 0xca 0x02)
NEW_BYTES = bytes([0xCA, 0x02, 0x02, 0x61, 0x62])
_HEADER = '{"format": "chakra-et-json", "version": 1, "rank": 0, "metadata": {}, "nodes": ['


def _with_new(msg, extra: bytes = NEW_VARINT):
    msg.MergeFromString(extra)
    return msg


def _newer_trace(path: Path) -> Path:
    """A trace whose metadata attribute, IOInfo and list values hold fields of a newer schema."""
    meta = GlobalMetadata(version="0.0.4")
    meta.attr.append(_with_new(AttributeProto(name="future")))
    listed = AttributeProto(name="sizes")
    listed.int64_list.values.extend([3, -4])
    _with_new(listed.int64_list, NEW_BYTES)
    meta.attr.append(listed)
    n = Node(id=1, name="mm", type=NodeType.COMP_NODE, duration_micros=5)
    n.inputs.values = "[[1,2]]"
    _with_new(n.inputs)
    _with_new(n.outputs, NEW_BYTES)  # outputs holding nothing but a newer field
    a = make_attr("is_cpu_op", True)
    n.attr.append(a)
    strings = AttributeProto(name="names")
    strings.string_list.values.append("x")
    n.attr.append(_with_new(strings))
    _with_new(n.attr.add(name="empty").double_list)
    write_et(path, meta, [n, Node(id=2, name="next", type=NodeType.COMP_NODE, ctrl_deps=[1])])
    return path


def _back(json_path: Path, tmp_path: Path, name: str = "back") -> bytes:
    convert(str(json_path), tmp_path / name)
    return (tmp_path / f"{name}.0.et").read_bytes()


# -- outputs that are not regular files ---------------------------------------------------------

def test_jsonize_writes_into_a_fifo(golden_path, tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    jsonize(str(golden_path), fifo)
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not replaced by a regular file
    (tmp_path / "read.json").write_bytes(got[0])
    assert _back(tmp_path / "read.json", tmp_path) == golden_path.read_bytes()


def test_jsonize_keeps_a_symlink_and_replaces_its_target(golden_path, tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target.name)
    jsonize(str(golden_path), link)
    assert link.is_symlink() and os.readlink(link) == target.name
    assert _back(target, tmp_path) == golden_path.read_bytes()


def test_a_gz_output_name_is_refused(golden_path, tmp_path, chakra_cli):
    # a .gz name holding plain text would be misread by every tool that trusts the name
    status, out, err = chakra_cli("jsonize", golden_path, "-o", tmp_path / "g.json.gz")
    assert status == 2 and "g.json.gz" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


# -- fields of a newer schema -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["t.json", "t.jsonl"])
def test_newer_fields_everywhere_round_trip(tmp_path, name):
    et = _newer_trace(tmp_path / "new.et")
    jsonize(str(et), tmp_path / name)
    assert (tmp_path / name).read_text().count('"unknown_fields"') == 6
    assert _back(tmp_path / name, tmp_path) == et.read_bytes()


def test_newer_fields_round_trip_through_protobufs_parser(tmp_path):
    # integers written as 1.0 are valid protobuf JSON that the fast decoder leaves to ParseDict:
    # the fields of a newer schema must come back that way too, in the metadata and in a node
    et = _newer_trace(tmp_path / "new.et")
    jsonize(str(et), tmp_path / "t.json")
    text = (tmp_path / "t.json").read_text()
    assert '"values": ["3", "-4"]' in text and '{"id": "1",' in text
    text = text.replace('"values": ["3", "-4"]', '"values": [3.0, -4.0]').replace('{"id": "1",', '{"id": 1.0,')
    (tmp_path / "slow.json").write_text(text)
    meta, nodes, _ = read_json(tmp_path / "slow.json")
    assert [n.id for n in nodes] == [1, 2]
    assert _back(tmp_path / "slow.json", tmp_path) == et.read_bytes()


def test_metadata_with_newer_fields_through_the_parsers_fallback(tmp_path):
    # a metadata attribute with a value the fast decoder leaves to ParseDict ("7" as a float)
    et = tmp_path / "m.et"
    meta = GlobalMetadata(version="1")
    meta.attr.append(_with_new(AttributeProto(name="future")))
    meta.attr.append(make_attr("num", 7))
    write_et(et, meta, [Node(id=1, name="x", type=NodeType.COMP_NODE)])
    jsonize(str(et), tmp_path / "m.json")
    text = (tmp_path / "m.json").read_text()
    assert '"int64_val": "7"' in text
    (tmp_path / "f.json").write_text(text.replace('"int64_val": "7"', '"int64_val": 7.0'))
    assert _back(tmp_path / "f.json", tmp_path) == et.read_bytes()


# -- process groups -----------------------------------------------------------------------------

def test_jsonize_says_when_it_adds_the_process_groups(tmp_path):
    pytest.importorskip("chakra_pytorch")
    convert(str(RECORDED / "collectives"), tmp_path / "conv")
    original = open_traceset(str(tmp_path / "conv"))
    groups = original.process_groups
    assert groups == {"1": [0, 1]}  # from PyTorch's ## process_group:init ## node
    for r in (0, 1):  # the set as the MLCommons converter writes it: no attribute, only the node
        reader = EtReader(tmp_path / f"conv.{r}.et")
        meta = GlobalMetadata()
        meta.CopyFrom(reader.metadata)
        keep = [a for a in meta.attr if a.name != "process_groups"]
        del meta.attr[:]
        meta.attr.extend(keep)
        write_et(tmp_path / f"bare.{r}.et", meta, list(reader))
    result = jsonize(str(tmp_path / "bare"), f"{tmp_path}/js/")
    assert len(result.notes) == 1 and "0, 1" in result.notes[0] and "process_groups" in result.notes[0]
    assert load_traces(str(tmp_path / "js")).process_groups == groups
    again = jsonize(str(tmp_path / "conv"), f"{tmp_path}/js2/")  # the attribute already there
    assert again.notes == []


# -- the current chakra_jsonizer: one JSON list, gzip when named .gz ---------------------------------

def _as_list_jsonizer(ours: Path) -> bytes:
    """What the current chakra_jsonizer writes for the rank in our JSON form ``ours``:
    ``MessageToDict`` of each message in one list, by orjson with two-space indentation."""
    orjson = pytest.importorskip("orjson")
    meta, nodes, _ = read_json(ours)
    return orjson.dumps([MessageToDict(meta)] + [MessageToDict(n) for n in nodes], option=orjson.OPT_INDENT_2)


@pytest.mark.parametrize("gz", [False, True])
def test_jsonizer_list_round_trips(golden_path, tmp_path, gz):
    jsonize(str(golden_path), tmp_path / "ours.json")
    data = _as_list_jsonizer(tmp_path / "ours.json")
    assert data.startswith(b"[\n  {") and b'"durationMicros"' in data
    (tmp_path / "theirs").mkdir()
    name = tmp_path / "theirs" / ("trace.0.json.gz" if gz else "trace.0.json")
    name.write_bytes(gzip.compress(data) if gz else data)
    assert chakra_detect_format([str(tmp_path / "theirs")]) == "json"
    assert _back(tmp_path / "theirs", tmp_path) == golden_path.read_bytes()


def test_jsonizer_list_on_one_line_is_loaded_whole(golden_path, tmp_path):
    jsonize(str(golden_path), tmp_path / "ours.json")
    meta, nodes, _ = read_json(tmp_path / "ours.json")
    one = tmp_path / "one.json"
    one.write_text(json.dumps([MessageToDict(meta)] + [MessageToDict(n) for n in nodes]))
    assert _back(one, tmp_path) == golden_path.read_bytes()


def test_truncated_jsonizer_list_names_the_line(golden_path, tmp_path):
    jsonize(str(golden_path), tmp_path / "ours.json")
    data = _as_list_jsonizer(tmp_path / "ours.json")
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) * 2 // 3])
    meta, nodes, rank = read_json(cut)
    assert meta.version == "0.0.4" and rank is None
    with pytest.raises(TraceFormatError, match=r"cut\.json:line \d+"):
        list(nodes)


# -- layouts and headers -------------------------------------------------------------------------

def test_several_nodes_on_a_line_after_the_streaming_header(golden_path, tmp_path):
    jsonize(str(golden_path), tmp_path / "g.json")
    lines = (tmp_path / "g.json").read_text().splitlines()
    nodes = lines[1:-1]
    joined = [" ".join(nodes[i:i + 2]) for i in range(0, len(nodes), 2)]
    text = "\n".join([lines[0], *joined, lines[-1]]) + "\n"
    json.loads(text)  # still one valid JSON document
    (tmp_path / "two.json").write_text(text)
    assert _back(tmp_path / "two.json", tmp_path) == golden_path.read_bytes()


@pytest.mark.parametrize("node", ['{"id": "1", "type": 4294967300}', '{"id": 1.0, "type": 4294967300}',
                                  '{"id": "1", "type": -2147483649}'])
def test_node_type_past_int32_is_refused(tmp_path, chakra_cli, node):
    p = tmp_path / "n.json"
    p.write_text(_HEADER + "\n" + node + "\n]}\n")
    with pytest.raises(TraceFormatError, match=r"n\.json:line 2: .*node type -?\d+ is out of the range"):
        list(read_json(p)[1])
    status, _, err = chakra_cli("validate", p)
    assert status == 2 and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("header, words", [
    ('"format": "other-json", "version": 1', '"format" is "other-json"'),
    ('"format": "chakra-et-json", "version": "1"', 'version "1" (a string)'),
    ('"format": "chakra-et-json", "version": true', "version true (a boolean)"),
])
def test_bad_headers_are_refused(tmp_path, header, words):
    for name, text in (("s.json", "{" + header + ', "metadata": {}, "nodes": [\n]}\n'),
                       ("w.json", "{" + header + ', "metadata": {}, "nodes": []}'),
                       ("l.jsonl", "{" + header + ', "metadata": {}}\n')):
        if name == "l.jsonl" and "other-json" in header:
            continue  # a line 1 without our tag is a node of header-less JSON Lines
        (tmp_path / name).write_text(text)
        with pytest.raises(TraceFormatError, match=re.escape(words)):
            list(read_json(tmp_path / name)[1])
