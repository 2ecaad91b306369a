"""Hostile plugins: one that sleeps, prints, calls ``sys.exit(3)`` or raises ``KeyboardInterrupt``,
at import or in a hook, never corrupts ``--json`` output, never ends the CLI silently and is
always named.  Each plugin is a fake installed distribution on ``PYTHONPATH``; the CLI runs as a
subprocess, as a user would run it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: what the plugin does, as Python statements
ACTIONS = {
    "sleep": "import time; time.sleep(1.5)",
    "print": "print('hostile output')",
    "exit": "import sys; sys.exit(3)",
    "interrupt": "raise KeyboardInterrupt",
}
#: where it does it: at import, in its registration hook, in the detection hook
PLACES = {
    "import": "{action}\n",
    "register": "@hookimpl\ndef chakra_register_transforms(register):\n    {action}\n",
    "detect": "@hookimpl(tryfirst=True)\ndef chakra_detect_format(paths):\n    {action}\n",
}
LABEL = "plugin 'hostile' (chakra-hostile 6.6.6)"


@pytest.fixture
def hostile(chakra_fake_dist):
    """``hostile(action, place, *args)``: install the hostile plugin and run ``chakra *args``."""

    def run(action: str, place: str, *args: str) -> subprocess.CompletedProcess:
        src = ("from chakra_core import hookimpl\n\n"
               "@hookimpl\ndef chakra_register_backends(register):\n"
               "    register('hostile_backend', 'json:JSONDecoder')\n\n"
               + PLACES[place].format(action=ACTIONS[action]))
        env = chakra_fake_dist("chakra-hostile", "6.6.6", {"hostile": "hostile_plugin"}, {"hostile_plugin": src})
        env["CHAKRA_PLUGIN_SLOW_SECONDS"] = "0.3"
        env.pop("CHAKRA_STRICT_PLUGINS", None)
        return subprocess.run([sys.executable, "-m", "chakra_core.cli.main", *args], capture_output=True,
                              text=True, env=env, timeout=60)

    return run


@pytest.fixture
def job(tmp_path, dp_set):
    dp_set.write(tmp_path / "job" / "trace")
    return str(tmp_path / "job")




@pytest.mark.parametrize("place", ["import", "register"])
def test_a_slow_plugin_is_named_while_loading_continues(hostile, job, place):
    r = hostile("sleep", place, "stats", job, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["per_rank"][0]["rank"] == 0
    assert f"chakra: warning: {LABEL} is still loading after 0.3 s" in r.stderr


@pytest.mark.parametrize("place", ["import", "register", "detect"])
def test_prints_go_to_stderr(hostile, job, place):
    r = hostile("print", place, "stats", job, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["per_rank"][1]["rank"] == 1  # stdout is only the JSON
    assert "hostile output" in r.stderr


@pytest.mark.parametrize("place", ["import", "register"])
def test_exit_while_loading_fails_that_plugin_only(hostile, place):
    r = hostile("exit", place, "plugins", "--json")
    assert r.returncode == 0, r.stderr
    rows = {p["name"]: p for p in json.loads(r.stdout)["plugins"]}
    assert rows["hostile"]["error"] == "PluginExit: plugin code called sys.exit(3)"
    assert rows["simpy"]["error"] is None and rows["text"]["registered"] == {"format": ["text"]}
    r = hostile("exit", place, "plugins")
    assert r.returncode == 0 and "hostile" in r.stdout and "FAILED: PluginExit" in r.stdout


def test_exit_in_a_hook_is_a_named_warning(hostile, job):
    r = hostile("exit", "detect", "stats", job, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["per_rank"][0]["rank"] == 0  # the other detectors still answered
    assert (f"chakra: warning: {LABEL} failed in chakra_detect_format: PluginExit: plugin code called "
            f"sys.exit(3); ignored") in r.stderr


@pytest.mark.parametrize("place,stage", [("import", "import"), ("register", "chakra_register_transforms"),
                                         ("detect", "chakra_detect_format")])
def test_an_interrupt_ends_with_130_naming_the_plugin(hostile, job, place, stage):
    r = hostile("interrupt", place, "stats", job, "--json")
    assert r.returncode == 130 and r.stdout == ""
    assert r.stderr == f"chakra: interrupted in {LABEL} during {stage}\n"
