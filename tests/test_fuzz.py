"""A short run of the fuzz harness (benches/fuzz.py): no internal error, crash, hang or garbage.

The long campaign (``python benches/fuzz.py --cases 10000``) and its figures are in
docs/limits.md.
"""

from __future__ import annotations

import contextlib
import io

import pytest


@pytest.fixture(scope="module")
def fuzz(load_script):
    return load_script("benches/fuzz.py", "chakra_fuzz")


def test_short_campaign_over_every_kind_and_command(fuzz):
    fig = fuzz.campaign(280, seed=7, small=True)
    assert fig["bad"] == []
    assert sorted(fig["by_kind"]) == sorted(fuzz.KINDS)
    assert all(sum(c.values()) == 40 for c in fig["by_kind"].values())
    assert set(fig["by_command"]) == {*fuzz.TRACE_COMMANDS, "run"}
    outcomes = [o for c in fig["by_kind"].values() for o in c]
    # both ends are reached: mutated inputs that still run and ones refused with a located error
    assert "ok" in outcomes and "error" in outcomes


def test_short_campaign_over_the_kinds_of_issue_32(fuzz):
    """Sweeps with hostile expressions, transform/generate/emulate options, report/diff on damaged
    results and spans, graph, comm-group files: three cases of each."""
    fig = fuzz.campaign(3 * len(fuzz.NEW_KINDS), seed=5, small=True, kinds=fuzz.NEW_KINDS)
    assert fig["bad"] == []
    assert sorted(fig["by_kind"]) == sorted(fuzz.NEW_KINDS)
    assert {"sweep", "transform", "generate", "report", "graph", "simulate", "emulate"} <= set(fig["by_command"])


def test_short_campaign_over_the_jax_and_synth_kinds(fuzz):
    """HLO text and protos, Chrome-trace and xplane profiles, synth models of each synthesizer and
    ``synth fit`` options: eight cases of each, every command they go through reached."""
    kinds = ("jax-hlo", "jax-proto", "jax-profile", "jax-xplane", "synth-model", "synth-fit")
    fig = fuzz.campaign(8 * len(kinds), seed=2, small=True, kinds=kinds)
    assert fig["bad"] == []
    assert sorted(fig["by_kind"]) == sorted(kinds)
    assert {"convert", "validate", "stats", "jsonize", "simulate", "synth-fit", "synth-sample",
            "synth-show"} <= set(fig["by_command"])


def test_cases_are_reproduced_by_their_number(fuzz, tmp_path):
    with contextlib.redirect_stdout(io.StringIO()):
        seeds = fuzz.build_seeds(tmp_path, small=True)
    a = [fuzz.make_case(seeds, 3, i, fuzz.KINDS) for i in range(14)]
    b = [fuzz.make_case(seeds, 3, i, fuzz.KINDS) for i in range(14)]
    assert a == b and len({c["kind"] for c in a}) == len(fuzz.KINDS)
    assert any(c["files"] != {k: v.hex() for k, v in s.files.items()}
               for c in a for s in seeds[c["kind"]] if s.name == c["seed"])


@pytest.mark.parametrize("command, status, out, err, outcome", [
    ("stats", 0, "nodes: 3\n", "", "ok"),
    ("validate", 2, "", "x.et:node 1: error: [cycle] ...\nFAILED: 1 rank(s), 1 error(s), 0 warning(s)\n", "ok"),
    ("stats", 2, "", "chakra stats: error: x.et:byte 8: truncated message at end of file\n", "error"),
    ("stats", 1, "", "chakra stats: internal error: KeyError: 'x' (a bug, not bad input; ...)\n", "internal"),
    ("stats", None, "", "Traceback (most recent call last):\n  ...\nMemoryError\n", "internal"),
    ("stats", 2, "", "chakra stats: error: a\nsecond line\nchakra stats: error: b\n", "error-unlocated"),
])
def test_outcomes_are_classified(fuzz, command, status, out, err, outcome):
    assert fuzz._classify(command, status, out, err) == outcome
