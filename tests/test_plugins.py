"""Plugin loading: isolation of broken plugins, strict mode, env switches, duplicates, lazy
factories with install hints, and ``chakra plugins``.

Entry points are faked with a ``*.dist-info`` folder on sys.path (``chakra_fake_dist``), the way
an installed distribution declares them.
"""

from __future__ import annotations

import json
import sys
import warnings

import pytest

from chakra_core.base._errors import ConfigError, PluginError
from chakra_core.hookspecs import hookimpl
from chakra_core.host import _plugins as P

GOOD = """
    from chakra_core.hookspecs import hookimpl

    @hookimpl
    def chakra_register_transforms(register):
        register("good_noop", "good_impl:Noop", description="does nothing")

    @hookimpl
    def chakra_register_backends(register):
        register("needs_missing", "good_impl:NeedsMissing", install_hint="pip install chakra-missing-extra")
"""
GOOD_IMPL = """
    from chakra_core.host._api import Transform, Backend

    class Noop(Transform):
        def apply(self, traces, options):
            return traces

    import_failed = None
    class _Lazy:
        pass

    def NeedsMissing():
        import module_that_is_not_installed_xyz  # noqa: F401
"""
BROKEN = """
    raise ImportError("No module named 'torch_that_is_missing'")
"""
CLASH = """
    from chakra_core.hookspecs import hookimpl

    @hookimpl
    def chakra_register_transforms(register):
        register("scale", lambda: None)
"""


@pytest.fixture
def fake_plugins(chakra_fake_dist, monkeypatch):
    """chakra-good and chakra-broken installed; returns the installer for more."""
    chakra_fake_dist("chakra-good", "1.2.3", {"good": "good_plugin"}, {"good_plugin": GOOD, "good_impl": GOOD_IMPL})
    chakra_fake_dist("chakra-broken", "0.1", {"broken": "broken_plugin"}, {"broken_plugin": BROKEN})
    for k in ("CHAKRA_LOAD_PLUGINS", "CHAKRA_DISABLE_PLUGINS", "CHAKRA_STRICT_PLUGINS", "CHAKRA_TRACE_PLUGINS"):
        monkeypatch.delenv(k, raising=False)
    P.reset_host()
    yield chakra_fake_dist
    P.reset_host()


def test_broken_plugin_warns_once_and_the_rest_works(fake_plugins):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        host = P.PluginHost()
    msgs = [str(x.message) for x in w if issubclass(x.category, P.PluginWarning)]
    assert len(msgs) == 1 and "'broken'" in msgs[0] and "chakra-broken" in msgs[0]
    assert "good_noop" in host.registry.names("transform")
    good = next(p for p in host.plugins if p.name == "good")
    assert (good.distribution, good.version, good.registered["transform"]) == ("chakra-good", "1.2.3", ["good_noop"])
    assert [p.name for p in host.failed] == ["broken"]


def test_strict_mode_raises(fake_plugins, monkeypatch):
    with pytest.raises(PluginError, match="broken"):
        P.PluginHost(strict=True)
    monkeypatch.setenv("CHAKRA_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="broken"):
        P.PluginHost()


def test_load_only_and_disable(fake_plugins, monkeypatch):
    monkeypatch.setenv("CHAKRA_LOAD_PLUGINS", "good")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        host = P.PluginHost()
    assert [p.name for p in host.plugins if p.distribution != "chakra-core"] == ["good"]  # nothing else
    monkeypatch.delenv("CHAKRA_LOAD_PLUGINS")
    monkeypatch.setenv("CHAKRA_DISABLE_PLUGINS", "chakra-broken,good")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        host = P.PluginHost()
    assert not [p.name for p in host.plugins if p.name in ("good", "broken")]


def test_trace_switch(fake_plugins, monkeypatch, capsys):
    monkeypatch.setenv("CHAKRA_TRACE_PLUGINS", "1")
    monkeypatch.setenv("CHAKRA_LOAD_PLUGINS", "good")
    host = P.PluginHost()
    host.detect_format(["x.unknown"])
    err = capsys.readouterr().err
    assert "good registers transform 'good_noop'" in err and "chakra_detect_format" in err


def test_a_clash_disables_nothing_and_the_bare_name_is_ambiguous(fake_plugins, monkeypatch):
    fake_plugins("chakra-clash", "9", {"clash": "clash_plugin"}, {"clash_plugin": CLASH})
    monkeypatch.delenv("CHAKRA_PREFER", raising=False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        host = P.PluginHost()
    assert not [x for x in w if "clash" in str(x.message)]
    clash = next(p for p in host.plugins if p.name == "clash")
    assert clash.error is None and clash.registered == {"transform": ["scale"]}
    with pytest.raises(PluginError, match="'scale' is ambiguous: registered as chakra-core:scale and chakra-clash:scale"):
        host.registry.entry("transform", "scale")
    core = host.registry.entry("transform", "chakra-core:scale")
    assert (core.distribution, core.name, core.qualified_name) == ("chakra-core", "scale", "chakra-core:scale")
    assert host.registry.entry("transform", "chakra_clash:scale").version == "9"  # names compare as pip does
    monkeypatch.setenv("CHAKRA_PREFER", "scale=chakra-clash")
    assert host.registry.entry("transform", "scale").distribution == "chakra-clash"
    assert host.registry.entry("transform", "scale", prefer={"scale": "chakra-core"}).distribution == "chakra-core"
    monkeypatch.setenv("CHAKRA_PREFER", "scale=chakra-good")
    with pytest.raises(ConfigError, match="picks 'chakra-good' for transform 'scale', which it does not register"):
        host.registry.entry("transform", "scale")


def test_one_distribution_registers_a_name_once(chakra_host):
    reg = chakra_host.registry.register_callback("transform", "dist", "1", "p")
    reg("twice", lambda: None)
    with pytest.raises(PluginError, match="'twice' is registered twice by dist"):
        reg("twice", lambda: None)


def test_lazy_factory_and_install_hint(fake_plugins):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        host = P.PluginHost()
    assert "good_impl" not in sys.modules  # registration imported nothing heavy
    host.registry.get("transform", "good_noop")
    assert "good_impl" in sys.modules
    with pytest.raises(PluginError, match="pip install chakra-missing-extra"):
        host.registry.get("backend", "needs_missing")


def test_unknown_name_suggests(fake_plugins):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        host = P.PluginHost()
    with pytest.raises(PluginError, match=r"did you mean 'scale'\?.*installed: .*\bgood_noop,.* scale\b"):
        host.registry.get("transform", "scal")


@pytest.mark.filterwarnings("ignore::chakra_core.host._plugins.PluginWarning")
def test_chakra_plugins_lists_failures(fake_plugins, chakra_cli):
    status, out, _ = chakra_cli("plugins", "--json")
    doc = json.loads(out)
    assert status == 0
    assert [p["name"] for p in doc["failed"]] == ["broken"]
    assert "torch_that_is_missing" in doc["failed"][0]["error"]
    names = {p["name"]: p for p in doc["plugins"]}
    assert names["formats"]["registered"] == {"format": ["et", "json"]}
    status, out, _ = chakra_cli("plugins")
    assert "FAILED" in out and "good_noop" in out


def test_register_fixture_adds_plugin_for_one_test(chakra_register, chakra_host):
    class Plug:
        @hookimpl
        def chakra_register_transforms(self, register):
            register("only_in_this_test", lambda: None)

    info = chakra_register(Plug(), name="plug")
    assert info.registered == {"transform": ["only_in_this_test"]}
    assert "only_in_this_test" in chakra_host.registry.names("transform")


def test_help_imports_no_plugin():
    import subprocess

    code = ("import sys; from chakra_core.cli.main import main; "
            "import contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['--help']) if False else None\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "bad = [m for m in sys.modules if m.startswith(('chakra_core.host._plugins', 'pluggy', 'chakra_text', "
            "'chakra_pytorch', 'chakra_simpy', 'chakra_astrasim', 'torch', 'simpy', 'google'))]\n"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_loading_plugins_imports_no_implementation():
    """Listing plugins imports each plugin's hook module only: no backend, format or heavy library."""
    import subprocess

    code = ("import json, sys, warnings; warnings.simplefilter('ignore')\n"
            "from chakra_core.host._plugins import PluginHost\n"
            "host = PluginHost()\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('chakra_text', 'chakra_pytorch', "
            "'chakra_simpy', 'chakra_astrasim', 'chakra_astrasim_runner', 'simpy', 'torch', 'ijson', 'orjson', "
            "'numpy'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    loaded = json.loads(out[-1])
    allowed = {"chakra_text", "chakra_text.plugin", "chakra_text.modes", "chakra_pytorch", "chakra_pytorch.plugin",
               "chakra_simpy", "chakra_simpy.plugin", "chakra_astrasim", "chakra_astrasim.plugin",
               "chakra_astrasim_runner", "chakra_astrasim_runner.plugin"}
    assert set(loaded) <= allowed, sorted(set(loaded) - allowed)


def test_plugins_options_lists_declared_options(chakra_cli):
    status, out, _ = chakra_cli("plugins", "--options", "scale", "--json")
    impl = json.loads(out)["implementations"]
    assert status == 0 and [i["name"] for i in impl] == ["scale"]
    opts = impl[0]["options"]
    assert opts["compute_speedup"] == {"type": "float", "default": 1.0, "help": "divide compute durations by this",
                                       "unit": "", "choices": [], "required": False}
    status, out, _ = chakra_cli("plugins", "--options", "et")
    assert status == 0 and "prefix (str, default 'trace'): file-name prefix" in out


def test_careless_plugin_authors_get_named_one_line_errors(chakra_register, chakra_cli, tmp_path):
    """Mistakes of a plugin author: a bad Option type, a wrong factory path, a backend without a
    kind, a crash inside the implementation."""
    from chakra_core.base._options import Option
    from chakra_core.host._api import Backend, Transform

    class BadOptions(Transform):
        options = {"level": Option("integer", 3), "count": Option("int", "three")}

        def apply(self, traces, options):
            return traces

    class NoKind(Backend):
        def run(self, traces, options, output):
            raise AssertionError

    class Crash(Transform):
        def apply(self, traces, options):
            raise ValueError("plugin bug")

    class Plug:
        @hookimpl
        def chakra_register_backends(self, register):
            register("nokind", NoKind)
            register("badpath", "no_such_module_abc:Thing")

        @hookimpl
        def chakra_register_transforms(self, register):
            register("crash", Crash)
            register("badopts", BadOptions)

    chakra_register(Plug(), name="careless")
    status, _, err = chakra_cli("export", tmp_path, "--to", "nokind", "-o", tmp_path / "o")
    assert status == 2 and "must set kind" in err
    status, out, _ = chakra_cli("plugins", "--options", "badpath")
    assert status == 0 and "registered the import path 'no_such_module_abc:Thing', which cannot be imported" in out
    (tmp_path / "p.yaml").write_text("input: {paths: [x.et]}\ntransforms: [{name: crash}]\nbackends: [{name: et}]\n")
    from chakra_core.io._etio import write_et
    from chakra_core.io._schema import Node

    write_et(tmp_path / "x.et", None, [Node(id=1, type=4)])
    status, _, err = chakra_cli("run", tmp_path / "p.yaml")
    assert status == 1 and err.count("\n") == 1 and "internal error" in err and "ValueError: plugin bug" in err
    (tmp_path / "bad.yaml").write_text("input: {paths: [x.et]}\ntransforms: [{name: badopts}]\nbackends: [{name: et}]\n")
    status, _, err = chakra_cli("run", tmp_path / "bad.yaml")
    assert status == 2 and err.count("\n") == 1
    assert "transform 'badopts': option 'level' is declared badly: type 'integer' is not one of int, float" in err
    del BadOptions.options["level"]
    status, _, err = chakra_cli("run", tmp_path / "bad.yaml")
    assert status == 2 and "option 'count' is declared badly: default 'three' is not of type int" in err


def test_registration_refuses_malformed_names_and_paths(chakra_host):
    reg = chakra_host.registry.register_callback("transform", "dist")
    with pytest.raises(PluginError, match="is not a name"):
        reg("Bad Name!", lambda: None)
    with pytest.raises(PluginError, match="is not 'package.module:Attribute'"):
        reg("ok", "impl.T")


def test_dir_shows_lazy_names_without_importing_them():
    import subprocess

    code = ("import json, sys, importlib\n"
            "out = {}\n"
            "for name in ('chakra_core', 'chakra_text', 'chakra_pytorch', 'chakra_astrasim', 'chakra_astrasim_runner'):\n"
            "    m = importlib.import_module(name)\n"
            "    before = set(sys.modules)\n"
            "    out[name] = [sorted(set(m.__all__) - set(dir(m))), sorted(set(sys.modules) - before)]\n"
            "print(json.dumps(out))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {name: [[], []] for name in ("chakra_core", "chakra_text", "chakra_pytorch",
                                                           "chakra_astrasim", "chakra_astrasim_runner")}


def test_register_fixture_takes_an_installed_plugin(chakra_register, chakra_host):
    import chakra_text.plugin as installed

    with pytest.raises(PluginError, match=r"^cannot add plugin 'again' \(<in-process> 0\): this object is already "
                                          r"registered as plugin 'text' \(chakra-text [\d.]+\); remove_plugin\('text'\) first$"):
        chakra_host.add_plugin(installed, "again")
    info = chakra_register(installed, name="text-dev", distribution="chakra-text-dev", version="9")
    assert info.registered == {"format": ["text"]}
    entry = chakra_host.registry.entry("format", "text")  # registered once: no clash with itself
    assert (entry.qualified_name, entry.version) == ("chakra-text-dev:text", "9")


def test_isolated_host_has_the_builtins_only(chakra_isolated_host, chakra_register):
    import chakra_text.plugin as installed

    assert [p.distribution for p in chakra_isolated_host.plugins] == ["chakra-core"] * 4
    assert chakra_isolated_host.registry.names("format") == ["et", "json"]
    chakra_register(installed, name="text")
    assert chakra_isolated_host.registry.entry("format", "text").distribution == "<test>"
