"""Bad models, seeds and sources (issue 32's synth findings): exit 2 with one located line, and a
sample with validation errors is not written unless --no-validate."""

from __future__ import annotations

import json

import pytest

import chakra_core as chakra
from chakra_core import EtWriter, GlobalMetadata, Node, NodeType


def _run(chakra_cli, argv):
    code, _out, err = chakra_cli(*argv)
    return code, err.strip().splitlines()


def _first_slot_with(model, key):
    for s in model["workloads"][0]["classes"][0]["slots"]:
        if key in s:
            return s
    raise AssertionError(key)


def _set_duration(model, value):
    model["workloads"][0]["kind_stats"]["0"]["duration"][0] = value


MUTATIONS = {
    "duration string": lambda m: _set_duration(m, "12"),
    "duration dict": lambda m: _set_duration(m, {"us": 12}),
    "duration null": lambda m: _set_duration(m, None),
    "kind a string": lambda m: m["kinds"].__setitem__(0, "COMP_NODE"),
    "kind without type": lambda m: m["kinds"][0].pop("type"),
    "kind of an unknown type": lambda m: m["kinds"][0].__setitem__("type", "GPU_NODE"),
}
SHAPE_MUTATIONS = {
    "short motif entry": lambda m: m["workloads"][0]["classes"][0]["motifs"][0]["body"].__setitem__(0, ["n"]),
    "motif naming a later motif": lambda m: m["workloads"][0]["classes"][0]["motifs"][0]["body"].__setitem__(
        0, ["m", 99]),
    "slot kind out of range": lambda m: _first_slot_with(m, "kind").__setitem__("kind", 10 ** 6),
    "step repeated 2^62 times": lambda m: _step_motif(m).__setitem__("count", 2 ** 62),
}


def _step_motif(model):
    cls = model["workloads"][0]["classes"][0]
    return cls["motifs"][cls["step"]]


@pytest.mark.parametrize("synthesizer", ["learned", "structural", "markov"])
@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_bad_model_is_a_located_error(models, tmp_path, chakra_cli, synthesizer, case):
    model = json.loads(json.dumps(models[synthesizer]))
    MUTATIONS[case](model)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(model))
    for argv in (["synth", "sample", str(path), "-o", str(tmp_path / "out" / "")], ["synth", "show", str(path)]):
        code, err = _run(chakra_cli, argv)
        assert code == 2, (case, err)
        assert len(err) == 1 and str(path) in err[0] and "model field" in err[0], err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("synthesizer", ["learned", "structural"])
@pytest.mark.parametrize("case", sorted(SHAPE_MUTATIONS))
def test_bad_grammar_is_a_located_error(models, tmp_path, chakra_cli, synthesizer, case):
    model = json.loads(json.dumps(models[synthesizer]))
    SHAPE_MUTATIONS[case](model)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(model))
    code, err = _run(chakra_cli, ["synth", "sample", str(path), "-o", str(tmp_path / "out" / "")])
    assert code == 2 and len(err) == 1 and "workloads[0].classes[0]" in err[0], err


def test_slot_duration_of_wrong_type(models, tmp_path, chakra_cli):
    model = json.loads(json.dumps(models["structural"]))
    _first_slot_with(model, "duration")["duration"] = "fast"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(model))
    code, err = _run(chakra_cli, ["synth", "sample", str(path), "-o", str(tmp_path / "out" / "")])
    assert code == 2 and len(err) == 1 and ".duration: wants an array" in err[0], err


@pytest.mark.parametrize("synthesizer", ["structural", "markov"])
def test_kind_without_duration_table_samples_unset_durations(models, tmp_path, chakra_cli, synthesizer):
    """A model whose kind_stats entry has no duration table (fuzz case: its key misspelt) samples
    that kind's nodes with duration 0 (unset, as an absent size), not an internal error."""
    model = json.loads(json.dumps(models[synthesizer]))
    stats = model["workloads"][0]["kind_stats"]
    for entry in stats.values():
        entry.pop("duration", None)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    out = tmp_path / "out"
    code, err = _run(chakra_cli, ["synth", "sample", str(path), "-o", str(out / ""), "--no-validate"])
    assert code == 0, err
    durations = {n.duration_micros for rank in chakra.open_traceset(str(out)) for n in rank.nodes()}
    assert durations == {0}


def test_markov_transition_row_of_zeros(models, tmp_path, chakra_cli):
    model = json.loads(json.dumps(models["markov"]))
    transitions = model["workloads"][0]["transitions"]
    kind = sorted(transitions, key=int)[0]
    transitions[kind] = {b: 0 for b in transitions[kind]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(model))
    code, err = _run(chakra_cli, ["synth", "sample", str(path), "-o", str(tmp_path / "out" / "")])
    assert code == 2 and len(err) == 1, err
    assert f"{path}: model field workloads[0].transitions.{kind}: the counts sum to 0" in err[0], err


@pytest.mark.parametrize("synthesizer", ["learned", "structural"])
@pytest.mark.parametrize("ranks", [3, 4, 10 ** 9])
def test_source_ranks_edited_past_the_classes_members(models, tmp_path, chakra_cli, synthesizer, ranks):
    """The DDP model's 2 source ranks (one class each) said to be more: "internal error ...
    ValueError: 2 is not in list" when the sample reached a rank of no class."""
    model = json.loads(json.dumps(models[synthesizer]))
    model["workloads"][0]["ranks"] = ranks
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(model))
    code, err = _run(chakra_cli, ["synth", "sample", str(path), "-o", str(tmp_path / "out" / "")])
    assert code == 2 and err == [f"chakra synth: error: {path}: model field workloads[0].ranks: {ranks} source "
                                 "ranks, but the classes' members are 2 rank(s): each source rank is a member of "
                                 "one class"], err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("seed", [2 ** 64, 2 ** 63, -1])
def test_seed_out_of_range(models, tmp_path, chakra_cli, seed):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(models["learned"]))
    code, err = _run(chakra_cli, ["synth", "sample", str(path), "-o", str(tmp_path / "out" / ""), "--seed", str(seed)])
    assert code == 2 and len(err) == 1 and "seed" in err[0], err


def test_source_duration_beyond_int64(tmp_path, chakra_cli):
    src = tmp_path / "src"
    src.mkdir()
    with EtWriter(src / "trace.0.et", GlobalMetadata(version="0.0.4")) as w:
        w.write(Node(id=1, name="a", type=NodeType.COMP_NODE, duration_micros=5))
        w.write(Node(id=2, name="b", type=NodeType.COMP_NODE, duration_micros=2 ** 64 - 1, data_deps=[1]))
    for name in ("learned", "structural", "markov"):
        code, err = _run(chakra_cli, ["synth", "fit", str(src), "-o", str(tmp_path / "m.json"), "--synthesizer", name])
        assert code == 2 and len(err) == 1, err
        assert "trace.0.et:node 2" in err[0] and "duration_micros 18446744073709551615" in err[0], err
        assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("node_type, comm_type", [(8, None), (255, None), (NodeType.COMM_COLL_NODE, 99)])
def test_source_node_of_unknown_type(tmp_path, chakra_cli, node_type, comm_type):
    """A source node of a type a model cannot store is refused by fit (it wrote a model that
    show and sample then refused)."""
    from chakra_core import make_attr

    src = tmp_path / "src"
    src.mkdir()
    odd = Node(id=2, name="b", type=node_type, duration_micros=5, data_deps=[1])
    if comm_type is not None:
        odd.attr.append(make_attr("comm_type", comm_type))
    with EtWriter(src / "trace.0.et", GlobalMetadata(version="0.0.4")) as w:
        w.write(Node(id=1, name="a", type=NodeType.COMP_NODE, duration_micros=5))
        w.write(odd)
    for name in ("learned", "structural", "markov"):
        code, err = _run(chakra_cli, ["synth", "fit", str(src), "-o", str(tmp_path / "m.json"), "--synthesizer", name])
        assert code == 2 and len(err) == 1, err
        assert "trace.0.et:node 2" in err[0] and f"type {int(node_type)}, comm_type" in err[0], err
        assert not (tmp_path / "m.json").exists()


def test_mutated_markov_model_is_refused_unless_no_validate(models, tmp_path, chakra_cli):
    model = json.loads(json.dumps(models["markov"]))
    for k in model["kinds"]:
        if k["type"] == "COMP_NODE":
            k["type"] = "COMM_SEND_NODE"
    path = tmp_path / "mutated.json"
    path.write_text(json.dumps(model))
    out = tmp_path / "out"
    code, err = _run(chakra_cli, ["synth", "sample", str(path), "-o", str(out / "")])
    assert code == 2 and len(err) == 1 and "validation error(s), so it was not written" in err[0], err
    assert not out.exists()
    code, _err = _run(chakra_cli, ["synth", "sample", str(path), "-o", str(out / ""), "--no-validate"])
    assert code == 0 and not chakra.validate(str(out)).ok


@pytest.mark.parametrize("pairs, message", [
    ([[["g", "w"], ["send", 1]]], "wants a group renamed to a group"),
    ([[["send", 1], ["recv", 1]]], "wants a group renamed to a group"),
    ("x", "wants an array"),
])
def test_bad_tile_renaming_is_a_located_error(models, tmp_path, chakra_cli, pairs, message):
    model = json.loads(json.dumps(models["learned"]))
    w = model["workloads"][0]
    w["tile_relabel"] = [pairs] + [[] for _ in w["tile_classes"][1:]]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(model))
    code, err = _run(chakra_cli, ["synth", "sample", str(path), "-o", str(tmp_path / "out" / "")])
    assert code == 2 and len(err) == 1 and "tile_relabel[0]" in err[0] and message in err[0], err


HEADER_MUTATIONS = {
    "a later version": (lambda m: m.__setitem__("version", 99), "chakra-synth model version 99; this version reads 1"),
    "another format": (lambda m: m.__setitem__("format", "x"), "not a chakra-synth model (format 'x')"),
    "no workload": (lambda m: m.__setitem__("workloads", []), "the model holds no workload"),
    "an unknown synthesizer": (lambda m: m.__setitem__("synthesizer", "nope"), "unknown synthesizer 'nope'"),
}


@pytest.mark.parametrize("synthesizer", ["learned", "structural", "markov"])
@pytest.mark.parametrize("case", sorted(HEADER_MUTATIONS))
def test_a_model_sample_refuses_is_not_shown_either(models, tmp_path, chakra_cli, synthesizer, case):
    model = json.loads(json.dumps(models[synthesizer]))
    mutate, message = HEADER_MUTATIONS[case]
    mutate(model)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(model))
    for argv in (["synth", "sample", str(path), "-o", str(tmp_path / "out" / "")], ["synth", "show", str(path)]):
        code, err = _run(chakra_cli, argv)
        assert code == 2 and len(err) == 1, (case, err)
        assert err[0].startswith(f"chakra synth: error: {path}: ") and message in err[0], err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, message", [("\n\n# nothing\n", "{list}: the list of trace sets names no set"),
                                           ("{set} npus=2 npus=3\n", "{list}:line 1: 'npus' is given twice")])
def test_a_list_of_sets_names_itself_when_refused(recorded, tmp_path, chakra_cli, text, message):
    listed = tmp_path / "sets.list"
    listed.write_text(text.format(set=recorded["ddp"]))
    code, err = _run(chakra_cli, ["synth", "fit", f"@{listed}", "-o", str(tmp_path / "m.json")])
    assert code == 2 and len(err) == 1 and message.format(list=listed) in err[0], err
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("synthesizer", ["structural", "markov"])
@pytest.mark.parametrize("table", ["duration", "size"])
def test_negative_duration_or_size_is_refused(models, tmp_path, chakra_cli, synthesizer, table):
    """A kind_stats table with a negative value was sampled as 0 without a word."""
    model = json.loads(json.dumps(models[synthesizer]))
    stats = model["workloads"][0]["kind_stats"]
    kind = next(k for k, entry in stats.items() if entry.get(table))
    stats[kind][table][0] = -5
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(model))
    code, err = _run(chakra_cli, ["synth", "sample", str(path), "-o", str(tmp_path / "out" / "")])
    assert code == 2 and len(err) == 1, err
    assert f"{path}: model field workloads[0].kind_stats.{kind}.{table}[0]: wants a finite number from 0" in err[0]
    assert "got -5" in err[0] and not (tmp_path / "out").exists()


def test_a_bad_line_of_a_list_names_the_list_and_the_line(recorded, tmp_path, chakra_cli):
    listed = tmp_path / "sets.list"
    listed.write_text(f"{recorded['ddp']}\n# a comment\n{tmp_path / 'missing'}\n")
    code, err = _run(chakra_cli, ["synth", "fit", f"@{listed}", "-o", str(tmp_path / "m.json")])
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"chakra synth: error: {listed}:line 3: {tmp_path / 'missing'}: no such file"), err
    assert not (tmp_path / "m.json").exists()


def test_a_list_naming_another_list_is_refused_at_its_line(recorded, tmp_path, chakra_cli):
    inner = tmp_path / "inner.list"
    inner.write_text(f"{recorded['ddp']}\n")
    outer = tmp_path / "outer.list"
    outer.write_text(f"{recorded['ddp']}\n@{inner}\n")
    code, err = _run(chakra_cli, ["synth", "fit", f"@{outer}", "-o", str(tmp_path / "m.json")])
    assert code == 2 and len(err) == 1, err
    assert f"{outer}:line 2: '@{inner}': a list file names trace sets, not other lists" in err[0], err
