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
