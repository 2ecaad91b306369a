"""A network with a free dimension (``npus_count: auto``) fits any trace set; a network that
does not fit names both counts and the fix; a default network is said in the result."""

from __future__ import annotations

from pathlib import Path

import pytest

from chakra_core import simulate
from chakra_core.base._errors import ConfigError
from chakra_core.system import Dimension, load_system

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples" / "system"
DDP = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp"


def test_a_free_dimension_is_sized_to_the_set():
    sd = load_system(EX / "any_size.yaml")
    assert sd.free_dimension == 0 and sd.npus == 0
    for npus in (2, 16, 1024):
        assert sd.fit(npus).dimensions == (Dimension("Ring", npus, 50.0, 500.0),)


def test_a_free_outer_dimension_multiplies_the_fixed_ones():
    sd = load_system({"network": [{"topology": "FullyConnected", "npus_count": 8, "bandwidth": 150, "latency": 100},
                                  {"topology": "Switch", "npus": "auto", "bandwidth": 25, "latency": 1000}]})
    assert [d.npus_count for d in sd.fit(32).dimensions] == [8, 4]
    with pytest.raises(ConfigError, match="fixed dimensions have 8 NPUs, which does not divide the trace set's 2 ranks"):
        sd.fit(2)


def test_one_free_dimension_at_most_and_round_trip():
    auto = {"topology": "Ring", "npus_count": "auto", "bandwidth": 50, "latency": 500}
    with pytest.raises(ConfigError, match=r"network\[1\].*only one dimension"):
        load_system({"network": [auto, auto]})
    sd = load_system(EX / "any_size.yaml")
    assert sd.to_dict()["network"][0]["npus_count"] == "auto"
    assert load_system(sd.to_dict()).dimensions == sd.dimensions


def test_one_bundled_system_serves_sets_of_any_size(tmp_path):
    result = simulate(DDP, system=str(EX / "any_size.yaml"))
    assert [r["rank"] for r in result.ranks] == [0, 1]
    assert "network dimension 0 (Ring, npus_count: auto) sized to 2 NPUs for the trace set" in result.notes
    with pytest.raises(ConfigError) as e:
        simulate(DDP, system=str(EX / "two_nodes.yaml"))
    assert "the network has 16 NPUs but the trace set has 2 ranks: give a network of 2 NPUs, or write " \
           "'npus_count: auto'" in str(e.value)


def test_the_default_system_is_said(chakra_cli):
    status, out, err = chakra_cli("simulate", DDP)
    assert status == 0, err
    assert ("note: no network given: the default, one Ring of 2 NPUs, 50 GB/s and 500 ns per link (choose one "
            "with --system or --network, e.g. examples/system/any_size.yaml)") in out.splitlines()
    assert any(line.startswith("note: no system file given: ASTRA-sim's sample settings") for line in out.splitlines())
    status, out, err = chakra_cli("report", DDP)
    assert status == 0, err
    assert any(line.startswith("note: no network given: the default, one Ring of 2 NPUs") for line in out.splitlines())
