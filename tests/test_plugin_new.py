"""``chakra plugin new``: the written distribution installs with ``pip install -e`` and its own
tests pass as written; bad names and existing folders are one-line errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from chakra_core.cli.main import main


def _venv_on_top_of_this_one(path: Path) -> Path:
    """A venv whose site-packages also sees this interpreter's (chakra-core and pytest installed
    there, editable installs included), so that ``pip install -e`` needs no network."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    parent = sysconfig.get_paths()["purelib"]
    Path(site, "parent.pth").write_text(f"import site; site.addsitedir({parent!r})\n")
    return python


def test_a_new_plugin_installs_and_passes_its_tests(tmp_path, capsys):
    assert main(["plugin", "new", "myfmt", "--dir", str(tmp_path)]) == 0
    assert "pip install -e" in capsys.readouterr().out
    dist = tmp_path / "chakra-myfmt"
    assert (dist / "chakra_myfmt" / "backend.py").is_file() and (dist / "tests" / "data" / "job.1.myfmt").is_file()
    python = _venv_on_top_of_this_one(tmp_path / "venv")
    env = dict(os.environ)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "-e", str(dist)], check=True, env=env, cwd=tmp_path)
    r = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore"],
                       cwd=dist, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "7 passed" in r.stdout
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if Path(ruff).exists():
        lint = subprocess.run([ruff, "check", "--isolated", "--line-length", "120", "--select", "E,F,W,I,B", "."],
                              cwd=dist, capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout


@pytest.mark.parametrize("name, message", [("9x", "want 1-40 lower-case letters"),
                                           ("My-Fmt", "want 1-40 lower-case letters"),
                                           ("class", "is a Python keyword: choose another"),
                                           ("core", "the distribution chakra-core is installed"),
                                           ("et", "an installed plugin registers the format 'et'"),
                                           ("text", "the distribution chakra-text is installed")])
def test_bad_names_are_refused(tmp_path, capsys, name, message):
    assert main(["plugin", "new", name, "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_an_existing_folder_is_kept(tmp_path, capsys):
    (tmp_path / "chakra-myfmt").mkdir()
    (tmp_path / "chakra-myfmt" / "mine.txt").write_text("keep")
    assert main(["plugin", "new", "myfmt", "--dir", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "chakra-myfmt" / "mine.txt").read_text() == "keep"
    assert sorted(p.name for p in (tmp_path / "chakra-myfmt").iterdir()) == ["mine.txt"]
