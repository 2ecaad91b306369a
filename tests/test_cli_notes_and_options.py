"""``chakra run`` prints the notes (defaults used) of each result, as ``chakra simulate`` does;
an ``-O`` key given twice with two values is refused, with one value taken."""

from __future__ import annotations

import json
from pathlib import Path

TEXT = Path(__file__).resolve().parents[1] / "examples" / "text" / "resnet50_like.txt"


def test_run_prints_the_notes_of_each_result(tmp_path, chakra_cli):
    p = tmp_path / "p.yaml"  # no system: the simulator falls back on ASTRA-sim's sample settings
    p.write_text(f"input: {{format: text, paths: ['{TEXT}'], options: {{npus: 4}}}}\n"
                 f"backends: [{{name: simpy, output: '{tmp_path}/sim'}}]\n")
    status, out, err = chakra_cli("run", p)
    assert status == 0, err
    notes = json.loads((tmp_path / "sim" / "result.json").read_text())["notes"]
    assert any(n.startswith("no system file given") for n in notes)
    printed = [line[len("note: "):] for line in (out + err).splitlines() if line.startswith("note: ")]
    assert printed == notes


def test_an_option_given_twice_with_two_values_is_refused_with_one_is_taken(tmp_path, chakra_cli):
    status, out, err = chakra_cli("transform", TEXT, "-I", "npus=2", "scale", "-O", "compute_speedup=2",
                                  "-O", "compute_speedup=3", "-o", f"{tmp_path}/o/")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "'compute_speedup' is given twice, as '2' and '3'" in err
    assert not (tmp_path / "o").exists()
    status, _, err = chakra_cli("transform", TEXT, "-I", "npus=2", "scale", "-O", "compute_speedup=2",
                                "-O", "compute_speedup=2", "-o", f"{tmp_path}/o/")
    assert status == 0, err


def test_transform_and_generate_json_carry_their_provenance(tmp_path, chakra_cli):
    """``--json`` says what made the set, options after defaults, as convert's and simulate's do:
    retime's device and dtype are the defaults it declares."""
    from chakra_core import get_host

    status, out, err = chakra_cli("transform", TEXT, "-I", "npus=2", "-I", "cycle_ns=1", "retime",
                                  "-o", f"{tmp_path}/t/", "--json")
    assert status == 0, err
    impls = json.loads(out)["provenance"]["implementations"]
    assert [(i["stage"], i["name"]) for i in impls] == [("input", "text"), ("transform", "retime")]
    declared = get_host().registry.get("transform", "retime").options
    assert {k: impls[1]["options"][k] for k in ("device", "dtype")} == {
        k: declared[k].default for k in ("device", "dtype")}
    assert impls[0]["options"]["npus"] == 2
    status, out, err = chakra_cli("generate", "transformer", "-O", "layers=1", "-O", "tp=2", "-o",
                                  f"{tmp_path}/g/", "--json")
    assert status == 0, err
    d = json.loads(out)
    (gen,) = d["provenance"]["implementations"]
    assert d["ranks"] == 2 and gen["name"] == "transformer" and gen["options"]["layers"] == 1
