"""The pipeline schema: schema/pipeline.schema.json is what the loader checks, every pipeline of the
repository passes it, and a bad document fails with one line naming the file, the line and the key."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft7Validator, Draft202012Validator

from chakra_core.base._docpath import parse_path
from chakra_core.base._errors import ConfigError
from chakra_core.pipeline._document import check_pipeline
from chakra_core.pipeline._pipeline import load_pipeline
from chakra_core.pipeline._schema import SYSTEM_HELP
from chakra_core.sweeps._schema import PATH_PATTERN, full_schema
from chakra_core.system._keys import SYSTEM_KEYS
from chakra_core.system._load import OUR_KEYS

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "schema" / "pipeline.schema.json"
#: the pipelines of examples/ (the system files beside them are not pipelines)
EXAMPLES = ["examples/quickstart/pipeline.yaml", "examples/sweep/pipeline.yaml", "examples/sweep/algorithms.yaml",
            "examples/system/simulate_text.yaml"]


def _generator():
    spec = importlib.util.spec_from_file_location("pipeline_schema", ROOT / "schema" / "pipeline_schema.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_schema_is_the_loaders():
    assert SCHEMA_FILE.read_text() == _generator().render(), "run: python schema/pipeline_schema.py"


def test_the_schema_is_a_draft_2020_12_schema_with_help_on_every_key():
    schema = json.loads(SCHEMA_FILE.read_text())
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"

    def keys(node, path=()):
        for name, sub in node.get("properties", {}).items():
            yield (*path, name), sub
            yield from keys(sub, (*path, name))
        for part in ("items", "additionalProperties"):
            if isinstance(node.get(part), dict):
                yield from keys(node[part], (*path, part))

    described = dict(keys(schema))
    assert all(sub.get("description") for sub in described.values()), \
        [p for p, sub in described.items() if not sub.get("description")]
    assert list(schema["properties"]) == ["requires", "prefer", "input", "transforms", "backends", "validate",
                                          "system", "sweep"]
    assert list(schema["properties"]["sweep"]["properties"]) == ["grid", "random", "derive", "constraints",
                                                                 "timeout_s"]


def test_system_help_covers_exactly_the_system_loaders_keys():
    assert set(SYSTEM_HELP) == set(OUR_KEYS) | set(SYSTEM_KEYS)
    described = set(json.loads(SCHEMA_FILE.read_text())["properties"]["system"]["properties"])
    files = [p for p in sorted((ROOT / "examples" / "system").glob("*.yaml")) if str(p.relative_to(ROOT)) not in EXAMPLES]
    systems = {p.name: yaml.safe_load(p.read_text()) for p in files}
    systems.update({rel: yaml.safe_load((ROOT / rel).read_text()).get("system") for rel in EXAMPLES})
    systems = {name: s for name, s in systems.items() if s}
    assert len(systems) == 6, sorted(systems)  # four system files, the two sweep examples' inline ones
    for name, system in systems.items():
        used = {str(k).replace("_", "-") for k in system}
        assert used <= described, (name, used - described)


@pytest.mark.parametrize("rel", EXAMPLES)
def test_every_example_pipeline_passes_and_names_the_schema_for_editors(rel):
    text = (ROOT / rel).read_text()
    data = yaml.safe_load(text)
    assert check_pipeline(data, rel, None, full_schema()) is data
    modeline = re.match(r"# yaml-language-server: \$schema=(\S+)\n", text)
    assert modeline and ((ROOT / rel).parent / modeline.group(1)).resolve() == SCHEMA_FILE


def test_only_the_listed_examples_are_pipelines():
    found = {str(p.relative_to(ROOT)) for p in (ROOT / "examples").rglob("*.y*ml")
             if isinstance(doc := yaml.safe_load(p.read_text()), dict) and {"backends", "sweep"} & set(doc)}
    assert found == set(EXAMPLES)


def _doc_blocks():
    """Fenced YAML blocks of docs/*.md whose keys are all pipeline keys: (file:line, block)."""
    keys = set(full_schema()["properties"])
    for md in sorted((ROOT / "docs").glob("*.md")):
        text = md.read_text()
        for m in re.finditer(r"```ya?ml\n(.*?)```", text, re.S):
            block = yaml.safe_load(m.group(1))
            if isinstance(block, dict) and set(block) <= keys:
                yield f"{md.name}:{text.count(chr(10), 0, m.start()) + 1}", block


def test_every_pipeline_block_of_the_docs_passes():
    blocks = dict(_doc_blocks())
    assert len(blocks) == 7, sorted(blocks)
    properties = full_schema()["properties"]
    for where, block in blocks.items():
        for key, value in block.items():
            errors = [e.message for e in Draft202012Validator(properties[key]).iter_errors(value)]
            assert errors == [], (where, key, errors)
        if {"input", "backends"} <= set(block):
            check_pipeline(block, where, None, full_schema())


@pytest.mark.parametrize("text, expected", [
    ("system.network[0].bandwidth", True), ("backends.simpy.options.streams", True), ("a[0][1]", True),
    ("a[-1].b", True), ("a.[0]", True), ("a[0]b", True), ("system.all-reduce-implementation", True),
    ("a..b", False), ("a.", False), (".a", False), ("[0].a", False), ("a[x]", False), ("a]", False),
    ("a[0", False), ("", False),
])
def test_the_path_pattern_is_parse_paths_grammar(text, expected):
    assert (re.search(PATH_PATTERN, text) is not None) is expected
    try:
        parse_path(text)
        parsed = True
    except ConfigError:
        parsed = False
    assert parsed is expected


BAD = [
    # an unknown key at the top level
    ("run", "input:\n  paths: [job]\ninputs: {}\nbackends:\n  - name: et\n",
     "line 3: unknown key 'inputs' in the pipeline (did you mean 'input'?); allowed: requires, prefer, "
     "input, transforms, backends, validate, system, sweep"),
    # an unknown key in a backend
    ("run", "input:\n  paths: [job]\nbackends:\n  - name: et\n    outptu: o\n",
     "line 5: unknown key 'outptu' in backends[0] (did you mean 'output'?); allowed: name, options, "
     "output, validate"),
    # a nested value of the wrong type
    ("run", "input:\n  paths: [job]\nbackends:\n  - name: et\n  - name: json\n    output: 5\n",
     "line 6: backends[1].output must be a string, got 5"),
    ("run", "input:\n  paths: [job]\ntransforms:\n  - name: scale\n    options: [2]\nbackends: [{name: et}]\n",
     "line 5: transforms[0].options must be a mapping, got a list"),
    ("run", "input:\n  paths: []\nbackends: [{name: et}]\n",
     "line 2: input.paths must be a string or a non-empty list, got an empty list"),
    ("run", "input:\n  paths: [job]\nbackends:\n  - options: {}\n",
     "line 4: backends[0] needs 'name'"),
    # sweeps with a bad axis
    ("sweep", "input: {paths: [job]}\nbackends: [{name: et}]\nsweep:\n  grid:\n"
              "    system.network[0].bandwidth: [25, 50]\n    system.network[0]..latency: [1, 2]\n",
     "line 6: sweep.grid: 'system.network[0]..latency' is not a path of dotted keys "
     "(e.g. system.network[0].bandwidth)"),
    ("sweep", "input: {paths: [job]}\nbackends: [{name: et}]\nsweep:\n  grid:\n    system.network[0].bandwidth: 50\n",
     "line 5: sweep.grid.system.network[0].bandwidth must be a non-empty list, got 50"),
    ("sweep", "input: {paths: [job]}\nbackends: [{name: et}]\nsweep:\n  random:\n    count: 4\n    params:\n"
              "      transforms.scale.options.compute_speedup: {low: 1, hihg: 4}\n",
     "line 7: unknown key 'hihg' in sweep.random.params.transforms.scale.options.compute_speedup "
     "(did you mean 'high'?); allowed: low, high, log, integer"),
    ("sweep", "input: {paths: [job]}\nbackends: [{name: et}]\nsweep:\n  grid: {a: [1]}\n  timeout_s: 0\n",
     "line 5: sweep.timeout_s must be > 0, got 0"),
    # a number that PyYAML (YAML 1.1) reads as text: how to write it so that it is one
    ("sweep", "input: {paths: [job]}\nbackends: [{name: et}]\nsweep:\n  random:\n    count: 2\n    params:\n"
              "      input.options.npus: {low: 1, high: 1e30, integer: true}\n",
     "line 7: sweep.random.params.input.options.npus.high must be a number, got '1e30' "
     "(YAML reads 1e30 as text: write it 1.0e+30, with a dot and a signed exponent)"),
    ("sweep", "input: {paths: [job]}\nbackends: [{name: et}]\nsweep:\n  grid: {a: [1]}\n  timeout_s: '30'\n",
     "line 5: sweep.timeout_s must be a number, got '30' (write numbers unquoted: 30)"),
]


@pytest.mark.parametrize("command, text, message", BAD)
def test_bad_documents_are_one_located_line_with_exit_status_2(tmp_path, chakra_cli, command, text, message):
    (tmp_path / "p.yaml").write_text(text)
    status, out, err = chakra_cli(command, tmp_path / "p.yaml", *(["--check"] if command == "sweep" else []))
    assert (status, out) == (2, "")
    assert err == f"chakra {command}: error: {tmp_path / 'p.yaml'}:{message}\n"


def test_a_mapping_is_checked_the_same_without_lines(chakra_host):
    with pytest.raises(ConfigError) as caught:
        load_pipeline({"input": {"paths": ["job"]}, "backends": [{"name": "et", "validate": "no"}]})
    assert str(caught.value) == "<pipeline>: backends[0].validate must be true or false, got 'no'"


def test_editors_on_draft_07_judge_documents_alike():
    """The YAML language server implements draft-07: the schema uses only keywords that mean the
    same there, so it accepts and refuses the same documents."""
    schema = {k: v for k, v in json.loads(SCHEMA_FILE.read_text()).items() if k != "$schema"}
    Draft7Validator.check_schema(schema)
    docs = [yaml.safe_load((ROOT / rel).read_text()) for rel in EXAMPLES]
    docs += [yaml.safe_load(text) for _, text, _ in BAD]
    verdicts = [(Draft7Validator(schema).is_valid(d), Draft202012Validator(schema).is_valid(d)) for d in docs]
    assert verdicts == [(True, True)] * len(EXAMPLES) + [(False, False)] * len(BAD)


def test_a_keyword_without_its_own_wording_still_gives_one_located_line(tmp_path):
    from chakra_core.pipeline._document import read_document

    (tmp_path / "p.yaml").write_text("input:\n  format: txet\n")
    schema = {"type": "object", "properties": {"input": {"properties": {"format": {"enum": ["text", "et"]}}}}}
    data, source, lines = read_document(tmp_path / "p.yaml")
    with pytest.raises(ConfigError) as caught:
        check_pipeline(data, source, lines, schema)
    assert str(caught.value) == f"{tmp_path / 'p.yaml'}:line 2: input.format: 'txet' is not one of ['text', 'et']"


@pytest.mark.parametrize("command", [["--help"], ["plugins"]])
def test_commands_that_load_no_pipeline_do_not_import_jsonschema(command):
    code = ("import contextlib, io, sys\nfrom chakra_core.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try:\n        main({command!r})\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jsonschema', 'referencing')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
