"""A pytest plugin for plugin authors (loaded automatically: entry point ``pytest11``).

Fixtures:

``chakra_host``        a fresh :class:`chakra_core.PluginHost` installed as the
                       process-wide host for one test (entry points loaded as usual).
``chakra_isolated_host`` the same with the core's built-ins only: no installed plugin is loaded.
``chakra_register``    ``chakra_register(plugin, name="myplugin", distribution=, version=)``
                       registers a plugin object (module or instance with hookimpls) for one
                       test; returns its PluginInfo, and raises PluginError if its hooks fail.
                       A plugin already loaded from its entry point (your installed plugin's
                       module) is registered again under the given name and distribution.
``chakra_pipeline``    ``chakra_pipeline(spec, base_dir=None)`` validates and runs a pipeline
                       (a mapping or a YAML path) in-process; returns the summaries.
``chakra_cli``         ``chakra_cli("stats", path, "--json")`` runs the CLI in-process and
                       returns ``(exit_status, stdout, stderr)``.
``chakra_roundtrip``   ``chakra_roundtrip(traceset, tmp_dir)`` writes a set as .et files and
                       opens it again (what a backend sees after ``chakra convert``).
``chakra_edited_rank`` ``chakra_edited_rank(path, edit, out)`` writes ``path``'s nodes, changed by
                       ``edit(nodes)`` in their JSON form (``chakra jsonize``), to ``out`` as an
                       ``.et`` file, without validation: a bad input made as a user would.
``chakra_fake_dist``   ``chakra_fake_dist(dist, version, entry_points, sources)`` installs a fake
                       distribution with ``chakra`` entry points for one test; returns an
                       environment for running ``chakra`` as a subprocess.

Function:

``one_error(status, err)`` the one error line of a failed command's standard error (exit status 2;
                       ``chakra: warning:`` lines printed before it aside), asserted to be no
                       traceback nor internal error.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import shutil
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from chakra_core.base._errors import PluginError
from chakra_core.host import _plugins

__all__ = ["chakra_host", "chakra_isolated_host", "chakra_register", "chakra_pipeline", "chakra_cli",
           "chakra_roundtrip", "chakra_fake_dist", "one_error"]

#: how the CLI begins a warning line
_WARNING = "chakra: warning: "


def one_error(status: int, err: str) -> str:
    """The one error line of a failed command's standard error ``err`` (``status`` 2): the
    warnings printed before it aside, it must be one line, and no traceback nor internal error."""
    lines = [line for line in err.strip().splitlines() if not line.startswith(_WARNING)]
    assert status == 2 and len(lines) == 1, err
    assert "internal error" not in err and "Traceback" not in err, err
    return lines[0]


@contextlib.contextmanager
def _installed(host: _plugins.PluginHost) -> Iterator[_plugins.PluginHost]:
    saved = _plugins._HOST
    _plugins._HOST = host
    try:
        yield host
    finally:
        _plugins._HOST = saved


@pytest.fixture
def chakra_host() -> Iterator[_plugins.PluginHost]:
    """A fresh plugin host for this test, restored afterwards."""
    with _installed(_plugins.PluginHost()) as host:
        yield host


@pytest.fixture
def chakra_isolated_host() -> Iterator[_plugins.PluginHost]:
    """A fresh host with the core's built-ins only (no entry point loaded), restored afterwards."""
    with _installed(_plugins.PluginHost(entry_points=False)) as host:
        yield host


def _host(request: pytest.FixtureRequest) -> _plugins.PluginHost:
    """This test's host: the isolated one when the test asks for it, else ``chakra_host``."""
    isolated = "chakra_isolated_host" in request.fixturenames
    return request.getfixturevalue("chakra_isolated_host" if isolated else "chakra_host")


@pytest.fixture
def chakra_register(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Register plugin objects into this test's host: ``chakra_register(obj, name="x")``."""
    host = _host(request)

    def register(obj: Any, name: str | None = None, distribution: str = "<test>",
                 version: str = "0") -> _plugins.PluginInfo:
        loaded = host.plugin_info(obj)
        if loaded is not None:
            host.remove_plugin(loaded.key)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", _plugins.PluginWarning)  # reported below, as an error
            label = name or str(getattr(obj, "__name__", type(obj).__name__))
            info = host.add_plugin(obj, label, distribution, version)
        if info.error:
            raise PluginError(f"plugin {info.name!r} failed to register: {info.error}")
        return info

    return register


@pytest.fixture
def chakra_pipeline(request: pytest.FixtureRequest) -> Callable[..., dict]:
    """Run a pipeline in-process with this test's host."""
    from chakra_core.pipeline._pipeline import run_pipeline

    host = _host(request)

    def run(spec, base_dir=None) -> dict:
        return run_pipeline(spec, host=host, base_dir=base_dir)

    return run


@pytest.fixture
def chakra_cli(request: pytest.FixtureRequest) -> Callable[..., tuple[int, str, str]]:
    """Run ``chakra ARGS...`` in-process: ``(status, stdout, stderr)``."""
    from chakra_core.cli.main import main

    _host(request)

    def run(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main([str(a) for a in args])
            except SystemExit as e:  # argparse usage errors
                status = int(e.code or 0)
        return status, out.getvalue(), err.getvalue()

    return run


@pytest.fixture
def chakra_roundtrip() -> Callable[..., Any]:
    """Write a TraceSet to ``.et`` files under a directory and open it again."""
    from chakra_core.trace._traceset import open_traceset

    def roundtrip(traces, directory) -> Any:
        paths = traces.write(Path(directory) / "trace")
        return open_traceset([str(p) for p in paths])

    return roundtrip


@pytest.fixture
def chakra_edited_rank(tmp_path: Path) -> Callable[..., Path]:
    """Edit one ``.et`` file through its JSON form: ``chakra_edited_rank(path, edit, out)`` writes
    to ``out`` the nodes of ``path`` after ``edit(nodes)`` (the JSON nodes of ``chakra jsonize``,
    changed in place), converted back without validation (a bad input made as a user would)."""
    from chakra_core.cli.main import main

    def edited(path: str | os.PathLike, edit: Callable[[list[dict[str, Any]]], Any],
               out: str | os.PathLike) -> Path:
        work = Path(tempfile.mkdtemp(dir=tmp_path))
        if main(["-q", "jsonize", str(path), "-o", str(work / "rank.json")]) != 0:
            raise RuntimeError(f"chakra jsonize {path} failed")
        data = json.loads((work / "rank.json").read_text())
        edit(data["nodes"])
        (work / "rank.json").write_text(json.dumps(data))
        if main(["-q", "convert", str(work / "rank.json"), "-o", f"{work / 'et'}/", "--no-validate"]) != 0:
            raise RuntimeError(f"chakra convert of the edited {path} failed")
        (only,) = (work / "et").glob("*.et")
        shutil.copyfile(only, out)
        return Path(out)

    return edited


@pytest.fixture
def chakra_fake_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., dict[str, str]]]:
    """Install a fake distribution for one test, the way pip leaves one: a ``*.dist-info`` folder
    (METADATA and the ``chakra`` entry points) and its modules, in a folder put on ``sys.path``.

    ``chakra_fake_dist("chakra-x", "1.0", {"x": "x_plugin"}, {"x_plugin": SOURCE})`` returns an
    environment whose ``PYTHONPATH`` finds it, for running ``chakra`` as a subprocess.  Create the
    host (``chakra_host``, :func:`~chakra_core.get_host`) after installing.
    """
    site = tmp_path / "fake-site"
    site.mkdir(exist_ok=True)
    monkeypatch.syspath_prepend(str(site))
    modules: list[str] = []

    def install(dist: str, version: str, entry_points: Mapping[str, str],
                sources: Mapping[str, str]) -> dict[str, str]:
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
        (info / "entry_points.txt").write_text(f"[chakra]\n{lines}")
        for name, src in sources.items():
            (site / f"{name}.py").write_text(textwrap.dedent(src))
            modules.append(name)
        importlib.invalidate_caches()
        return dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))

    yield install
    for name in modules:
        sys.modules.pop(name, None)
