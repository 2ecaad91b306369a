"""Array streaming: the fast cut on PyTorch's layout and the ijson path give the same items."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import ijson
import pytest

from chakra_pytorch import jsonitems
from chakra_pytorch.jsonitems import iter_items

DATA = Path(__file__).resolve().parent / "data"


def _ijson(path: Path, key: str) -> list:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        return list(ijson.items(f, f"{key}.item", use_float=True))


@pytest.mark.parametrize("path, key", [
    (DATA / "transformer" / "pytorch_et.0.json.gz", "nodes"),
    (DATA / "transformer" / "kineto.0.json.gz", "traceEvents"),
    (DATA / "nccl" / "pytorch_et.0.json", "nodes"),  # one element per line: the ijson path
    (DATA / "nccl" / "kineto.0.json", "traceEvents"),
])
def test_same_items_as_ijson(path, key):
    assert list(iter_items(str(path), key)) == _ijson(path, key)


def test_recorded_files_take_the_fast_way(monkeypatch):
    path = DATA / "mlp" / "pytorch_et.0.json.gz"
    expect = _ijson(path, "nodes")

    def no_ijson(*a, **k):
        raise AssertionError("ijson used")
    monkeypatch.setattr(jsonitems.ijson, "items", no_ijson)
    assert list(iter_items(str(path), "nodes")) == expect


def _pretty(items: list, key: str) -> str:
    body = ",\n".join("  " + json.dumps(i, indent=2).replace("\n", "\n  ") for i in items)
    return '{\n "a": 1, "' + key + '": [\n' + body + '\n ],\n "b": 2\n}\n'


def test_layout_change_midway_hands_over_without_repeating(tmp_path):
    items = [{"id": i, "v": [i, {"x": "s}"}]} for i in range(5)]
    text = _pretty(items[:3], "nodes")
    # the last two elements written on one line each: the cut no longer matches
    text = text.replace("\n ],", ",\n" + ",\n".join("  " + json.dumps(i) for i in items[3:]) + "\n ],")
    p = tmp_path / "mixed.json"
    p.write_text(text)
    assert json.loads(text)["nodes"] == items
    assert list(iter_items(str(p), "nodes")) == items


def test_compact_lines_go_straight_to_ijson(tmp_path, monkeypatch):
    items = [{"id": i} for i in range(3)]
    p = tmp_path / "compact.json"
    p.write_text('{\n  "nodes": [\n' + ",\n".join("    " + json.dumps(i) for i in items) + "\n  ]\n}\n")
    reads = []
    real = jsonitems._Buffer._more

    def counting(self):
        reads.append(1)
        return real(self)
    monkeypatch.setattr(jsonitems._Buffer, "_more", counting)
    assert list(iter_items(str(p), "nodes")) == items
    assert reads == []  # the layout was refused at the first element, nothing read ahead


def test_empty_array_and_missing_key(tmp_path):
    p = tmp_path / "e.json"
    p.write_text('{\n  "nodes": [\n  ],\n  "x": 1\n}\n')
    assert list(iter_items(str(p), "nodes")) == []
    p.write_text('{"other": []}')
    assert list(iter_items(str(p), "nodes")) == []


def test_truncated_file_is_an_ijson_error(tmp_path):
    raw = gzip.open(DATA / "mlp" / "pytorch_et.0.json.gz").read()
    p = tmp_path / "cut.json"
    p.write_bytes(raw[: len(raw) * 2 // 3])
    with pytest.raises(ijson.JSONError):
        list(iter_items(str(p), "nodes"))
    p.write_bytes(raw[:-3])  # only the closing of the top-level object is missing
    with pytest.raises(ijson.JSONError):
        list(iter_items(str(p), "nodes"))
