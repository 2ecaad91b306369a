"""An MoE layer's uneven all-to-alls, recorded on 4 gloo ranks (chakra-pytorch's ``moe`` fixture,
``recording/record_moe.py``): refused by validation as recorded, simulated once the
``even_collectives`` transform gives each collective one size.

The expected sizes come from the split sizes the recording used (``moe_splits.json``), not from
the converter: per rank, the token counts' all-to-all (``world`` int64 values), the dispatch (its
``tokens`` rows), then the combine (the rows it received in the dispatch).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest

import chakra_core as chakra

pytest.importorskip("chakra_pytorch")
pytest.importorskip("chakra_generate")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data"
FACTS = json.loads((DATA / "moe_splits.json").read_text())
ROW = FACTS["width"] * FACTS["bytes_per_value"]
WORLD = len(FACTS["ranks"])


def _all_to_all_sizes(path: Path) -> dict[int, list[int]]:
    ts = chakra.open_traceset(str(path))
    out = {}
    for r in ts.ranks:
        out[r] = [chakra.get_attr(n, "comm_size") for n in ts[r].nodes()
                  if n.type == chakra.NodeType.COMM_COLL_NODE
                  and chakra.get_attr(n, "comm_type") == chakra.CommType.ALL_TO_ALL]
    return out


def _transform(chakra_cli, *args: str) -> tuple[int, str, list[str]]:
    """``chakra transform ARGS``: status, stderr and the warnings it gave (caught here, as pytest's
    warnings plugin would catch them before the command prints them)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status, _, err = chakra_cli("transform", *args)
    return status, err, [str(w.message) for w in caught]


def _recorded() -> dict[int, list[int]]:
    return {int(r): [WORLD * 8, sum(f["input_splits"]) * ROW, sum(f["output_splits"]) * ROW]
            for r, f in FACTS["ranks"].items()}


@pytest.fixture
def raw(tmp_path, chakra_cli):
    out = tmp_path / "raw"
    status, _, err = chakra_cli("convert", str(DATA / "moe"), "-o", f"{out}/")
    assert status == 2 and "[coll-order]" in err and "ALL_TO_ALL" in err and not out.exists()
    status, _, err = chakra_cli("convert", "--no-validate", str(DATA / "moe"), "-o", f"{out}/")
    assert status == 0, err
    return out


def test_the_converted_sizes_are_what_each_rank_sent(raw):
    combine = [sum(f["output_splits"]) for f in FACTS["ranks"].values()]
    assert len(set(combine)) > 1, "the recording's combine is not uneven"
    assert _all_to_all_sizes(raw) == _recorded()


@pytest.mark.parametrize("rule", ["max", "mean"])
def test_each_collective_gets_one_size_and_the_set_simulates(raw, tmp_path, chakra_cli, rule):
    out = tmp_path / rule
    status, err, said = _transform(chakra_cli, str(raw), "even_collectives", "-O", f"size={rule}", "-o", f"{out}/")
    assert status == 0, err
    assert any("even_collectives: 1 ALL_TO_ALL on the world had members of different sizes" in w for w in said)
    combine = [sizes[2] for sizes in _recorded().values()]
    size = max(combine) if rule == "max" else math.ceil(sum(combine) / WORLD)
    assert _all_to_all_sizes(out) == {r: s[:2] + [size] for r, s in _recorded().items()}
    status, _, err = chakra_cli("validate", str(out))
    assert status == 0, err
    for mode in ("unaware", "aware"):
        status, _, err = chakra_cli("simulate", str(out), "--system", str(ROOT / "examples/system/any_size.yaml"),
                                    "-O", f"congestion={mode}")
        assert status == 0, err


def test_even_collectives_leave_the_other_kinds_and_say_nothing(raw, tmp_path, chakra_cli):
    status, _, err = chakra_cli("transform", str(raw), "even_collectives", "-O", "kinds=all_reduce",
                                "-o", f"{tmp_path}/o/")
    assert status == 2 and "[coll-order]" in err and not (tmp_path / "o").exists()
    status, err, said = _transform(chakra_cli, "--no-validate", str(raw), "even_collectives", "-O",
                                   "kinds=all_reduce", "-o", f"{tmp_path}/o/")
    assert status == 0 and not any("even_collectives" in w for w in said), err
    assert _all_to_all_sizes(tmp_path / "o") == _recorded()
