"""The YAML parser's two loaders (libyaml's scanner under PyYAML's composer, and pure PyYAML) read
every YAML file in the repository to the same document with the same lines."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from chakra_core.base import _yamlparse
from chakra_core.base._errors import ConfigError
from chakra_core.base._limits import get_limit

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(p for p in ROOT.rglob("*.yaml") if ".venv" not in p.parts and ".git" not in p.parts)


def _read(loader: type, text: str) -> tuple:
    doc, lines = _yamlparse._document(loader(text, get_limit("depth")))
    return doc, [lines.line(path) for path in _paths(doc)]


def _paths(doc, prefix=()):
    yield prefix
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield from _paths(v, (*prefix, k))


@pytest.mark.skipif(_yamlparse._FAST_LOADER is None, reason="PyYAML built without libyaml")
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_both_loaders_read_the_same(path):
    text = path.read_text()
    assert _read(_yamlparse._FAST_LOADER, text) == _read(_yamlparse._BoundedLoader, text)


@pytest.mark.skipif(_yamlparse._C_LOADER is None, reason="PyYAML built without libyaml")
@pytest.mark.parametrize("path", [p for p in FILES if _yamlparse._nesting_bound(p.read_text()) <= get_limit("depth")],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_libyamls_composer_reads_a_shallow_file_as_the_python_loader(path):
    text = path.read_text()
    assert _read(_yamlparse._C_LOADER, text) == _read(_yamlparse._BoundedLoader, text)


@pytest.mark.skipif(_yamlparse._C_LOADER is None, reason="PyYAML built without libyaml")
@pytest.mark.parametrize("text", ["a: &x 1\nb: &x 2\nc: *x\n", "---\na: 1\n---\nb: 2\n", "a: !!int abc\n",
                                  "a: !!python/object:os.system x\n"])
def test_libyamls_composer_leaves_errors_to_the_python_loader(text):
    with pytest.raises((yaml.YAMLError, ValueError)):
        _read(_yamlparse._C_LOADER, text)
    with pytest.raises(_yamlparse.ConfigError):
        _yamlparse.parse_yaml(text, "t.yaml")


@pytest.mark.skipif(_yamlparse._FAST_LOADER is None, reason="PyYAML built without libyaml")
@pytest.mark.parametrize("text", ["a: [1, 2\nb: 3\n", "a: " + "[" * 150 + "]" * 150, "x: \x07\n", "a: *nope\n",
                                  "- !!int abc\n", "a: 'open\n"])
def test_the_fast_loader_leaves_errors_to_the_python_one(text):
    with pytest.raises((yaml.YAMLError, ValueError)):
        _read(_yamlparse._FAST_LOADER, text)
    with pytest.raises(_yamlparse.ConfigError):
        _yamlparse.parse_yaml(text, "t.yaml")


def test_a_text_parsed_again_is_a_copy_of_the_first_parse_under_the_same_depth_limit(monkeypatch):
    text = "network:\n  - {topology: Ring, npus_count: 8}\nendpoint-delay: 10\n"
    first, lines = _yamlparse.parse_yaml_lines(text, "a.yaml")
    first["network"][0]["npus_count"] = 16
    again, again_lines = _yamlparse.parse_yaml_lines(text, "b.yaml")
    assert again == {"network": [{"topology": "Ring", "npus_count": 8}], "endpoint-delay": 10}
    assert again_lines.line(["endpoint-delay"]) == 3 and again_lines.line(["network", 0]) == 2
    monkeypatch.setenv("CHAKRA_MAX_DEPTH", "2")
    with pytest.raises(ConfigError, match="nesting depth 3 exceeds the limit of 2"):
        _yamlparse.parse_yaml(text, "c.yaml")
