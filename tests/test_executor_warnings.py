"""The local executor's workers word their warnings as their parent does, and a parent whose
wording cannot be sent to them (a closure of the caller's) still gets its workers."""

from __future__ import annotations

import warnings
from pathlib import Path

from chakra_core import convert

TEXT = Path(__file__).resolve().parents[1] / "examples" / "text" / "resnet50_like.txt"


def test_a_closure_as_the_warning_wording_does_not_stop_the_workers(tmp_path):
    def mine(message, category, filename, lineno, file=None, line=None):
        return f"mine: {message}\n"

    saved = warnings.formatwarning
    warnings.formatwarning = mine
    try:
        result = convert(str(TEXT), f"{tmp_path}/set/", input_options={"npus": 4, "cycle_ns": 1.0}, jobs=2)
    finally:
        warnings.formatwarning = saved
    assert sorted(Path(f).name for f in result.files) == [f"trace.{r}.et" for r in range(4)]
