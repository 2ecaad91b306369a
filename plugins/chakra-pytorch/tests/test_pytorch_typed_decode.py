"""The conversion's passes read each host node and Kineto event typed (msgspec: only the keys
they use, a node's inputs/outputs as JSON text); what they keep must be what reading every
element as plain JSON (orjson) keeps, on every recorded trace and on the public ones."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import msgspec
import orjson
import pytest

from chakra_core import TraceFormatError
from chakra_pytorch import hostet, jsonitems, kineto
from chakra_pytorch.jsonitems import iter_items

DATA = Path(__file__).resolve().parent / "data"
HOSTS = sorted(DATA.glob("*/pytorch_et.*.json.gz")) + sorted((DATA / "public").glob("*/*.json.gz"))
KINETOS = sorted(DATA.glob("*/kineto.*.json.gz"))


def _plain(monkeypatch) -> None:
    """Read every batch as plain JSON (orjson), as before the typed passes."""
    monkeypatch.setattr(hostet, "_node_decoder", lambda: orjson.loads)
    monkeypatch.setattr(kineto, "_event_decoder", lambda: orjson.loads)


def _entries(m) -> list[int]:
    """An IntMap's values of the keys the recordings use (their counters stay below 2**17)."""
    return [m.get(k) for k in range(1 << 17)]


def _host_ets() -> list[Path]:
    return [p for p in HOSTS if b'"nodes"' in gzip.decompress(p.read_bytes())[:4096]]


class _CountedOrjson:
    """orjson, counting the batches read as plain JSON (the typed decoders' fall-back)."""

    JSONDecodeError = orjson.JSONDecodeError

    def __init__(self) -> None:
        self.plain = 0

    def loads(self, data):
        self.plain += 1
        return orjson.loads(data)


def _typed(monkeypatch, read, path):
    """``read(path)`` with the typed decoders, checking that no batch fell back to orjson."""
    counted = _CountedOrjson()
    monkeypatch.setattr(jsonitems, "orjson", counted)
    out = read(str(path))
    monkeypatch.setattr(jsonitems, "orjson", orjson)
    assert counted.plain == 0
    return out


@pytest.mark.parametrize("path", _host_ets(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_host_et_reads_the_same_typed(path, monkeypatch):
    typed = _typed(monkeypatch, hostet.read_host_et, path)
    _plain(monkeypatch)
    plain = hostet.read_host_et(str(path))
    assert typed.ops and [dataclasses.astuple(op) for op in typed.ops] == [dataclasses.astuple(op) for op in plain.ops]
    assert typed.groups == plain.groups and typed.pid == plain.pid
    assert _entries(typed.rf_owner) == _entries(plain.rf_owner)


@pytest.mark.parametrize("path", KINETOS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kineto_reads_the_same_typed(path, monkeypatch):
    typed = _typed(monkeypatch, kineto.read_kineto, path)
    _plain(monkeypatch)
    plain = kineto.read_kineto(str(path))
    assert typed.ops and typed.ops == plain.ops and typed.steps == plain.steps
    assert (typed.unfinished, typed.rf_events, typed.runtime_ext_is_corr, typed.runtime_ext_other) == \
           (plain.unfinished, plain.rf_events, plain.runtime_ext_is_corr, plain.runtime_ext_other)
    assert typed.gpu == plain.gpu and typed.syncs == plain.syncs and typed.stream_waits == plain.stream_waits
    assert (typed.corr_ext, typed.corr_ts, typed.corr_tid, typed.by_ext) == \
           (plain.corr_ext, plain.corr_ts, plain.corr_tid, plain.by_ext)
    assert _entries(typed.ext_rf) == _entries(plain.ext_rf) and typed.pid == plain.pid


def test_a_node_is_read_with_the_keys_the_pass_uses_and_its_inputs_as_text():
    # the MLP recording's first aten::addmm: strides and the other keys are not read; its
    # inputs are the file's JSON text of them
    path = str(DATA / "mlp" / "pytorch_et.0.json.gz")
    plain = next(n for n in iter_items(path, "nodes") if n["name"] == "aten::addmm")
    typed = next(n for n in iter_items(path, "nodes", hostet._node_decoder()) if n["name"] == "aten::addmm")
    assert set(typed) <= set(hostet.NODE_KEYS) | {"attrs", "inputs", "outputs"}
    assert isinstance(typed["inputs"], msgspec.Raw) and orjson.loads(bytes(typed["inputs"])) == plain["inputs"]
    assert "strides" in plain["inputs"]
    assert {a.name: a.value for a in typed["attrs"]} == {a["name"]: a["value"] for a in plain["attrs"]}


def _mlp_with(tmp_path, edit) -> Path:
    """The MLP recording's host ET with ``edit`` applied to its first aten::linear node."""
    host = json.loads(gzip.decompress((DATA / "mlp" / "pytorch_et.0.json.gz").read_bytes()))
    edit(next(n for n in host["nodes"] if n["name"] == "aten::linear"))
    p = tmp_path / "pytorch_et.0.json"
    p.write_text(json.dumps(host, indent=2))
    return p


@pytest.mark.parametrize("value", [1 << 64, -(1 << 63) - 1, 1 << 70, [3, 1 << 64], {"a": 1 << 70}, [[1 << 64]]])
def test_an_integer_outside_64_bits_reads_as_orjson_reads_it(tmp_path, value):
    # msgspec reads it exactly where orjson reads a float (or refuses it), also inside a list or
    # an object: such a batch is read by orjson, so the conversion keeps what it kept before
    def edit(node):
        next(a for a in node["attrs"] if a["name"] == "tid")["value"] = value
    p = _mlp_with(tmp_path, edit)
    typed = next(n for n in iter_items(str(p), "nodes", hostet._node_decoder()) if n["name"] == "aten::linear")
    plain = next(n for n in iter_items(str(p), "nodes") if n["name"] == "aten::linear")
    got = next(a for a in typed["attrs"] if a["name"] == "tid")["value"]
    want = next(a for a in plain["attrs"] if a["name"] == "tid")["value"]
    assert repr(got) == repr(want) and isinstance(want, (float, list, dict))


def test_text_that_is_not_utf8_in_a_key_the_pass_skips_is_refused(tmp_path):
    # msgspec checks only the syntax of what it skips: the batch goes to orjson, which refuses
    # it, and the file is refused as before (ijson names the place)
    p = _mlp_with(tmp_path, lambda node: node.update(extra="DEAD"))
    p.write_bytes(p.read_bytes().replace(b'"DEAD"', b'"\xff"', 1))
    with pytest.raises(TraceFormatError) as e:
        hostet.read_host_et(str(p))
    assert "invalid bytes in UTF8" in e.value.message and e.value.location.startswith("after node")
