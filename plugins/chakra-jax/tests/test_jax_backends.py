"""Every recorded program converts (with its profile) to a set that validates across devices,
simulates with the SimPy backend and exports to ASTRA-sim; written files read back unchanged."""

from __future__ import annotations

import json

import pytest

from chakra_core import export, open_traceset, simulate, validate


@pytest.mark.parametrize("name, devices", [("mlp", 4), ("shard_map", 4), ("scan", 4), ("mesh8", 8)])
def test_convert_validate_simulate_export(jax_convert, tmp_path, name, devices):
    ts = jax_convert(name, "profile.xplane.pb")
    assert validate(ts) == []
    ts.write(tmp_path / "et")
    back = open_traceset(tmp_path / "et")
    assert back.ranks == list(range(devices))
    assert back.process_groups == ts.process_groups
    assert list(back[devices - 1].nodes()) == list(ts[devices - 1].nodes())
    result = simulate(str(tmp_path / "et"), "simpy")
    assert result.summary["finish_ns"] > 0
    exported = export(str(tmp_path / "et"), "astrasim", tmp_path / "astra")
    assert exported.files
    workload = sorted((tmp_path / "astra" / "workload").glob("*.et"))
    assert len(workload) == devices
    if any(len(v) < devices for v in ts.process_groups.values()):
        groups = json.loads((tmp_path / "astra" / "groups.json").read_text())
        assert sorted(groups.values()) == sorted(v for v in ts.process_groups.values() if len(v) < devices)
