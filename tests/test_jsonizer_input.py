"""Input from the MLCommons ``chakra_jsonizer``: concatenated objects, protobuf's JSON mapping.

chakra_jsonizer writes ``MessageToJson(GlobalMetadata)`` and then ``MessageToJson(node)`` for
every node, one after another with nothing between them.  The tests re-encode a set written by
our ``jsonize`` that way (with protobuf's own ``MessageToJson``, as the tool does) and convert it
back: the ``.et`` files must be byte-identical to the ones we started from.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToJson

from chakra_core import TraceFormatError, convert, jsonize, read_json
from chakra_core.builtin.formats import chakra_detect_format

RECORDED = Path(__file__).resolve().parents[1] / "plugins" / "chakra-pytorch" / "tests" / "data"


def _as_jsonizer(ours: Path, out: Path) -> Path:
    """The file chakra_jsonizer would write for the rank in our JSON form ``ours``."""
    meta, nodes, _ = read_json(ours)
    out.write_text(MessageToJson(meta) + "".join(MessageToJson(n) for n in nodes), encoding="utf-8")
    return out


def _round_trip(et_set: Path, tmp_path: Path, ranks: int) -> None:
    """``et_set`` (a set written by ``convert``) -> our jsonize -> chakra_jsonizer's form ->
    convert: the same bytes."""
    jsonize(str(et_set), f"{tmp_path}/ours/")
    (tmp_path / "theirs").mkdir()
    for r in range(ranks):
        _as_jsonizer(tmp_path / "ours" / f"trace.{r}.json", tmp_path / "theirs" / f"trace.{r}.json")
    assert chakra_detect_format([str(tmp_path / "theirs")]) == "json"
    convert(str(tmp_path / "theirs"), tmp_path / "back")
    for r in range(ranks):
        assert (tmp_path / f"back.{r}.et").read_bytes() == Path(f"{et_set}.{r}.et").read_bytes(), r


def test_golden_trace_round_trips_through_jsonizer_form(golden_path, tmp_path):
    # every node type and every attribute kind (tests/data/make_golden.py)
    convert(str(golden_path), tmp_path / "g")
    _round_trip(tmp_path / "g", tmp_path, 1)
    text = (tmp_path / "theirs" / "trace.0.json").read_text()
    assert "}{" in text and '"durationMicros"' in text  # the jsonizer layout, camelCase names


def test_recorded_pytorch_set_round_trips_through_jsonizer_form(tmp_path):
    pytest.importorskip("chakra_pytorch")
    convert(str(RECORDED / "collectives"), tmp_path / "coll")
    _round_trip(tmp_path / "coll", tmp_path, 2)


def test_compact_objects_on_one_line(golden_path, tmp_path):
    convert(str(golden_path), tmp_path / "g")
    jsonize(str(tmp_path / "g.0.et"), tmp_path / "g.json")
    meta, nodes, _ = read_json(tmp_path / "g.json")
    one_line = tmp_path / "one.json"
    one_line.write_text(MessageToJson(meta, indent=None) + "".join(MessageToJson(n, indent=None) for n in nodes))
    convert(str(one_line), tmp_path / "back")
    assert (tmp_path / "back.0.et").read_bytes() == (tmp_path / "g.0.et").read_bytes()


def test_truncated_jsonizer_file_names_the_line(golden_path, tmp_path):
    shutil.copy(golden_path, tmp_path / "g.0.et")
    jsonize(str(tmp_path / "g.0.et"), tmp_path / "g.json")
    full = _as_jsonizer(tmp_path / "g.json", tmp_path / "full.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(full[: len(full) * 2 // 3])
    meta, nodes, rank = read_json(cut)
    assert meta.version == "0.0.4" and rank is None
    with pytest.raises(TraceFormatError, match=r"cut\.json.*line \d+"):
        list(nodes)
