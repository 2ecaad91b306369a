"""The ``obfuscate`` transform on the recorded every-collective set: names, bounds, validity."""

from __future__ import annotations

import json
import math

import pytest

import chakra_core as chakra
from chakra_core import ConfigError, NodeType, get_int, open_traceset
from chakra_synth.obfuscate import KEPT_NAMES


def _nodes(directory):
    return {rt.rank: {n.id: n for n in rt.nodes()} for rt in open_traceset(str(directory))}


def test_hashes_are_stable_salted_and_hide_names(recorded, tmp_path):
    src = _nodes(recorded["collectives"])
    a = chakra.transform(str(recorded["collectives"]), "obfuscate", {"salt": "s1"}, output=f"{tmp_path / 'a'}/")
    b = chakra.transform(str(recorded["collectives"]), "obfuscate", {"salt": "s1"}, output=f"{tmp_path / 'b'}/")
    c = chakra.transform(str(recorded["collectives"]), "obfuscate", {"salt": "s2"}, output=f"{tmp_path / 'c'}/")
    out_a, out_b, out_c = (_nodes(tmp_path / d) for d in "abc")
    assert out_a == out_b and out_a != out_c
    names = {n.name for r in src.values() for n in r.values()} - set(KEPT_NAMES)
    mapping = {}
    for rank, nodes in src.items():
        for nid, n in nodes.items():
            if n.name in names:
                mapping.setdefault(n.name, set()).add(out_a[rank][nid].name)
    assert all(len(v) == 1 for v in mapping.values())  # one name, one hash, on every rank
    assert len({next(iter(v)) for v in mapping.values()}) == len(names)
    files = list((tmp_path / "a").glob("*.et"))
    assert len(files) == 2
    for f in files:
        blob = f.read_bytes()
        assert not [n for n in names if n.encode() in blob]
        assert b"op_schema" not in blob and b"Tensor" not in blob
    assert chakra.validate(str(tmp_path / "a")).ok
    assert len(a) == len(b) == len(c) == 2


def test_kind_labels_and_recorded_bounds(recorded, tmp_path):
    q, p = 0.2, 0.1
    chakra.transform(str(recorded["collectives"]), "obfuscate",
                     {"names": "kind", "quantize": q, "perturb": p, "seed": 3}, output=tmp_path / "o" / "")
    src, out = _nodes(recorded["collectives"]), _nodes(tmp_path / "o")
    ts = open_traceset(str(tmp_path / "o"))
    record = json.loads(chakra.get_str(ts[0].metadata(), "obfuscation"))
    bound = record["duration_relative_error_bound"]
    assert bound == pytest.approx((math.sqrt(1 + q)) * (1 + p) - 1, abs=1e-6)
    assert record["quantize"] == q and record["perturb"] == p and record["names"] == "kind"
    for rank, nodes in src.items():
        for nid, n in nodes.items():
            o = out[rank][nid]
            assert o.name == (n.name if n.name in KEPT_NAMES else NodeType(n.type).name)
            if n.duration_micros:
                assert abs(o.duration_micros - n.duration_micros) <= bound * n.duration_micros + 1
            size = get_int(n, "comm_size")
            if size:
                assert abs(get_int(o, "comm_size") - size) <= record["size_relative_error_bound"] * size + 1
    check = chakra.validate(str(tmp_path / "o"))
    assert check.ok, [str(f) for f in check]  # equal sizes stay equal on both ranks


def test_dropped_ctrl_deps_keep_the_set_valid(recorded, tmp_path, chakra_cli):
    status, _, err = chakra_cli("transform", recorded["ddp_buckets"], "obfuscate", "-O", "drop_ctrl_deps=0.5",
                                "-o", f"{tmp_path / 'd'}/")
    assert status == 0, err
    src, out = _nodes(recorded["ddp_buckets"]), _nodes(tmp_path / "d")
    before = sum(len(n.ctrl_deps) for r in src.values() for n in r.values())
    after = sum(len(n.ctrl_deps) for r in out.values() for n in r.values())
    assert 0 < after < before
    assert all(list(out[r][i].data_deps) == list(n.data_deps) for r in src for i, n in src[r].items())
    assert chakra.validate(str(tmp_path / "d")).ok


def test_in_a_pipeline(recorded, tmp_path, chakra_pipeline):
    spec = {"input": {"paths": [str(recorded["ddp"])]},
            "transforms": [{"name": "obfuscate", "options": {"names": "kind"}}],
            "backends": [{"name": "simpy", "output": str(tmp_path / "sim")}]}
    out = chakra_pipeline(spec)
    assert out["backends"][0]["result"]["summary"]["finish_ns"] > 0


def test_bounds_are_checked():
    with pytest.raises(ConfigError, match="perturb"):
        chakra.get_host().registry.get("transform", "obfuscate").check_options({"perturb": 1.5})
    # a step of 1e300 made every duration and size 1 (an all-reduce of 5,408 bytes became 2)
    check = chakra.get_host().registry.get("transform", "obfuscate").check_options
    with pytest.raises(ConfigError, match="option 'quantize' must be <= 1, got 1e"):
        check({"quantize": 1e300})
    assert check({"quantize": 1})["quantize"] == 1


def _figures(path):
    """The per-rank breakdown and the critical path's split of a simpy run of ``path``, in ns."""
    result = chakra.simulate(str(path), "simpy")
    return result.ranks, result.summary["critical_path"]["ns_by_category"]


def test_recorded_idle_gaps_stay_idle(recorded, tmp_path):
    chakra.transform(str(recorded["ddp"]), "obfuscate", {"salt": "x"}, output=f"{tmp_path / 'o'}/")
    ranks, path = _figures(recorded["ddp"])
    assert path["idle_ns"] > 0 and all(r["idle_ns"] > 0 for r in ranks)  # the recording has idle gaps
    assert _figures(tmp_path / "o") == (ranks, path)


def test_obfuscate_and_scale_commute(recorded, tmp_path):
    scale = {"compute_speedup": 2.0}
    chakra.transform(str(recorded["ddp"]), ["obfuscate", "scale"], [{"salt": "x"}, scale], output=f"{tmp_path / 'a'}/")
    chakra.transform(str(recorded["ddp"]), ["scale", "obfuscate"], [scale, {"salt": "x"}], output=f"{tmp_path / 'b'}/")
    finish = [chakra.simulate(str(tmp_path / d), "simpy").summary["finish_ns"] for d in "ab"]
    assert finish[0] == finish[1]


@pytest.mark.parametrize("names", ["keep", "hash", "kind"])
def test_the_process_groups_stay_readable(recorded, tmp_path, names):
    source = recorded["ddp"]  # its groups are listed by its ## process_group:init ## node only
    chakra.transform(str(source), "obfuscate", {"names": names}, output=f"{tmp_path / 'k'}/")
    check = chakra.validate(str(tmp_path / "k"))
    assert check.ok, [str(f) for f in check]
    assert open_traceset(str(tmp_path / "k")).process_groups == open_traceset(str(source)).process_groups
