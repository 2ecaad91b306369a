"""What the CLI tells a newcomer before any work: did-you-mean for a misspelt option or command,
an example in every command's help (on bundled inputs), missing inputs named at once."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from chakra_core.cli._examples import EXAMPLES
from chakra_core.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
DDP = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_help_ends_with_an_example(command, chakra_cli):
    status, out, _ = chakra_cli(command, "--help")
    assert status == 0
    examples = out.split("examples (from the repository root):\n")[1]
    assert examples.split()[:2] == ["chakra", command]


def test_examples_name_bundled_inputs():
    """Every path an example reads (not one under out/, which earlier examples write) exists."""
    for command, examples in EXAMPLES.items():
        for line, _ in examples:
            words = shlex.split(line)
            assert words[:2] == ["chakra", command]
            for word in words[2:]:
                if "/" in word and not word.startswith(("out/", "-")):
                    assert (ROOT / word).exists(), f"{command}: {word}"


def test_misspelt_option_and_command_get_a_suggestion(chakra_cli):
    status, _, err = chakra_cli("simulate", DDP, "--sytem", "x.yaml")
    assert status == 2 and "unrecognized arguments: --sytem x.yaml (did you mean '--system'?)" in err
    status, _, err = chakra_cli("simulat", DDP)
    assert status == 2 and "invalid choice: 'simulat' (did you mean 'simulate'?)" in err
    assert "choose from" not in err


def test_missing_inputs_are_named_before_any_work(tmp_path, chakra_cli):
    """A's and the set's bytes are broken: reading or validating them would fail first."""
    broken = tmp_path / "broken.0.et"
    broken.write_bytes(b"\xff\xff")
    missing = tmp_path / "llm-fast"
    status, _, err = chakra_cli("diff", broken, missing)
    assert status == 2 and err == f"chakra diff: error: {missing}: no such file, directory or trace-set prefix (B)\n"
    status, _, err = chakra_cli("simulate", broken, "--system", tmp_path / "nope.yaml")
    assert status == 2 and err.endswith("nope.yaml: no such file, directory or trace-set prefix (--system)\n")


def test_a_trace_set_prefix_is_an_input(tmp_path, chakra_cli):
    status, _, err = chakra_cli("convert", DDP, "-o", tmp_path / "job")
    assert status == 0, err
    assert (tmp_path / "job.0.et").exists()
    status, out, err = chakra_cli("validate", tmp_path / "job")
    assert status == 0 and out.startswith("OK: 2 rank(s)"), err


def test_a_malformed_system_file_is_named_before_the_set_is_read(tmp_path, chakra_cli):
    bad = tmp_path / "bad.yaml"
    bad.write_text("network:\n  - {topology: Ring, npus_count: 2\n")
    status, _, err = chakra_cli("simulate", tmp_path / "no-set-here.0.et", "--system", bad)
    assert status == 2 and "no-set-here.0.et: no such file" in err
    bad_set = tmp_path / "broken.0.et"
    bad_set.write_bytes(b"\xff\xff")  # would fail validation, were it read
    status, _, err = chakra_cli("simulate", bad_set, "--system", bad)
    assert status == 2 and err.startswith(f"chakra simulate: error: {bad}:line 3: malformed YAML")
