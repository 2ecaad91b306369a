"""Fit on recorded traces, sample, and check validity, sizes, regrouping and reproducibility."""

from __future__ import annotations

import json

import pytest

import chakra_core as chakra
from chakra_core import ConfigError, NodeType, open_traceset

#: the sources of conftest.SOURCES
SOURCES = ["collectives", "ddp", "ddp_buckets", "gpt3_text", "jax_mesh8", "resnet50_text", "transformer"]


def _counts(directory):
    ts = open_traceset(str(directory))
    return [sum(1 for _ in rt.nodes()) for rt in ts]


@pytest.mark.parametrize("synthesizer", ["structural", "markov"])
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_sample_is_valid_and_sized_like_its_source(recorded, tmp_path, source, synthesizer):
    model = tmp_path / "model.json"
    chakra.synth_fit([str(recorded[source])], model, synthesizer=synthesizer)
    chakra.synth_sample(model, tmp_path / "out" / "", seed=5)
    check = chakra.validate(str(tmp_path / "out"))
    assert check.ok, [str(f) for f in check]
    src, out = _counts(recorded[source]), _counts(tmp_path / "out")
    assert len(out) == len(src)
    if synthesizer == "structural":
        assert out == src
    else:
        assert out == [round(sum(src) / len(src))] * len(src)


def test_same_seed_same_bytes_other_seed_other_bytes(recorded, tmp_path):
    model = tmp_path / "m.json"
    chakra.synth_fit([str(recorded["ddp_buckets"])], model)
    files = {}
    for tag, seed in (("a", 1), ("b", 1), ("c", 2)):
        res = chakra.synth_sample(model, tmp_path / tag / "", seed=seed, ranks=4)
        files[tag] = [open(f, "rb").read() for f in res.files]
    assert files["a"] == files["b"]
    assert files["a"] != files["c"]


def test_more_ranks_regroup_collectives_and_pair_sends(recorded, tmp_path):
    model = tmp_path / "m.json"
    chakra.synth_fit([str(recorded["collectives"])], model)
    assert json.loads(model.read_text())["workloads"][0]["tile"] == 2  # rank 0 sends where rank 1 receives
    chakra.synth_sample(model, tmp_path / "six" / "", ranks=6)
    check = chakra.validate(str(tmp_path / "six"))
    assert check.ok and check.ranks == 6
    ts = open_traceset(str(tmp_path / "six"))
    sends = [(rt.rank, chakra.get_int(n, "comm_dst")) for rt in ts for n in rt.nodes()
             if n.type == NodeType.COMM_SEND_NODE]
    assert {src for src, _ in sends} == set(range(6))
    assert all(dst == src ^ 1 for src, dst in sends)  # each pair of the source's tile, repeated
    with pytest.raises(ConfigError, match="multiple of 2"):
        chakra.synth_sample(model, tmp_path / "three" / "", ranks=3)


def test_data_parallel_replicas_scale(recorded, tmp_path):
    model = tmp_path / "m.json"
    chakra.synth_fit([str(recorded["ddp"])], model)
    assert json.loads(model.read_text())["workloads"][0]["tile"] == 1
    chakra.synth_sample(model, tmp_path / "eight" / "", ranks=8)
    assert chakra.validate(str(tmp_path / "eight")).ok
    assert len(_counts(tmp_path / "eight")) == 8


@pytest.mark.parametrize("source", ["transformer", "gpt3_text", "ddp_buckets"])
def test_nodes_per_rank_scales_the_motifs(recorded, tmp_path, source):
    model = tmp_path / "m.json"
    chakra.synth_fit([str(recorded[source])], model)
    chakra.synth_sample(model, tmp_path / "big" / "", options={"nodes_per_rank": 20000})
    assert chakra.validate(str(tmp_path / "big")).ok
    counts = _counts(tmp_path / "big")
    assert all(abs(c - 20000) <= 0.1 * 20000 for c in counts), counts


def test_cli_fit_sample_show(recorded, tmp_path, chakra_cli):
    model = tmp_path / "m.json"
    status, out, err = chakra_cli("synth", "fit", recorded["ddp"], recorded["gpt3_text"], "-o", model)
    assert status == 0 and "2 workload(s)" in out
    # the default synthesizer copies much of its source: said, not taken silently
    assert "note: synthesizer 'structural' (the default): its samples keep their source's node sequence" in err
    status, out, err = chakra_cli("synth", "sample", model, "-o", f"{tmp_path / 's'}/", "--seed", "3", "--ranks", "4",
                                  "-O", "workload=1", "-O", "jitter=0.5", "--json")
    result = json.loads(out)
    assert status == 0 and result["ranks"] == 4 and "defaults taken" not in err  # nothing left to its default
    status, _, err = chakra_cli("synth", "sample", model, "-o", f"{tmp_path / 'd'}/")
    assert status == 0 and "note: defaults taken: seed=0, workload=0, jitter=1.0, ranks=2 (the model's)" in err, err
    status, _, err = chakra_cli("synth", "fit", recorded["ddp"], "-o", model, "--synthesizer", "learned")
    assert status == 0 and "note:" not in err
    status, _, err = chakra_cli("synth", "sample", model, "-o", f"{tmp_path / 'l'}/", "--seed", "1")
    assert "note: defaults taken: workload=0, level=0.5, ranks=2 (the model's)" in err, err
    # the seed's range as the option declares it (0 up), not -2**63 up
    status, _, err = chakra_cli("synth", "sample", model, "-o", f"{tmp_path / 'x'}/", "--seed", str(1 << 63))
    assert status == 2 and "option 'seed' must be a whole number from 0 to 2**63-1" in err, err
    status, out, _ = chakra_cli("synth", "fit", recorded["ddp"], recorded["gpt3_text"], "-o", model)
    status, out, _ = chakra_cli("synth", "sample", model, "-o", f"{tmp_path / 's'}/", "--seed", "3", "--ranks", "4",
                                "-O", "workload=1", "--json")
    result = json.loads(out)
    assert result["provenance"]["implementations"][0]["options"]["seed"] == 3
    status, out, _ = chakra_cli("synth", "show", model, "--json")
    shown = json.loads(out)
    assert [w["ranks"] for w in shown["workloads"]] == [2, 8]
    assert shown["names_kept"] is False
    status, out, _ = chakra_cli("synth", "show", model)
    assert status == 0 and "tile: 1" in out


def test_bad_model_is_one_line_error(tmp_path, chakra_cli):
    bad = tmp_path / "bad.json"
    bad.write_text('{"synthesizer": "structural", "format": "chakra-synth-model", "version": 1}\n')
    status, _, err = chakra_cli("synth", "sample", bad, "-o", tmp_path / "x")
    assert status == 2 and err.count("\n") == 1 and "not fitted by this synthesizer" in err
    bad.write_text("{not json")
    status, _, err = chakra_cli("synth", "show", bad)
    assert status == 2 and "malformed JSON" in err
    assert not (tmp_path / "x").exists()
