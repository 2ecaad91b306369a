"""Every command block of README.md and docs/*.md runs as written.

Each ``sh`` block is run by bash (``set -e``) with the venv's ``chakra`` first on PATH, in a
workspace per document where ``examples/``, ``plugins/``, ``docs/``, ``schema/`` and ``scripts/``
are the repository's (linked) and ``out/`` is new, so a document's blocks run in order and share
what they write, as a reader's would.  ``pip install`` of a distribution of this repository is
skipped (it is installed already); anything else goes to a folder of the workspace
(``PIP_TARGET``), never into the environment running the tests (``tests/data/docs_bin/pip``).  A block that cannot run here says
so in a comment on the line before it: ``<!-- docs-test: skip REASON -->`` (a GPU, an ASTRA-sim
binary); the reason is shown as a warning of the test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHIMS = ROOT / "tests" / "data" / "docs_bin"  # pip: see the script
LINKED = ("examples", "plugins", "docs", "schema", "scripts", "benches", "adapters")
_BLOCK = re.compile(r"(?:<!-- docs-test: skip (?P<skip>[^>]*?) -->\n)?```(?:sh|bash)\n(?P<body>.*?)```", re.S)


def blocks(doc: Path) -> list[tuple[int, str, str | None]]:
    """``(line, text, skip reason)`` of each shell block of ``doc``."""
    text = doc.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group("body"), m.group("skip")) for m in _BLOCK.finditer(text)]


def _workspace(tmp: Path) -> dict[str, str]:
    for name in LINKED:
        if (ROOT / name).exists():
            (tmp / name).symlink_to(ROOT / name)
    (tmp / ".venv").symlink_to(sys.prefix)  # `source .venv/bin/activate` activates the running environment
    (tmp / "out").mkdir()
    site = tmp / "site"
    path = os.pathsep.join([str(SHIMS), str(site / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]])
    return dict(os.environ, PATH=path, PIP_TARGET=str(site), CHAKRA_DOCS_PYTHON=sys.executable,
                CHAKRA_DOCS_REPO=str(ROOT.resolve()),
                PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))


@pytest.mark.parametrize("doc", [d for d in DOCS if blocks(d)], ids=lambda d: d.relative_to(ROOT).as_posix())
def test_every_command_block_runs(doc, tmp_path):
    env = _workspace(tmp_path)
    skipped = []
    for line, body, skip in blocks(doc):
        if skip:
            skipped.append(f"line {line}: {skip}")
            continue
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", body], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, (f"{doc.name} line {line}: exit {r.returncode}\n{body}\n--- stdout\n"
                                   f"{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}")
    if skipped:
        warnings.warn(f"{doc.name}: blocks not run here: {'; '.join(skipped)}", stacklevel=1)


def test_blocks_are_found():
    assert sum(len(blocks(d)) for d in DOCS) >= 20
    assert shutil.which("bash")
