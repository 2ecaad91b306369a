"""The installed entry points kept between commands (chakra_core/host/_entrypoints.py): the same
answer as importlib.metadata's, asked again whenever an installed distribution changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata as md
from pathlib import Path

import pytest

from chakra_core.host import _entrypoints as ep


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder for the test."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    monkeypatch.delenv("CHAKRA_NO_PLUGIN_CACHE", raising=False)
    return folder


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The groups importlib.metadata is asked about, in order."""
    out: list[str] = []
    real = ep._ask

    def counting(group: str, dist: str):
        out.append(group)
        return real(group, dist)
    monkeypatch.setattr(ep, "_ask", counting)
    return out


def _metadata_answer(group: str) -> list[tuple[str, str, str, str]]:
    return sorted((e.name, e.value, e.dist.metadata["Name"], e.dist.metadata["Version"])
                  for e in md.entry_points(group=group))


def _site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return site


def _install(site: Path, dist: str, version: str, entry_points: dict[str, str]) -> Path:
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[chakra]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    return info


def _found(group: str = "chakra") -> list[tuple[str, str, str, str]]:
    return [(e.name, e.value, e.distribution, e.version) for e in ep.installed_entry_points(group, "chakra-core")[0]]


def test_the_answer_is_importlib_metadata_s_and_kept(cache: Path, asked: list[str]) -> None:
    first = _found()
    assert first == _metadata_answer("chakra")
    assert {"simpy", "pytorch", "text"} <= {name for name, *_ in first}  # the project's own plugins
    assert ep.installed_entry_points("chakra", "chakra-core")[1] == md.version("chakra-core")
    assert _found() == first
    assert asked == ["chakra"]  # the second answer was the kept one
    kept = json.loads(next((cache / "chakra").glob("entry-points-*.json")).read_text())
    assert [e[0] for e in kept["entry_points"]] == [name for name, *_ in first]


def test_installing_changing_and_removing_a_distribution_is_seen(
        cache: Path, asked: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = _site(tmp_path, monkeypatch)
    assert "x" not in {name for name, *_ in _found()}
    info = _install(site, "chakra-x", "1.0", {"x": "x_plugin"})
    assert ("x", "x_plugin", "chakra-x", "1.0") in _found()
    _install(site, "chakra-x", "1.0", {"x": "x_plugin:other"})  # re-installed at once: same clock tick, new content
    assert ("x", "x_plugin:other", "chakra-x", "1.0") in _found()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: chakra-x\nVersion: 1.1\n")
    assert ("x", "x_plugin:other", "chakra-x", "1.1") in _found()
    for f in info.iterdir():
        f.unlink()
    info.rmdir()
    assert "x" not in {name for name, *_ in _found()}
    # every change asked again, but the last: the state before the install, whose answer is kept
    assert len(asked) == 4
    assert _found() == _metadata_answer("chakra")
    assert len(asked) == 4  # and nothing else did


def test_two_sets_of_folders_in_turns_keep_an_answer_each(
        cache: Path, asked: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout whose ``*.egg-info`` is on sys.path in one command (``python -m`` in it) and
    not in the next (the ``chakra`` script): each asks once, then both are answered from the
    cache; at most the latest four answers are kept."""
    site = tmp_path / "checkout"
    site.mkdir()
    _install(site, "chakra-x", "1.0", {"x": "x_plugin"})
    plain = list(sys.path)
    for _ in range(3):
        monkeypatch.setattr(sys, "path", [str(site), *plain])
        assert ("x", "x_plugin", "chakra-x", "1.0") in _found()
        monkeypatch.setattr(sys, "path", plain)
        assert _found() == _metadata_answer("chakra")
    assert len(asked) == 2
    assert len(list((cache / "chakra").glob("entry-points-*.json"))) == 2
    for k in range(5):  # five more states: the oldest answers go
        _install(site, "chakra-x", f"2.{k}", {"x": "x_plugin"})
        monkeypatch.setattr(sys, "path", [str(site), *plain])
        _found()
    assert len(list((cache / "chakra").glob("entry-points-*.json"))) == ep._KEPT


def test_outputs_written_beside_the_distributions_keep_the_answer(
        cache: Path, asked: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = _site(tmp_path, monkeypatch)
    _install(site, "chakra-x", "1.0", {"x": "x_plugin"})
    _found()
    (site / "out.0.et").write_bytes(b"\x00")
    (site / "results").mkdir()
    _found()
    assert len(asked) == 1


def test_a_broken_cache_file_is_asked_anew_and_replaced(cache: Path, asked: list[str]) -> None:
    first = _found()
    (path,) = (cache / "chakra").glob("entry-points-*.json")
    for broken in ("", "{not json", json.dumps({"format": 1}), json.dumps([1, 2]),
                   json.dumps({"format": 1, "fingerprint": ep._fingerprint(), "version": "1", "entry_points": [[1]]})):
        path.write_text(broken)
        assert _found() == first
        assert json.loads(path.read_text())["entry_points"]  # rewritten whole
    assert len(asked) == 6


def test_a_cache_that_cannot_be_written_costs_only_the_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert _found() == _metadata_answer("chakra")
    assert _found() == _metadata_answer("chakra")


def test_the_switch_turns_the_cache_off(cache: Path, asked: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAKRA_NO_PLUGIN_CACHE", "Yes")  # any case, as the other CHAKRA_* switches
    _found()
    _found()
    assert len(asked) == 2
    assert not cache.exists()


def test_path_objects_and_folders_without_distributions(
        cache: Path, asked: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pathlib.Path on sys.path is a folder like any other; a folder holding no distribution
    (the current one, a source checkout) does not change the answer, so leaving it keeps it."""
    site = tmp_path / "pathsite"
    site.mkdir()
    monkeypatch.syspath_prepend(str(tmp_path / "unused"))
    monkeypatch.setattr(sys, "path", [site, *sys.path])
    _install(site, "chakra-y", "2.0", {"y": "y_plugin"})
    assert ("y", "y_plugin", "chakra-y", "2.0") in _found()
    for empty in ("a", "b"):
        (tmp_path / empty).mkdir()
        (tmp_path / empty / "out.json").write_text("{}")
        monkeypatch.chdir(tmp_path / empty)
        monkeypatch.setattr(sys, "path", ["", *sys.path])
        assert ("y", "y_plugin", "chakra-y", "2.0") in _found()
    assert len(asked) == 1


def test_egg_folders_and_upper_case_names_are_watched(
        cache: Path, asked: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    egg = tmp_path / "chakra_z-1.0-py3.11.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(egg))
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: chakra-z\nVersion: 1.0\n")
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[chakra]\nz = z_plugin\n")
    assert _found() == _metadata_answer("chakra")
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[chakra]\nz = z_other\n")
    assert ("z", "z_other", "chakra-z", "1.0") in _found()
    site = _site(tmp_path, monkeypatch)
    (site / "Chakra_W-1.0.DIST-INFO").mkdir()
    (site / "Chakra_W-1.0.DIST-INFO" / "METADATA").write_text("Metadata-Version: 2.1\nName: chakra-w\nVersion: 1.0\n")
    (site / "Chakra_W-1.0.DIST-INFO" / "entry_points.txt").write_text("[chakra]\nw = w_plugin\n")
    assert _found() == _metadata_answer("chakra")
    assert len(asked) == 3


@pytest.mark.parametrize("value", ["os.path:join", "json", "os.path", "os.path:join [extra1, extra2]",
                                   "json [a] [b]",
                                   "collections:OrderedDict.fromkeys", "json :  dumps"])
def test_load_is_entry_point_load(value: str) -> None:
    found = ep.FoundEntryPoint("n", value, "d", "1")
    assert found.load() == md.EntryPoint("n", value, "chakra").load()


@pytest.mark.parametrize("value", ["", ":dumps", "json:", "json dumps", "json:dumps:x"])
def test_a_value_that_is_no_object_reference_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="is not an object reference"):
        ep.FoundEntryPoint("n", value, "d", "1").load()
    with pytest.raises((ValueError, AttributeError)):  # importlib.metadata refuses it too
        md.EntryPoint("n", value, "chakra").load()


def test_a_command_does_not_import_importlib_metadata_once_kept(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    env.pop("CHAKRA_NO_PLUGIN_CACHE", None)
    code = ("import sys; before = 'importlib.metadata' in sys.modules; from chakra_core import get_host; get_host(); "
            "print(before, 'importlib.metadata' in sys.modules, len(get_host().plugins))")
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
            for _ in range(2)]
    assert runs[0][1] == "True"  # asked, the first time
    assert runs[1][1] == runs[1][0]  # the second time: not imported by the host (a site hook may have already)
    assert runs[0][2] == runs[1][2] and int(runs[1][2]) >= 10  # the same plugins, the project's all found


def test_the_test_session_keeps_its_entry_points_in_a_folder_of_its_own(tmp_path_factory):
    # the root conftest.py points XDG_CACHE_HOME at the session's temporary folder, for the
    # children the tests start too: a command run by a test leaves the user's cache alone
    session = Path(os.environ["XDG_CACHE_HOME"]).resolve()
    assert session.is_relative_to(tmp_path_factory.getbasetemp().resolve())
    for kept in (session / "chakra").glob("entry-points-*.json"):
        kept.unlink()  # the session's own, written by tests before this one
    env = {k: v for k, v in os.environ.items() if k != "CHAKRA_NO_PLUGIN_CACHE"}
    subprocess.run([sys.executable, "-m", "chakra_core.cli.main", "plugins"], env=env, check=True,
                   capture_output=True)
    assert list((session / "chakra").glob("entry-points-*.json"))
