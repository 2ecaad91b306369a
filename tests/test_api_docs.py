"""The API reference cannot drift from the code.

Rule for "documented": a doc's *name tables* are its markdown tables whose header row is
``| name | what it is |``.  A public name is documented when a row of a name table names it in
its first cell, as a code span that is the name alone or the name followed by ``(``, ``.``,
``[`` or a space (```critical_path(spans)```, ```DepGraph.build(...)```), and the row's second
cell describes it in at least three words.  Conversely, every code span that opens a first cell
of a name table names a public name, so a removed name cannot stay documented.

Public signatures show public types only: the resolved annotations of every public function,
class constructor and public method or property of a public class name, besides builtins and
other libraries' types, only objects exported by a public module of the core.  Docstrings of
public names and the user docs never send a reader to a private module.
"""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path

import pytest

import chakra_core
import chakra_core.hookspecs
import chakra_core.system
import chakra_core.testing

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: each public namespace and the doc that must describe every name of its ``__all__``
DOCUMENTED = {chakra_core: "api.md", chakra_core.system: "system.md"}
PUBLIC_MODULES = (chakra_core, chakra_core.system, chakra_core.hookspecs, chakra_core.testing)
NAME_HEADER = re.compile(r"^\|\s*name\s*\|\s*what it is\s*\|\s*$")
SPAN = re.compile(r"`([^`]+)`")
LEADING_NAME = re.compile(r"[A-Za-z_]\w*")
#: a dotted reference to a private module of the core, e.g. ``chakra_core.host._api``
PRIVATE_REF = re.compile(r"chakra_core(?:\.\w+)*\._\w+")


def _cells(line: str) -> list[str]:
    """The cells of a markdown table row, with ``|`` inside code spans kept in their cell."""
    cells, cur, in_code = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*cells, cur.strip()]


def name_rows(text: str) -> list[tuple[str, str]]:
    """``(first cell, second cell)`` of every row of every name table of a markdown text."""
    rows, in_table = [], False
    for line in text.splitlines():
        if NAME_HEADER.match(line):
            in_table = True
        elif in_table and line.startswith("|"):
            cells = _cells(line)
            if not set(cells[0]) <= set("-: "):
                rows.append((cells[0], cells[1] if len(cells) > 1 else ""))
        else:
            in_table = False
    return rows


def documented_names(text: str) -> dict[str, str]:
    """Name -> description for every name a name table documents (the rule above)."""
    out: dict[str, str] = {}
    for first, description in name_rows(text):
        for span in SPAN.findall(first):
            m = LEADING_NAME.match(span)
            if m and (m.end() == len(span) or span[m.end()] in "(.[ "):
                out.setdefault(m.group(), description)
    return out


def _documented_cases():
    return [(mod.__name__, doc, name) for mod, doc in DOCUMENTED.items() for name in mod.__all__]


@pytest.mark.parametrize(("module", "doc", "name"), _documented_cases())
def test_public_name_is_documented(module, doc, name):
    found = documented_names((DOCS / doc).read_text())
    assert name in found, f"docs/{doc} has no name-table row for {module}.{name}"
    assert len(found[name].split()) >= 3, f"docs/{doc}: the row of {name} describes it in fewer than 3 words"


@pytest.mark.parametrize(("module", "doc"), list(DOCUMENTED.items()), ids=list(DOCUMENTED.values()))
def test_documented_names_are_public(module, doc):
    stale = sorted(set(documented_names((DOCS / doc).read_text())) - set(module.__all__))
    assert not stale, f"docs/{doc} documents names {module.__name__} does not export: {stale}"


def test_the_rule_reads_rows_as_documented():
    text = ("| name | what it is |\n|---|---|\n| `a(x)`, `B.m()` | the first thing, in ns |\n"
            "| `c` | c |\n| `d_e[0]` | `|` inside a span stays in the cell |\n\n"
            "| key | what |\n|---|---|\n| `f` | not a name table at all |\n")
    assert documented_names(text) == {"a": "the first thing, in ns", "B": "the first thing, in ns", "c": "c",
                                      "d_e": "`|` inside a span stays in the cell"}


# -- public signatures show public types -------------------------------------------------------------

def _exported_objects() -> set[int]:
    return {id(getattr(mod, name)) for mod in PUBLIC_MODULES for name in mod.__all__}


def _private_types(annotation: object, public: set[int]) -> set[str]:
    """The core's types named by ``annotation`` (recursively) that no public module exports."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return set()
    if origin is not None:
        found = set().union(*(_private_types(a, public) for a in typing.get_args(annotation)))
        return found | _private_types(origin, public)
    if isinstance(annotation, list):  # Callable's argument list
        return set().union(*(_private_types(a, public) for a in annotation))
    module = getattr(annotation, "__module__", None) or ""
    if module.split(".")[0] != "chakra_core" or id(annotation) in public:
        return set()
    return {f"{module}.{getattr(annotation, '__qualname__', annotation)}"}


def _public_callables(module) -> list[tuple[str, object]]:
    """``(label, function)`` for every public function, constructor, and public method or
    property of a public class (inherited ones from the core included) of ``module``."""
    out = []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj):
            out.append((name, obj.__init__))
            for attr in dir(obj):
                raw = inspect.getattr_static(obj, attr)
                fn = getattr(raw, "fget", None) or getattr(raw, "__func__", None) or raw
                owner = getattr(fn, "__module__", None) or ""
                if not attr.startswith("_") and inspect.isfunction(fn) and owner.startswith("chakra_core"):
                    out.append((f"{name}.{attr}", fn))
        elif inspect.isfunction(inspect.unwrap(obj)):  # a pytest fixture wraps its function
            out.append((name, inspect.unwrap(obj)))
    return out


def _signature_cases():
    return [pytest.param(fn, id=f"{mod.__name__}.{label}") for mod in PUBLIC_MODULES
            for label, fn in _public_callables(mod)]


@pytest.mark.parametrize("fn", _signature_cases())
def test_public_signature_shows_public_types(fn):
    hints = typing.get_type_hints(fn)
    private = sorted(set().union(*(_private_types(t, _exported_objects()) for t in hints.values())))
    assert not private, f"{fn.__qualname__} names private types: {private}"


def test_a_private_type_is_caught():
    from chakra_core.host._registry import Registry

    assert _private_types(list[Registry] | None, _exported_objects()) == {"chakra_core.host._registry.Registry"}
    assert _private_types(typing.Callable[[chakra_core.Node], int], _exported_objects()) == set()


def test_every_public_namespace_has_signatures_checked():
    ids = [p.id for p in _signature_cases()]
    for mod in PUBLIC_MODULES:
        assert any(i.startswith(mod.__name__ + ".") for i in ids), mod.__name__
    assert len(ids) > 250


# -- no reader is sent to a private module ------------------------------------------------------------

def _docstrings() -> list[tuple[str, str]]:
    docs = [(mod.__name__, mod.__doc__ or "") for mod in PUBLIC_MODULES[1:]]
    for mod in PUBLIC_MODULES:
        for name in mod.__all__:
            docs.append((f"{mod.__name__}.{name}", inspect.getdoc(getattr(mod, name)) or ""))
        docs += [(f"{mod.__name__}.{label}", inspect.getdoc(fn) or "") for label, fn in _public_callables(mod)]
    return docs


def test_public_docstrings_name_no_private_module():
    found = [f"{where}: {m}" for where, doc in _docstrings() for m in PRIVATE_REF.findall(doc)]
    assert not found, found


def _user_texts() -> list[Path]:
    """The READMEs, the docs (but docs/architecture.md, which names the private modules: that
    is its purpose) and the sources of the plugins and adapters, which plugin authors copy."""
    docs = [p for p in DOCS.rglob("*.md") if p.name != "architecture.md"]
    outside = [p for top in ("plugins", "adapters") for ext in ("*.py", "*.md") for p in (ROOT / top).rglob(ext)]
    return sorted([ROOT / "README.md", *docs, *outside])


def test_user_docs_and_plugins_name_no_private_module():
    found = [f"{p.relative_to(ROOT)}: {m}" for p in _user_texts() for m in PRIVATE_REF.findall(p.read_text())]
    assert not found, found


# -- the documented critical-path keys are the computed ones ------------------------------------------

#: a DDP step on 2 gloo ranks, recorded by plugins/chakra-pytorch/recording/record_ddp.py
DDP = ROOT / "plugins/chakra-pytorch/tests/data/ddp"
#: rows of the to_dict table whose description lists the keys of each value (or of each item)
KEYED_ROWS = ("ns_by_category", "top", "nodes")


def documented_to_dict() -> dict[str, str]:
    """Key -> description of the table under docs/api.md's ``CriticalPath.to_dict`` heading."""
    text = (DOCS / "api.md").read_text()
    section = re.split(r"^### `CriticalPath\.to_dict\(.*$", text, flags=re.M)[1].split("\n#", 1)[0]
    rows = [_cells(line) for line in section.splitlines() if line.startswith("| `")]
    return {SPAN.fullmatch(first).group(1): description for first, description in rows}


@pytest.fixture(scope="module")
def ddp_critical_path():
    pytest.importorskip("chakra_pytorch")
    pytest.importorskip("chakra_simpy")
    result = chakra_core.simulate(str(DDP), options={"spans": True})
    path = chakra_core.critical_path(result.spans)
    return result, path.to_dict(result.spans)


def test_documented_critical_path_keys_are_computed(ddp_critical_path):
    result, real = ddp_critical_path
    documented = documented_to_dict()
    assert list(documented) == list(real)
    for key in KEYED_ROWS:
        value = real[key]
        keys = value if isinstance(value, dict) else value[0]
        assert SPAN.findall(documented[key]) == list(keys), key
    assert real["finish_ns"] == result.summary["finish_ns"] == sum(real["ns_by_category"].values())
    assert real["shown"] == len(real["nodes"]) == min(real["length"], 200)


def test_report_gives_the_critical_path_to_dict(ddp_critical_path):
    _, real = ddp_critical_path
    report = chakra_core.report(str(DDP)).to_dict()["critical_path"]
    assert report == real
