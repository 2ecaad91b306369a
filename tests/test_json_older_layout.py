"""Input from the 2023 MLCommons ``et_jsonizer``: node objects one after another, no GlobalMetadata.

Until 2023-11-22 (chakra ``b5c04ef``) the jsonizer wrote ``MessageToJson(node)`` for every
message of the ``.et`` file, one object after another, and no GlobalMetadata object.  The files
in ``tests/data/jsonizer_2023`` were made by that jsonizer and the text converter of the same
commit (see the README there); the tests read them against the ``.et`` files they came from.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToJson

from chakra_core import EtReader, TraceFormatError, convert, jsonize, read_json
from chakra_core.builtin.formats import chakra_detect_format
from chakra_core.io._jsonsniff import sniff_json
from chakra_core.io._schema import GlobalMetadata, Node
from chakra_core.io._varint import decode_varint

DATA = Path(__file__).parent / "data" / "jsonizer_2023"
RANKS = 2


def _frames(data: bytes) -> list[bytes]:
    """The messages of length-prefixed protobuf ``data``, in order."""
    out, pos = [], 0
    while pos < len(data):
        size, pos = decode_varint(data, pos)
        out.append(data[pos:pos + size])
        pos += size
    return out


def _their_nodes(rank: int) -> list[Node]:
    """The nodes of the 2023 text converter's ``.et`` (node messages only, no GlobalMetadata)."""
    return [Node.FromString(m) for m in _frames((DATA / f"all_reduce.{rank}.et").read_bytes())]


def _json_set(tmp_path: Path) -> Path:
    """A folder holding the jsonizer's files alone."""
    folder = tmp_path / "theirs"
    folder.mkdir()
    for r in range(RANKS):
        shutil.copy(DATA / f"all_reduce.{r}.json", folder)
    return folder


@pytest.mark.parametrize("rank", range(RANKS))
def test_files_read_as_the_et_they_came_from(rank):
    path = DATA / f"all_reduce.{rank}.json"
    assert path.read_text().startswith('{\n  "name"' if rank == 0 else '{\n  "id": "19"')  # node 0 has no id
    meta, nodes, file_rank = read_json(path)
    assert meta == GlobalMetadata() and file_rank is None
    assert list(nodes) == _their_nodes(rank)


def test_set_is_detected_and_round_trips(tmp_path):
    folder = _json_set(tmp_path)
    assert chakra_detect_format([str(folder)]) == "json"
    convert(str(folder), tmp_path / "back")
    for r in range(RANKS):
        ours = _frames((tmp_path / f"back.{r}.et").read_bytes())
        assert GlobalMetadata.FromString(ours[0]) == GlobalMetadata()
        assert ours[1:] == _frames((DATA / f"all_reduce.{r}.et").read_bytes())  # the same node bytes
    jsonize(str(tmp_path / "back"), f"{tmp_path}/js/")
    for r in range(RANKS):
        assert list(read_json(tmp_path / "js" / f"trace.{r}.json")[1]) == _their_nodes(r)


def test_golden_trace_as_nodes_only(golden_path, tmp_path):
    # every node type and attribute kind, written as that jsonizer writes a file without metadata
    reader = EtReader(golden_path)
    nodes_only = tmp_path / "g.json"
    nodes_only.write_text("".join(MessageToJson(n) for n in reader), encoding="utf-8")
    assert sniff_json(nodes_only)
    convert(str(nodes_only), tmp_path / "back")
    assert _frames((tmp_path / "back.0.et").read_bytes())[1:] == _frames(golden_path.read_bytes())[1:]


def test_truncated_file_names_the_line(tmp_path):
    full = (DATA / "all_reduce.1.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(full[: len(full) * 2 // 3])
    meta, nodes, _ = read_json(cut)
    with pytest.raises(TraceFormatError, match=r"cut\.json.*line \d+: malformed JSON") as err:
        list(nodes)
    assert "\n" not in str(err.value)


def test_older_schema_is_refused_in_one_line():
    # the jsonizer's first version, on the proto2 schema 0.0.3 ("attribute", typed values)
    with pytest.raises(TraceFormatError, match=r"schema_0\.0\.3\.0\.json.*line 1: not a Chakra Node.*attribute") as err:
        list(read_json(DATA / "schema_0.0.3.0.json")[1])
    assert "\n" not in str(err.value)


def test_only_indented_node_objects_are_taken_for_the_layout(tmp_path):
    lines = tmp_path / "nodes.jsonl"  # JSON Lines of our nodes without a header: streamed as lines
    lines.write_text('{"id": "1", "name": "a", "type": "COMP_NODE"}\n{"id": "2", "name": "b"}\n')
    assert not sniff_json(lines)
    assert [n.id for n in read_json(lines)[1]] == [1, 2]
    other = tmp_path / "event.json"  # a pretty-printed object with a numeric id is not a node
    other.write_text('{\n  "id": "12",\n  "eventType": "deploy"\n}\n')
    assert not sniff_json(other)
