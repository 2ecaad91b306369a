"""The host ET pass on nodes off its usual path: parents numbered after their children, a cycle
of ctrl_deps, an attribute whose name is not a string.  The inputs are the recorded MLP host ET
(``tests/data/mlp``) with fields changed by hand."""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
from pathlib import Path

import orjson
import pytest

from chakra_core import TraceFormatError
from chakra_pytorch import hostet

MLP_ET = Path(__file__).resolve().parent / "data" / "mlp" / "pytorch_et.0.json.gz"


def _mlp() -> dict:
    return json.loads(gzip.decompress(MLP_ET.read_bytes()))


def _write(tmp_path: Path, host: dict) -> str:
    p = tmp_path / "pytorch_et.0.json"
    p.write_text(json.dumps(host, indent=2))
    return str(p)


def _by_rf(trace: hostet.HostTrace) -> list[tuple]:
    """The selected ops as read, each named by its rf_id (and its selected parent by that one's)."""
    rf = {op.id: op.rf_id for op in trace.ops}
    return sorted((op.rf_id, op.name, op.keep, op.io, rf.get(op.parent_sel)) for op in trace.ops)


def test_parents_numbered_after_their_children_convert_alike(tmp_path):
    # ids shuffled: most parents now come after their children in id order as well as in the file
    host = _mlp()
    want = hostet.read_host_et(_write(tmp_path, host))
    ids = [n["id"] for n in host["nodes"]]
    shuffled = dict(zip(ids, random.Random(7).sample(ids, len(ids))))
    for n in host["nodes"]:
        n["id"], n["ctrl_deps"] = shuffled[n["id"]], shuffled.get(n["ctrl_deps"], n["ctrl_deps"])
    got = hostet.read_host_et(_write(tmp_path, host))
    assert len(got.ops) > 10 and _by_rf(got) == _by_rf(want)
    owner_rf = {op.id: op.rf_id for op in got.ops}
    want_rf = {op.id: op.rf_id for op in want.ops}
    assert {r: owner_rf[got.rf_owner.get(r)] for r in range(1, 200) if got.rf_owner.get(r) >= 0} == \
           {r: want_rf[want.rf_owner.get(r)] for r in range(1, 200) if want.rf_owner.get(r) >= 0}


def test_a_cycle_of_ctrl_deps_names_a_node_on_it(tmp_path):
    host = _mlp()
    a, b = [n for n in host["nodes"] if n["name"].startswith("aten::") and n["id"] > 2][:2]
    a["ctrl_deps"], b["ctrl_deps"] = b["id"], a["id"]
    with pytest.raises(TraceFormatError) as e:
        hostet.read_host_et(_write(tmp_path, host))
    named = int(e.value.location.removeprefix("node id "))
    assert named in (a["id"], b["id"]) and e.value.message == f"the ctrl_deps of node {named} form a cycle"


def test_an_attribute_name_that_is_not_a_string_reads_as_plain_json(tmp_path, monkeypatch):
    # the typed pass reads names as strings: that batch is read by orjson instead, and the
    # pass keeps what it keeps reading every node as plain JSON
    host = _mlp()
    next(n for n in host["nodes"] if n["name"] == "aten::linear")["attrs"][2]["name"] = 5
    path = _write(tmp_path, host)
    typed = hostet.read_host_et(path)
    monkeypatch.setattr(hostet, "_node_decoder", lambda: orjson.loads)
    plain = hostet.read_host_et(path)
    assert typed.ops and [dataclasses.astuple(op) for op in typed.ops] == [dataclasses.astuple(op) for op in plain.ops]


def test_an_attribute_name_that_is_a_list_names_the_node(tmp_path):
    host = _mlp()
    index = next(i for i, n in enumerate(host["nodes"]) if n["name"] == "aten::linear")
    host["nodes"][index]["attrs"][2]["name"] = [1]
    with pytest.raises(TraceFormatError) as e:
        hostet.read_host_et(_write(tmp_path, host))
    assert e.value.location == f"node {index}" and e.value.message == "'attrs' must be a list of {name, type, value}"
