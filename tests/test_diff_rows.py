"""``chakra diff`` of a run written with its spans against the same run written without them."""

from __future__ import annotations

import json
from pathlib import Path

import chakra_core as chakra

DDP = Path(__file__).resolve().parents[1] / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp"


def test_one_run_with_and_without_spans_differs_in_nothing_it_compares(tmp_path, chakra_cli):
    # the spans side counted every member of a collective, the rows side each collective once:
    # the same run differed by half its communication bytes and time
    chakra.simulate(str(DDP), options={"spans": True}, output=tmp_path / "a")
    chakra.simulate(str(DDP), output=tmp_path / "b")
    code, out, err = chakra_cli("diff", tmp_path / "a" / "result.json", tmp_path / "b" / "result.json", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert not any(k.startswith("communication.") for k in d["metrics"])
    assert any("communication totals not compared" in n for n in d["notes"])
    changed = {k: m for k, m in d["metrics"].items() if m["delta"]}
    assert not changed, changed
    code, out, err = chakra_cli("diff", tmp_path / "b" / "result.json", tmp_path / "b" / "result.json", "--json")
    both_rows = json.loads(out)["metrics"]
    assert both_rows["communication.bytes"]["delta"] == 0 and both_rows["communication.bytes"]["a"] > 0
