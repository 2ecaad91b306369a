"""Fitting a corpus of generated sets and sampling a depth it was not fitted on
(benches/bench_synth_corpus.py runs the same on 50 sets)."""

from __future__ import annotations

import json

import pytest

import chakra_core as chakra

#: a small tensor- and data-parallel transformer (4 ranks); only the depth varies
BASE = {"hidden": 512, "heads": 8, "seq": 256, "micro_batches": 3, "tp": 2, "dp": 2, "vocab": 1000}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """``{layers: directory}`` of generated sets."""
    base = tmp_path_factory.mktemp("generated")
    out = {}
    for layers in (2, 3, 4, 5, 6):
        out[layers] = base / f"l{layers}"
        chakra.generate("transformer", {**BASE, "layers": layers}, output=str(out[layers]) + "/")
    return out


def test_left_out_depth_within_ten_percent(generated, tmp_path, chakra_cli):
    listing = tmp_path / "corpus.list"
    listing.write_text("# the corpus, 4 depths\n" + "".join(f"{generated[n]}\n" for n in (2, 3, 5, 6)))
    assert chakra_cli("synth", "fit", f"@{listing}", "--synthesizer", "learned", "-o", tmp_path / "m.json")[0] == 0
    model = json.loads((tmp_path / "m.json").read_text())
    assert [w["params"]["layers"] for w in model["workloads"]] == [2, 3, 5, 6]
    assert all(w["params"]["hidden"] == 512 and w["params"]["ranks"] == 4 for w in model["workloads"])
    for seed in (1, 2):
        out = tmp_path / f"s{seed}"
        chakra.synth_sample(tmp_path / "m.json", str(out) + "/", seed=seed, options={"target": {"layers": 4}})
        assert chakra.validate(str(out)).ok
        r = chakra.compare(str(generated[4]), str(out))
        assert r["simulated"]["relative_error"] <= 0.10, r["simulated"]
        assert r["collectives"]["a"] == r["collectives"]["b"]


def test_list_file_parameters_override_metadata(generated, tmp_path):
    listing = tmp_path / "c.list"
    listing.write_text(f"{generated[2]} layers=2 batch=8\n{generated[3]}  batch=16  # comment\n")
    chakra.synth_fit([f"@{listing}"], tmp_path / "m.json", synthesizer="learned")
    params = [w["params"] for w in json.loads((tmp_path / "m.json").read_text())["workloads"]]
    assert [p["batch"] for p in params] == [8, 16] and [p["layers"] for p in params] == [2, 3]


@pytest.mark.parametrize("line", ["{path} layers", "{path} layers=many", "{path} =3", "{path} x=1e400"])
def test_bad_list_line_is_located(generated, tmp_path, chakra_cli, line):
    listing = tmp_path / "bad.list"
    listing.write_text("# first line\n" + line.format(path=generated[2]) + "\n")
    code, _out, text = chakra_cli("synth", "fit", f"@{listing}", "--synthesizer", "learned", "-o", tmp_path / "m.json")
    err = text.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"{listing}:line 2" in err[0], err


def test_target_without_a_fitted_parameter(generated, tmp_path, chakra_cli):
    chakra.synth_fit([str(generated[2])], tmp_path / "m.json", synthesizer="learned")
    code, _out, text = chakra_cli("synth", "sample", tmp_path / "m.json", "-o", str(tmp_path / "o") + "/",
                                  "-O", 'target={"experts_per_gpu": 3}')
    err = text.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no fitted set has the parameters" in err[0], err


@pytest.mark.parametrize("target, words", [
    ('{"layers": -100}', "target: layers=-100 is not a number above 0"),
    ('{"layers": 0}', "target: layers=0 is not a number above 0"),
    ('{"layers": 1e300}', "target: layers=1e+300 is not a number above 0 and below 2**63"),
    ('{"layers": 3.5}', "target: layers=3.5 is not a whole number"),
    ('{"layers": 1000000}', "target: layers=1e+06 is over 100 times the depth of the nearest fitted set (3 layers)"),
])
def test_targets_no_set_could_have_are_refused(generated, tmp_path, chakra_cli, target, words):
    # -100 and 0 layers wrote a set of the blocks around the layers, 3.5 more nodes than 4
    # layers, 1,000,000 ran past 30 s and 1.2 GB; all without a word
    chakra.synth_fit([str(generated[2]), str(generated[3])], tmp_path / "m.json", synthesizer="learned")
    code, _out, text = chakra_cli("synth", "sample", tmp_path / "m.json", "-o", str(tmp_path / "o") + "/",
                                  "-O", f"target={target}")
    err = text.strip().splitlines()
    assert code == 2 and len(err) == 1 and words in err[0], err
    assert not (tmp_path / "o").exists()


def test_sample_ranks_within_the_npus_limit(generated, tmp_path, chakra_cli):
    chakra.synth_fit([str(generated[2])], tmp_path / "m.json")
    code, _out, text = chakra_cli("synth", "sample", tmp_path / "m.json", "-o", str(tmp_path / "o") + "/",
                                  "--ranks", "1000000000")
    assert code == 2 and "ranks 1000000000 exceeds the limit of 1048576" in text and not (tmp_path / "o").exists()


def test_target_says_the_fitted_set_it_samples(generated, tmp_path, chakra_cli):
    """With a target, the note and the sample's metadata said workload 0 (the option's default),
    whatever set was nearest, and ``workload`` given beside a target was ignored."""
    model = tmp_path / "m.json"
    chakra.synth_fit([str(generated[n]) for n in (2, 3, 5, 6)], model, synthesizer="learned")
    code, _out, err = chakra_cli("synth", "sample", model, "-o", f"{tmp_path / 'l4'}/", "-O", 'target={"layers": 4}')
    # 4 layers: |log(5/6)| to 5 layers against |log(5/4)| to 3 layers, so set 2 (5 layers) is the nearest
    assert code == 0 and err.splitlines() == ["note: defaults taken: seed=0, workload=2, level=0.5, ranks=4 "
                                              "(the model's)"], err
    meta = chakra.open_traceset(str(tmp_path / "l4"))[0].metadata()
    assert chakra.get_attr(meta, "workload") == 2 and json.loads(chakra.get_attr(meta, "target")) == {"layers": 4}
    code, _out, err = chakra_cli("synth", "sample", model, "-o", f"{tmp_path / 'both'}/", "-O", "workload=0",
                                 "-O", 'target={"layers": 4}')
    assert code == 2 and err.splitlines() == [
        f"chakra synth: error: {model}: workload=0 and target both pick the fitted set to sample: give one (with "
        "target, the set nearest to it is taken)"], err
    assert not (tmp_path / "both").exists()
