"""The public API is the boundary: our plugins and adapters import only what a third party may.

Every import in plugins/, adapters/ and the example plugin in docs/examples/ (code and tests, at
any depth) is parsed.  From
chakra_core only the facade and its public subpackages may be imported, and only names in their
``__all__``; from another first-party distribution only its top-level package's ``__all__``.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import chakra_core

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_CORE = {"chakra_core", "chakra_core.system", "chakra_core.hookspecs", "chakra_core.testing"}


def _distributions(*patterns: str) -> dict[Path, set[str]]:
    """Each distribution directory matching ``patterns`` -> the top-level packages it ships."""
    dists: dict[Path, set[str]] = {}
    for d in sorted(d for pattern in patterns for d in ROOT.glob(pattern)):
        if (d / "pyproject.toml").is_file():
            dists[d] = {p.parent.name for p in d.glob("*/__init__.py")}
    return dists


OURS = _distributions("plugins/*", "adapters/*")
DISTS = {**OURS, **_distributions("docs/examples/*")}
FIRST_PARTY = set().union(*DISTS.values())


def _exports(module: str) -> set[str]:
    return set(getattr(importlib.import_module(module), "__all__", ()))


def _check(module: str, names: list[str], own: set[str]) -> list[str]:
    """Why importing ``names`` from ``module`` is not public API (empty when it is)."""
    top = module.split(".")[0]
    if top == "chakra_core":
        if module not in PUBLIC_CORE:
            return [f"{module} is a private module of chakra_core"]
    elif top in FIRST_PARTY and top not in own:
        if module != top:
            return [f"{module} is a private module of another plugin (import from {top})"]
    else:
        return []
    exported = _exports(module)
    return [f"{module}.{n} is not in {module}.__all__" for n in names if n != "*" and n not in exported]


def bad_imports(source: str, own: set[str]) -> list[str]:
    """Every non-public import in ``source`` (Python code of a distribution shipping ``own``)."""
    problems: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                problems += [f"line {node.lineno}: {p}" for p in _check(alias.name, [], own)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found = _check(node.module, [a.name for a in node.names], own)
            problems += [f"line {node.lineno}: {p}" for p in found]
    return problems


def _sources() -> list[tuple[Path, set[str]]]:
    return [(f, own) for d, own in DISTS.items() for f in sorted(d.rglob("*.py"))
            if not any(part.endswith(".egg-info") or part == "build" for part in f.parts)]


def test_every_distribution_is_found():
    assert {"chakra_text", "chakra_pytorch", "chakra_simpy", "chakra_astrasim",
            "chakra_astrasim_runner", "chakra_collect", "chakra_example"} <= FIRST_PARTY
    assert len(_sources()) > 50


@pytest.mark.parametrize("path,own", _sources(), ids=lambda v: str(v.relative_to(ROOT)) if isinstance(v, Path) else "")
def test_plugins_import_only_public_names(path, own):
    assert bad_imports(path.read_text(), own) == []


@pytest.mark.parametrize("source,why", [
    ("from chakra_core.io._etio import open_binary", "private module of chakra_core"),
    ("import chakra_core.trace._traceset", "private module of chakra_core"),
    ("from chakra_core.cli.main import main", "private module of chakra_core"),
    ("from chakra_core.system._load import sniff", "private module of chakra_core"),
    ("def f():\n    from chakra_core import PG_ATTR\n", "chakra_core.PG_ATTR is not in chakra_core.__all__"),
    ("from chakra_core.system import nope", "chakra_core.system.nope is not in"),
    ("from chakra_astrasim.runscript import BINARIES", "private module of another plugin"),
    ("from chakra_text import parse", "chakra_text.parse is not in chakra_text.__all__"),
])
def test_a_private_import_is_caught(source, why):
    found = bad_imports(source, {"chakra_simpy"})
    assert len(found) == 1 and why in found[0]


def test_own_modules_and_public_names_pass():
    source = ("from chakra_simpy.engine import Sim\nfrom chakra_core import Node, NodeAttrs\n"
              "from chakra_core.system import load_system\nfrom chakra_astrasim import BINARIES\n"
              "import chakra_core\nimport json\n")
    assert bad_imports(source, {"chakra_simpy"}) == []


def _type_checking_names(path: Path) -> set[str]:
    """Names imported under ``if TYPE_CHECKING:`` in a package's ``__init__.py``."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            names |= {a.asname or a.name for n in node.body if isinstance(n, ast.ImportFrom) for a in n.names}
    return names


@pytest.mark.parametrize("package", ["chakra_core", *sorted(set().union(*OURS.values()) - {"chakra_collect"})])
def test_lazy_names_are_typed_and_resolve(package):
    """Type checkers see each lazily exported name (imported under TYPE_CHECKING), and it resolves."""
    mod = importlib.import_module(package)
    init = Path(mod.__file__)
    exported = set(mod.__all__)
    assert _type_checking_names(init) | {"lazy_getattr", "lazy_exports"} >= exported
    for name in exported:
        assert getattr(mod, name) is not None


@pytest.mark.parametrize("package", ["chakra_core", *sorted(set().union(*OURS.values()))])
def test_packages_ship_py_typed(package):
    init = Path(importlib.import_module(package).__file__)
    assert (init.parent / "py.typed").is_file()


def test_facade_names_come_from_where_they_are_declared():
    assert set(chakra_core.__all__) == set(chakra_core._WHERE)
    assert chakra_core.NodeAttrs.__module__ == "chakra_core.trace._attrs"
    assert chakra_core.hookimpl is importlib.import_module("chakra_core.hookspecs").hookimpl


def test_type_checkers_see_real_types(tmp_path):
    """mypy resolves every facade and ``chakra_core.system`` name to its declared type, not Any."""
    api = pytest.importorskip("mypy.api")
    system = importlib.import_module("chakra_core.system")
    names = [f"chakra_core.{n}" for n in chakra_core.__all__] + [f"chakra_core.system.{n}" for n in system.__all__]
    snippet = tmp_path / "uses_the_facade.py"
    snippet.write_text("import chakra_core\nimport chakra_core.system\n" + "".join(f"reveal_type({n})\n" for n in names))
    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
                                str(ROOT / ".mypy_cache"), str(snippet)])
    revealed = [line.split('Revealed type is "', 1)[1].rstrip('"') for line in out.splitlines() if "Revealed type" in line]
    assert status == 0, out + err
    assert len(revealed) == len(names)
    assert [n for n, t in zip(names, revealed) if t == "Any"] == []
