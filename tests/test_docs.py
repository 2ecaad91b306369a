"""Docs stay true: every hook is documented, tutorial code is the tested example plugin, and
the example plugin, installed with pip, is found by ``chakra plugins`` and runs in a pipeline."""

from __future__ import annotations

import csv
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from chakra_core import hookspecs

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _hooks():
    return sorted(n for n in dir(hookspecs) if n.startswith("chakra_") and callable(getattr(hookspecs, n)))


@pytest.mark.parametrize("hook", _hooks())
def test_hook_is_documented(hook):
    text = (DOCS / "hooks.md").read_text()
    assert re.search(rf"^## {hook}$", text, re.M), f"docs/hooks.md lacks a '## {hook}' section"
    assert getattr(hookspecs, hook).__doc__, f"{hook} has no docstring"


@pytest.mark.parametrize("hook", _hooks())
def test_documented_signature_is_the_hookspecs(hook):
    text = (DOCS / "hooks.md").read_text()
    section = text.split(f"\n## {hook}\n", 1)[1].split("\n## ", 1)[0]
    documented = re.search(rf"`{hook}\(([^)]*)\)", section)
    assert documented, f"the '## {hook}' section does not show `{hook}(...)`"
    names = [a.strip() for a in documented.group(1).split(",") if a.strip()]
    assert names == list(inspect.signature(getattr(hookspecs, hook)).parameters)


def test_every_hookspec_is_found():
    assert len(_hooks()) == 9


def test_tutorial_code_is_the_example_source():
    text = (DOCS / "plugin-tutorial.md").read_text()
    includes = re.findall(r"<!-- include: (\S+) -->\n```\w+\n(.*?)```", text, re.S)
    assert len(includes) == 5
    for rel, code in includes:
        assert (DOCS / rel).read_text() == code, rel


def _chakra(env, *args):
    return subprocess.run([sys.executable, "-m", "chakra_core.cli.main", *map(str, args)],
                          capture_output=True, text=True, env=env)


def test_example_plugin_is_listed(installed_example):
    r = _chakra(installed_example, "plugins", "--json")
    assert r.returncode == 0, r.stderr
    plugins = {p["name"]: p for p in json.loads(r.stdout)["plugins"]}
    ex = plugins["example"]
    assert ex["distribution"] == "chakra-example-plugin" and ex["version"] == "0.1.0"
    assert ex["registered"] == {"backend": ["csv"], "format": ["opslist"], "transform": ["hide_names"]}
    assert ex["error"] is None


def test_example_plugin_runs_in_a_pipeline(installed_example, tmp_path, dp_set):
    dp_set.write(tmp_path / "job")
    (tmp_path / "p.yaml").write_text(
        "requires: ['chakra-example-plugin>=0.1']\n"
        "input: {paths: [job]}\n"
        "transforms: [{name: hide_names, options: {salt: s3cret}}]\n"
        "backends: [{name: csv, output: out/csv}]\n")
    r = _chakra(installed_example, "run", tmp_path / "p.yaml")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(tmp_path / "out/csv/nodes.csv")))
    assert len(rows) == 22
    assert all(re.fullmatch(r"op_[0-9a-f]{12}", row["name"]) for row in rows)
    assert {row["comm_size_bytes"] for row in rows if row["type"] == "COMM_COLL_NODE"} == {"4096", "8192", "12288"}


def test_example_input_format(installed_example, tmp_path):
    (tmp_path / "job.1.ops").write_text("# name duration_us deps\nload 5\ncompute 20 2\nstore 3 3\n")
    r = _chakra(installed_example, "convert", tmp_path / "job.1.ops", "-O", "scale_us=2", "-o", f"{tmp_path}/et/")
    assert r.returncode == 0, r.stderr
    r = _chakra(installed_example, "stats", tmp_path / "et", "--json")
    s = json.loads(r.stdout)
    assert s["per_rank"][0]["rank"] == 1 and s["longest_path_us"] == 2 * (5 + 20 + 3)
    (tmp_path / "bad.ops").write_text("load five\n")
    r = _chakra(installed_example, "validate", tmp_path / "bad.ops")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "bad.ops:line 1" in r.stderr
