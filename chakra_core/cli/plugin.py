"""``chakra plugin new NAME [--dir DIR]``: start a plugin distribution from the bundled template.

It writes ``DIR/chakra-NAME/``: a pyproject with the ``chakra`` entry point, a package with an
input format (``NAME``), a simulator (``NAME_sim``) and a transform (``NAME_scale``), sample
input and tests that pass as written (``pip install -e '.[test]' && pytest``).  The folder is
built beside its target and renamed into place, so it is whole or absent.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from chakra_core.cli._common import print_json

#: the template: files ending in ``.tmpl``, ``{{name}}``-style fields in their names and text
TEMPLATE = Path(__file__).with_name("plugin_template")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def add_arguments(p) -> None:
    """Arguments of ``plugin``."""
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    new = actions.add_parser("new", help="write a new plugin distribution chakra-NAME from the template")
    new.add_argument("name", metavar="NAME", help="the plugin's name: lower-case letters, digits, '_' (e.g. myfmt)")
    new.add_argument("--dir", default=".", metavar="DIR", help="folder to create chakra-NAME in (default: .)")
    new.add_argument("--json", action="store_true", help="print what was written as JSON")


def fields(name: str) -> dict[str, str]:
    """The template's fields for plugin ``name``; ConfigError for a name that cannot be a package."""
    from chakra_core.base._errors import ConfigError

    if not _NAME.fullmatch(name):
        raise ConfigError(f"plugin name {name!r}: want 1-40 lower-case letters, digits or '_', starting "
                          "with a letter (it names the package chakra_NAME and the format NAME)")
    if keyword.iskeyword(name):
        raise ConfigError(f"plugin name {name!r} is a Python keyword: choose another")
    return {"name": name, "dist": "chakra-" + name.replace("_", "-"), "pkg": "chakra_" + name,
            "cls": "".join(part.capitalize() for part in name.split("_"))}


def _fill(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], text)


def render(values: dict[str, str]) -> dict[str, str]:
    """``{relative path: text}`` of the new distribution for the given fields."""
    out = {}
    for src in sorted(TEMPLATE.rglob("*.tmpl")):
        rel = src.relative_to(TEMPLATE).as_posix()[: -len(".tmpl")]
        rel = _fill(re.sub(r"^pkg/", values["pkg"] + "/", rel), values)
        out[rel] = _fill(src.read_text(encoding="utf-8"), values)
    return out


def write_plugin(name: str, directory: str | Path) -> tuple[Path, list[str]]:
    """Write the distribution for ``name`` under ``directory``; ConfigError when it exists."""
    from chakra_core.base._errors import ConfigError
    from chakra_core.io._publish import output_directory

    values = fields(name)
    _refuse_taken(name, values)
    target = Path(directory) / values["dist"]
    if target.exists() or target.is_symlink():
        raise ConfigError("already exists: give another NAME or --dir", str(target))
    files = render(values)
    with output_directory(target, marker=False) as stage:
        for rel, text in files.items():
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage / rel).write_text(text, encoding="utf-8")
    return target, sorted(files)


def _refuse_taken(name: str, values: dict[str, str]) -> None:
    """ConfigError when the new plugin's distribution or package is installed already, or an
    installed plugin registers one of its names (installing it would replace or shadow that)."""
    import importlib.metadata
    import importlib.util

    from chakra_core.base._errors import ConfigError
    from chakra_core.host._plugins import get_host

    try:
        importlib.metadata.distribution(values["dist"])
        taken = f"the distribution {values['dist']} is installed"
    except importlib.metadata.PackageNotFoundError:
        taken = f"the package {values['pkg']} is installed" if importlib.util.find_spec(values["pkg"]) else ""
    registry = get_host().registry
    for kind, what in (("format", name), ("backend", f"{name}_sim"), ("transform", f"{name}_scale")):
        if not taken and what in registry.names(kind):
            taken = f"an installed plugin registers the {kind} {what!r}"
    if taken:
        raise ConfigError(f"plugin name {name!r}: {taken}; choose another NAME")


def run(args) -> int:
    """Write the new plugin and say how to install and test it."""
    target, files = write_plugin(args.name, args.dir)
    if args.json:
        print_json({"path": str(target), "files": files})
        return 0
    print(f"wrote {target}/ ({len(files)} files): format {args.name}, simulator {args.name}_sim, "
          f"transform {args.name}_scale")
    print(f"next: cd {target} && pip install -e '.[test]' && pytest")
    return 0
