"""The core without its extras: reading, writing, validating and converting work; a command that
needs an extra names it.  The extras' modules are hidden from a subprocess (None in
``sys.modules``), as in a fresh environment where only ``pip install chakra-core chakra-pytorch`` ran."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DDP = ROOT / "plugins" / "chakra-pytorch" / "tests" / "data" / "ddp"
#: extra -> the distributions it brings that the core must run without
EXTRAS = {"analysis": ("scipy", "pandas", "matplotlib", "plotly", "perfetto"), "fast": ("numba", "llvmlite"),
          "tables": ("pyarrow",)}

HIDE = '''
import sys
for name in sys.argv[1].split(","):  # None in sys.modules: import fails, importlib.util.find_spec gives None
    sys.modules[name] = None
from chakra_core.cli.main import main
raise SystemExit(main(sys.argv[2:]))
'''


def _bare(*args) -> subprocess.CompletedProcess:
    hidden = ",".join(m for modules in EXTRAS.values() for m in modules)
    return subprocess.run([sys.executable, "-c", HIDE, hidden, *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_the_core_needs_none_of_its_extras():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {dep.split(">")[0].split("=")[0].split("<")[0].strip() for dep in project["dependencies"]}
    assert not names & {m for modules in EXTRAS.values() for m in modules}
    extras = project["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        assert {d.split(">")[0] for d in extras[extra]} >= set(modules) - {"llvmlite"}
    assert extras["full"] == ["chakra-core[analysis,fast,tables]"]


def test_convert_and_validate_without_extras_and_the_extra_named(tmp_path):
    r = _bare("convert", DDP, "-o", tmp_path / "et/")
    assert r.returncode == 0, r.stderr
    r = _bare("validate", tmp_path / "et/")
    assert (r.returncode, r.stdout) == (0, "OK: 2 rank(s), 0 error(s), 0 warning(s)\n"), r.stderr
    r = _bare("report", tmp_path / "et/", "-o", tmp_path / "r.html")
    assert (r.returncode, r.stderr) == (2, "chakra report: error: chakra report needs plotly, which is not "
                                           "installed: pip install 'chakra-core[analysis]'\n")
    r = _bare("compare", tmp_path / "et/", tmp_path / "et/")
    assert r.returncode == 2 and "pip install 'chakra-core[analysis]'" in r.stderr
    r = _bare("sweep", ROOT / "examples" / "sweep" / "pipeline.yaml", "-o", tmp_path / "sweep")
    assert r.returncode == 2 and "needs pyarrow, which is not installed: pip install 'chakra-core[tables]'" in r.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "sweep").exists()


def test_the_compiled_reader_names_its_extra():
    code = HIDE.replace("from chakra_core.cli.main import main\nraise SystemExit(main(sys.argv[2:]))",
                        "from chakra_core.base._kernels import compiled\n"
                        "from chakra_core.io._wirekernels import walk_nodes\ncompiled(walk_nodes)")
    r = subprocess.run([sys.executable, "-c", code, "numba,llvmlite"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "numba is needed for this and is not installed" in r.stderr
    assert "pip install 'chakra-core[fast]'" in r.stderr


def test_the_sweep_api_names_its_extra_before_running_a_point(tmp_path):
    code = HIDE.replace("from chakra_core.cli.main import main\nraise SystemExit(main(sys.argv[2:]))",
                        "import chakra_core\ntry:\n    chakra_core.sweep(sys.argv[2], sys.argv[3])\n"
                        "except chakra_core.ConfigError as e:\n    print(e)")
    r = subprocess.run([sys.executable, "-c", code, "pyarrow", str(ROOT / "examples" / "sweep" / "pipeline.yaml"),
                        str(tmp_path / "sweep")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "pyarrow is needed for this and is not installed" in r.stdout
    assert "pip install 'chakra-core[tables]'" in r.stdout
    assert not (tmp_path / "sweep").exists()
