"""A short run of benches/fuzz_forms.py: on mutated ``.et`` files, the loops that run compiled or
as Python (role keys, node columns, validation) give the same answers both ways.

It catches the role-key difference fixed in 01b0b28 (a node naming no group or peer whose
attribute does not read): on the code before, this campaign finds 3 differing cases.  Longer
campaigns: ``python benches/fuzz_forms.py --cases 1500``.
"""

from __future__ import annotations

import contextlib
import io

import pytest

pytest.importorskip("numba")


@pytest.fixture(scope="module")
def fuzz_forms(load_script):
    return load_script("benches/fuzz_forms.py", "chakra_fuzz_forms")


def test_short_campaign_gives_the_same_answers_both_ways(fuzz_forms):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        figures = fuzz_forms.campaign(240, seed=1)
    assert printed.getvalue() == ""  # a differing case is printed
    assert set(figures) == set(fuzz_forms.CHECKS)
    for counts in figures.values():
        assert sum(counts.values()) == 80 and counts["differs"] == 0 and counts["same"] > 0
