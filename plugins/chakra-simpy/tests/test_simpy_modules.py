"""Every module of the package is in the 'where the code is' tables: the package docstring's and
docs/simulator.md's."""

from __future__ import annotations

import re
from pathlib import Path

import chakra_simpy

PACKAGE = Path(chakra_simpy.__file__).resolve().parent
DOC = Path(__file__).resolve().parents[3] / "docs" / "simulator.md"


def _modules() -> set[str]:
    out = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts == ("__init__",):
            continue
        out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_the_package_docstring_lists_every_module():
    listed = set(re.findall(r"^``([\w.]+)``\s", chakra_simpy.__doc__ or "", re.M))
    assert _modules() and listed == _modules()


def test_the_simulator_doc_lists_every_module():
    text = DOC.read_text()
    section = text[text.index("## Where the code is"):]
    section = section[:section.index("\n## ", 1)]
    listed = set(re.findall(r"^\| `([\w.]+)` \|", section, re.M))
    assert listed == _modules()
