"""Options given to the step that does not use them, and a size a model cannot be sampled at
(review 24): both were taken without a word (a fit with ``-O seed=3`` wrote the model it wrote
without; ``nodes_per_rank=5`` gave 41 nodes per rank)."""

from __future__ import annotations

import re

import pytest

import chakra_core as chakra


@pytest.fixture(scope="module")
def models(recorded, tmp_path_factory):
    """``{synthesizer: model path}`` fitted on the recorded DDP set."""
    base = tmp_path_factory.mktemp("models")
    for name in ("learned", "structural", "markov"):
        chakra.synth_fit([str(recorded["ddp"])], base / f"{name}.json", synthesizer=name)
    return {name: base / f"{name}.json" for name in ("learned", "structural", "markov")}


@pytest.mark.parametrize("synthesizer, option", [
    ("learned", "seed=3"), ("learned", "level=0.9"), ("learned", "ranks=4"), ("learned", "workload=0"),
    ("learned", 'target={"layers": 2}'), ("structural", "jitter=0.5"), ("structural", "nodes_per_rank=50"),
    ("markov", "seed=3"),
])
def test_a_sample_option_given_to_fit_is_refused(recorded, tmp_path, chakra_cli, synthesizer, option):
    model = tmp_path / "m.json"
    code, _out, err = chakra_cli("synth", "fit", recorded["ddp"], "--synthesizer", synthesizer, "-O", option,
                                 "-o", model)
    key = option.split("=")[0]
    assert code == 2 and err.splitlines() == [
        f"chakra synth: error: option {key!r} is a sample option of synthesizer {synthesizer!r}: give it to "
        "'chakra synth sample' (synth_sample), not to fit"], err
    assert not model.exists()


@pytest.mark.parametrize("synthesizer, option", [
    ("learned", "keep_names=true"), ("learned", "max_period=8"), ("learned", "params=[{}]"),
    ("structural", "keep_names=true"), ("structural", "max_period=8"), ("markov", "keep_names=true"),
])
def test_a_fit_option_given_to_sample_is_refused(models, tmp_path, chakra_cli, synthesizer, option):
    out = tmp_path / "out"
    code, _out, err = chakra_cli("synth", "sample", models[synthesizer], "-o", f"{out}/", "--seed", "7", "-O", option)
    key = option.split("=")[0]
    assert code == 2 and err.splitlines() == [
        f"chakra synth: error: option {key!r} is a fit option of synthesizer {synthesizer!r}: give it to "
        "'chakra synth fit' (synth_fit), not to sample"], err
    assert not out.exists()


def test_each_step_takes_its_own_options(recorded, tmp_path, chakra_cli):
    model = tmp_path / "m.json"
    code, _out, err = chakra_cli("synth", "fit", recorded["ddp"], "--synthesizer", "learned", "-O", "keep_names=true",
                                 "-O", "max_period=64", "-o", model)
    assert code == 0 and '"keep_names":true' in model.read_text(), err
    code, _out, err = chakra_cli("synth", "sample", model, "-o", f"{tmp_path / 'out'}/", "--seed", "7",
                                 "-O", "level=0.2", "-O", "workload=0", "-O", "nodes_per_rank=86")
    assert code == 0 and err.splitlines() == ["note: defaults taken: ranks=2 (the model's)"], err


def _nodes_per_rank(directory):
    return [sum(1 for _ in rank.nodes()) for rank in chakra.open_traceset(str(directory))]


@pytest.mark.parametrize("synthesizer", ["learned", "structural"])
def test_nodes_per_rank_below_the_smallest_sample_is_refused(models, tmp_path, chakra_cli, synthesizer):
    code, _out, err = chakra_cli("synth", "sample", models[synthesizer], "-o", f"{tmp_path / 'small'}/",
                                 "-O", "nodes_per_rank=5")
    found = re.fullmatch(rf"chakra synth: error: {re.escape(str(models[synthesizer]))}: nodes_per_rank=5: the "
                         r"smallest sample of this workload has about (\d+) nodes per rank \(one step, each block whose "
                         r"count may change repeated once\); give \1 or more\n", err)
    assert code == 2 and found, err
    assert not (tmp_path / "small").exists()
    smallest = int(found.group(1))
    assert 5 < smallest < 86  # the DDP set's 86 nodes per rank: some blocks repeat
    chakra.synth_sample(models[synthesizer], f"{tmp_path / 'least'}/", options={"nodes_per_rank": smallest})
    got = _nodes_per_rank(tmp_path / "least")
    if synthesizer == "structural":
        assert got == [smallest, smallest]
    else:  # learned draws each segment's operator count around the fitted one
        assert len(got) == 2 and all(abs(n - smallest) <= 0.1 * smallest for n in got), got
    code, _out, err = chakra_cli("synth", "sample", models[synthesizer], "-o", f"{tmp_path / 'under'}/",
                                 "-O", f"nodes_per_rank={smallest - 1}")
    assert code == 2 and f"give {smallest} or more" in err, err
