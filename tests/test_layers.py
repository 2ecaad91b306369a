"""The core's folders are its layers: imports go downward only, and no module imports itself back.

Every import statement counts, also those inside functions and under ``TYPE_CHECKING``: a lazy
import is still a dependency of the importer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import chakra_core

CORE = Path(chakra_core.__file__).parent

# lowest first; a module may import its own layer and those before it
LAYERS = ["base", "io", "trace", "system", "validation", "host", "analysis", "pipeline", "sweeps",
          "builtin", "cli"]
# modules outside the layer folders: the hooks are the plugin host's public face (they import
# nothing); the package facade and the pytest kit stand above everything
PLACED = {"chakra_core.hookspecs": "host", "chakra_core": "top", "chakra_core.testing": "top"}
# (importer, imported) pairs allowed to go upward: none
ALLOWED: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for path in CORE.rglob("*.py"):
        rel = path.relative_to(CORE.parent).with_suffix("")
        if "_proto" in rel.parts:
            continue
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The core modules ``module`` imports: ``from X import Y`` counts Y when it is a module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, module, path.name == "__init__.py")
            subs = {f"{target}.{a.name}" for a in node.names} & known
            found |= subs or ({target} & known)
    found.discard(module)
    return found


def _layer(module: str) -> str:
    if module in PLACED:
        return PLACED[module]
    return module.split(".")[1]


def _rank(layer: str) -> int:
    return len(LAYERS) if layer == "top" else LAYERS.index(layer)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: _imports(m, p, set(mods)) for m, p in mods.items()}


def test_every_module_is_in_a_layer(graph: dict[str, set[str]]) -> None:
    stray = [m for m in graph if _layer(m) not in (*LAYERS, "top")]
    assert not stray, f"modules outside the layer folders: {stray}"


def test_imports_go_downward_only(graph: dict[str, set[str]]) -> None:
    upward = sorted((m, t) for m, ts in graph.items() for t in ts
                    if _rank(_layer(t)) > _rank(_layer(m)) and (m, t) not in ALLOWED)
    assert not upward, "upward imports:\n" + "\n".join(f"{m} -> {t}" for m, t in upward)


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    import networkx as nx

    g = nx.DiGraph([(m, t) for m, ts in graph.items() for t in ts])
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_layer_names_do_not_shadow_public_names() -> None:
    # importing chakra_core.X binds X on the package: a layer named like a public function
    # (validate, sweep, report ...) would replace it
    assert not set(LAYERS) & set(chakra_core.__all__)


def test_every_layer_is_in_the_architecture_doc() -> None:
    text = (CORE.parent / "docs" / "architecture.md").read_text()
    missing = [layer for layer in LAYERS if f"`{layer}/`" not in text]
    assert not missing, f"docs/architecture.md does not describe {missing}"
